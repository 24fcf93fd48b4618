//! The registry of diagnostic codes: every code a diagnostic of any `atl` crate carries,
//! with its title, what to do about it and its group. `docs/errors.md` is rendered from
//! this table by [`errors_markdown`] (a test keeps the file equal to it, and another test
//! scans the workspace's sources so that every code raised is registered and every
//! registered code is raised or retired), and `atl explain CODE` prints [`explain`].
//!
//! Adding a code: add an entry to [`CODES`] at its place in increasing order, then
//! regenerate the document with `ATL_BLESS=1 cargo test -p atl-lang --test error_codes`.
//! Codes are never reused: a code no diagnostic raises any more stays here, marked
//! retired.

/// One diagnostic code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorCode {
    /// The code, such as `E0903`.
    pub code: &'static str,
    /// What the problem is, in one line (the "meaning" column of `docs/errors.md`).
    pub title: &'static str,
    /// What to do about it (the "what to do" column); empty when the title says enough.
    pub help: &'static str,
    /// Set for a code no diagnostic raises any more. Its entry stays so that the code is
    /// never reused for another problem.
    pub retired: bool,
}

impl ErrorCode {
    /// The group the code belongs to (the longest prefix of [`GROUPS`] it starts with).
    pub fn group(&self) -> &'static ErrorGroup {
        GROUPS
            .iter()
            .filter(|group| self.code.starts_with(group.prefix))
            .max_by_key(|group| group.prefix.len())
            .expect("every registered code starts with a group prefix")
    }
}

/// A range of codes that belong to one stage, named by a prefix of the code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorGroup {
    /// The prefix every code of the group starts with, such as `E04` or `E090`.
    pub prefix: &'static str,
    /// What the group's codes are about.
    pub title: &'static str,
}

impl ErrorGroup {
    /// The prefix written as a pattern of codes: `E04xx`, `E090x`.
    pub fn pattern(&self) -> String {
        format!("{:x<5}", self.prefix)
    }
}

/// The groups of codes. `E09xx` is split by tens because its codes belong to several
/// stages after the front end (the gate, lowering, the loop-IR interpreter, the C kernel).
pub static GROUPS: &[ErrorGroup] = &[
    group("E01", "reading and lexing"),
    group("E02", "parsing"),
    group("E03", "names and declarations"),
    group("E04", "shapes"),
    group("E05", "evaluation"),
    group(
        "E06",
        "sizes, inputs and definitions chosen on the command line",
    ),
    group("E07", "rule files and user rules (`rule` items)"),
    group("E08", "derivation steps"),
    group(
        "E090",
        "pad types and access safety (the gate before lowering)",
    ),
    group("E091", "lowering"),
    group("E092", "the loop-IR interpreter"),
    group(
        "E093",
        "the C kernel (its name and files, compiling, loading, running and timing it, its 64-bit index arithmetic)",
    ),
    group(
        "E094",
        "the textual loop IR (`atl validate --ir`, `atl run --ir`)",
    ),
    group(
        "E095",
        "translation validation of a kernel before it is emitted, run or timed",
    ),
    group("E096", "the autoscheduler (`atl schedule`)"),
    group("E10", "the certificate checker (`atl verify`)"),
    group("E11", "layouts (`atl layout`)"),
];

const fn group(prefix: &'static str, title: &'static str) -> ErrorGroup {
    ErrorGroup { prefix, title }
}

const fn active(code: &'static str, title: &'static str, help: &'static str) -> ErrorCode {
    ErrorCode {
        code,
        title,
        help,
        retired: false,
    }
}

const fn retired(code: &'static str, title: &'static str, help: &'static str) -> ErrorCode {
    ErrorCode {
        code,
        title,
        help,
        retired: true,
    }
}

/// Every code, in increasing order (a test checks it).
pub static CODES: &[ErrorCode] = &[
    active("E0100", "the file is not valid UTF-8", "save it as UTF-8"),
    active(
        "E0101",
        "a character that is not part of ATL's syntax",
        "remove it; operators are ASCII or the aliases `⊞ Σ · ≤ ≥ ≠`; `#` starts a comment",
    ),
    active(
        "E0201",
        "unexpected token (the note lists what was expected)",
        "fix the syntax at the marked place",
    ),
    active(
        "E0202",
        "unclosed delimiter (`{` of a derivation)",
        "close it",
    ),
    active(
        "E0203",
        "a literal that does not fit (integer beyond 64 bits)",
        "use a smaller constant",
    ),
    active(
        "E0204",
        "text outside any item",
        "every line belongs to a `size`, `assume`, `input`, `def`, `derive` or `rule`",
    ),
    active(
        "E0205",
        "a derivation step that does not start with a command word",
        "steps are `rw`, `rw<-`, `unfold`, `inline`, `simpl`, `simpl_guard`, `check` or a directive",
    ),
    active(
        "E0206",
        "wrong arguments for a step (`unfold` without a name, `simpl` with arguments, …)",
        "see the step's form in the message",
    ),
    active(
        "E0207",
        "a directive argument that is not a name, an integer or a comma",
        "",
    ),
    active(
        "E0208",
        "a malformed `rw` option (`at`, `around`, `in`, `with`)",
        "`at N`, `around (PATTERN)`, `in [0, 1]`, `with k := 8`",
    ),
    active(
        "E0209",
        "a malformed `window` step",
        "`window NAME in LO..HI`, or one range per leading dimension: `window NAME in LO1..HI1, LO2..HI2`",
    ),
    active(
        "E0210",
        "a term nested more than 256 levels deep (operators, binders, `let`s, guards, parentheses, indices; counted on the syntax tree, and on the tokens before parsing)",
        "name intermediate results with separate `def`s, or write a long chain as a `sum`/`gen` over an index",
    ),
    active(
        "E0211",
        "a definition nested more than 256 levels deep once the definitions it uses are inlined (as lowering and `unfold` do)",
        "compute a long chain of definitions as fewer, flatter ones",
    ),
    active("E0301", "a name declared twice", "rename one"),
    retired(
        "E0302",
        "(retired: a size is a scalar value where one is expected, `1.0 / n`)",
        "",
    ),
    active(
        "E0303",
        "a tensor used as an index",
        "indices are built from sizes, binder variables and constants",
    ),
    retired(
        "E0304",
        "(retired: an index variable is a scalar value where one is expected, `x * x`, `float(i + 1)`)",
        "",
    ),
    active(
        "E0305",
        "unknown name (with a suggestion when one is close)",
        "declare or bind it",
    ),
    active(
        "E0306",
        "a size used as a binder",
        "pick another binder name",
    ),
    active(
        "E0307",
        "a binder that reuses the name of an input or definition",
        "pick another binder name",
    ),
    active(
        "E0308",
        "a metavariable (`?e`) outside a rule",
        "metavariables only appear in rule patterns",
    ),
    active(
        "E0309",
        "a definition used before it is defined (or recursively)",
        "move the definition up",
    ),
    active(
        "E0310",
        "`derive … from X` where X is not a definition",
        "derive from a `def` or another derivation",
    ),
    active(
        "E0311",
        "a call of something that is not a scalar function, or with the wrong number of arguments",
        "the scalar functions are sqrt(x), exp(x), log(x), abs(x), max(a, b), min(a, b) and select(a > b, x, y) (`atl explain E0311`)",
    ),
    active(
        "E0312",
        "an index array used where it cannot be: as a tensor or an index, in a shape, a range of values or an `assume`, in a value (`float(crd[p])`), or a load (`x[i]` in an index) of something that is not an index array",
        "read an index array's elements in indices, `sum` bounds and guards: `v[crd[p]]`, `sum p in pos[i]..pos[i + 1]: …`",
    ),
    active(
        "E0313",
        "a malformed index array declaration: not one-dimensional, no range of values, or `in`/`sorted` on a tensor input",
        "declare it as `input pos : int[n + 1] in 0..nnz + 1`, adding `sorted` when its values never decrease",
    ),
    active(
        "E0314",
        "a malformed sparse matrix declaration: an unknown storage format, not two dimensions, or an array that is not an input of the kind the format needs, declared above",
        "declare the arrays first, then `sparse A : [n, m] as csr(pos, crd, vals)` (formats: csr, csc, coo)",
    ),
    active(
        "E0315",
        "a storage layout that is not a dense permutation of the input's dimensions: a count of modes other than its rank, an extent other than the declared one, strides that leave gaps or overlap, or a layout on an index array",
        "give one mode per dimension with the declared extents, and strides that are the products of the extents stored after each (`layout (M, K):(1, M)` is column-major)",
    ),
    active(
        "E0401",
        "jagged tensor: a `gen` extent depends on a binder",
        "make range lengths functions of the sizes",
    ),
    active(
        "E0402",
        "a range with negative constant length (`5..2`)",
        "write `lo..hi` with `lo <= hi`",
    ),
    active(
        "E0403",
        "too many indices (indexing a scalar)",
        "remove an index",
    ),
    active(
        "E0404",
        "`+`/`-` on different shapes (both shapes shown)",
        "make the shapes agree",
    ),
    active(
        "E0405",
        "`*`/`/` on a tensor (they are scalar operations)",
        "index down to scalars or write a `gen`",
    ),
    active(
        "E0406",
        "`concat` of scalars or of tensors whose elements differ in shape",
        "",
    ),
    active(
        "E0407",
        "a reshape operator applied to a tensor of too low rank",
        "`transpose`/`flatten` need rank ≥ 2, the others rank ≥ 1",
    ),
    active(
        "E0408",
        "a reshape amount that depends on a binder",
        "amounts are built from sizes and constants",
    ),
    active(
        "E0409",
        "a negative reshape amount, or `split` by a non-positive amount",
        "",
    ),
    active(
        "E0410",
        "`trunc_l`/`trunc_r` dropping more elements than the dimension has",
        "",
    ),
    active(
        "E0411",
        "internal: no shape known for a name",
        "report it: this is a bug",
    ),
    active("E0412", "an input declared with a negative extent", ""),
    active(
        "E0413",
        "a `gen` range length, reshape amount or input extent that is not guaranteed to be in range (`>= 0`; `split` rows `>= 1`; a truncation at most the extent) for every size the declarations allow; guards and enclosing ranges do not count, because a shape is observed even where its value is not (the shape discipline, ARCHITECTURE.md)",
        "add an `assume` that bounds the sizes, or write the range so it cannot be negative",
    ),
    active(
        "E0414",
        "the `assume`s contradict each other or the sizes being at least 1 (every side condition would hold vacuously); a warning when the solver cannot decide",
        "remove or correct the contradicting `assume`",
    ),
    active(
        "E0415",
        "a scalar function applied to a tensor",
        "scalar functions apply to scalars: write the `gen`, as in `gen i < n: sqrt(x[i])`",
    ),
    active(
        "E0416",
        "a max-reduction of a tensor",
        "`max k < m: e` takes the largest of scalars: write the `gen` outside, as in `gen i < n: max k < m: x[i, k]`",
    ),
    active(
        "E0417",
        "a `gen` range or a reshape amount that reads an index array: shapes are fixed by the sizes",
        "iterate over stored positions with a `sum`: `sum p in pos[i]..pos[i + 1]: …`",
    ),
    active("E0501", "scalar division by zero during evaluation", ""),
    active(
        "E0502",
        "index arithmetic overflows 64 bits during evaluation",
        "use smaller sizes",
    ),
    active(
        "E0503",
        "a tensor would exceed the interpreter's element limit (checked before allocating)",
        "use smaller sizes",
    ),
    active(
        "E0504",
        "a reshape amount that is invalid at these sizes (negative, `split` by ≤ 0, truncating more than exists)",
        "choose sizes where the amounts make sense, or add an `assume`",
    ),
    active(
        "E0505",
        "shape mismatch at run time (only reachable by programs that bypassed the shape checker)",
        "report it",
    ),
    active(
        "E0506",
        "a name that cannot be evaluated (only reachable by programs that bypassed the resolver)",
        "report it",
    ),
    active(
        "E0507",
        "the interpreter computed a shape that differs from the static shape at these sizes (a disagreement between the interpreter and shape inference)",
        "report it: this is a bug",
    ),
    active(
        "E0508",
        "an extent of a static shape is negative at these sizes (e.g. `gen i < n - 5` at `n = 2`); the interpreter does not clamp it to an empty range",
        "choose sizes where every extent is non-negative, or add an `assume` that rules these sizes out",
    ),
    active(
        "E0509",
        "a loop would run more iterations, counted with the loops around it, than the interpreter's limit (checked before the loop starts)",
        "use smaller sizes",
    ),
    active("E0601", "a size without a value", "`--sizes n=…`"),
    active("E0602", "a size below 1", "sizes are integers ≥ 1"),
    active(
        "E0603",
        "an `assume` that is false at the given sizes",
        "choose sizes that satisfy it",
    ),
    active(
        "E0604",
        "an input without a value",
        "`--input f=random:SEED` or `--input f=PATH.npy`",
    ),
    active(
        "E0605",
        "an input whose shape differs from its declaration at these sizes",
        "",
    ),
    active(
        "E0606",
        "`--def NAME` names no definition, or the file has none",
        "the message lists the definitions",
    ),
    retired("E0607", "(retired: derivations are executed now)", ""),
    active(
        "E0608",
        "an input file that cannot be read: an `.npy` (format, element type, size), or a sparse matrix (`.mtx`, scipy `.npz`) that is malformed or not of the input's shape",
        "save float32/float64 in C order; a sparse matrix as CSR, CSC or COO (`scipy.sparse.save_npz`) or Matrix Market",
    ),
    active(
        "E0609",
        "work interrupted: an evaluation, validation or benchmark stopped by Ctrl-C in the REPL (or by a program's monitor)",
        "run it again at smaller sizes, or let it finish",
    ),
    active(
        "E0610",
        "an index array whose values break its declaration: not 32-bit integers, outside the declared range, or decreasing where it is `sorted`",
        "the message names the first bad element; a sparse matrix file is converted for you (`--input A=m.npz`)",
    ),
    active(
        "E0611",
        "a compiled kernel whose heap temporaries at these sizes exceed the memory available: the kernel would abort when an allocation fails",
        "run at smaller sizes, or schedule the stored stages (`compute_at`, `compute_inline`) so that less is kept",
    ),
    active(
        "E0701",
        "a malformed rule pattern (a plain name where a metavariable is needed, a substitution of a non-metavariable, …)",
        "write metavariables as `?name`",
    ),
    active(
        "E0702",
        "an `around` pattern of an unsupported form",
        "use a name, a `gen`/`sum` head or `?`",
    ),
    active(
        "E0703",
        "an indented line outside any rule",
        "rules start at column 0",
    ),
    active("E0704", "a rule defined twice", "rename one"),
    active(
        "E0705",
        "a malformed rule header (or a `rule` item without a name)",
        "`NAME: LHS => RHS` or `NAME(?k): LHS => RHS`; in a program file `rule NAME: LHS => RHS`",
    ),
    active(
        "E0706",
        "a rule without its equation comment",
        "add `# NAME: …` on the line above",
    ),
    active(
        "E0707",
        "a substitution on the left side of a rule",
        "substitutions only produce terms",
    ),
    active(
        "E0708",
        "a malformed side condition",
        "`if NAME: PRED` or `if NAME: shape(?v) = [?n, ..]`",
    ),
    active(
        "E0709",
        "a shape condition on a metavariable the rule does not use",
        "",
    ),
    active(
        "E0710",
        "a missing or unknown grade",
        "`grade: exact` or `grade: real`",
    ),
    active(
        "E0711",
        "a missing or malformed example",
        "`example: START => RESULT [with k := v]`",
    ),
    active("E0712", "an unknown line inside a rule", ""),
    active(
        "E0713",
        "a metavariable bound nowhere (right side or condition)",
        "bind it on the left, by a shape condition, or declare it a parameter",
    ),
    active(
        "E0714",
        "a parameter that occurs on both sides, or not at all",
        "",
    ),
    active(
        "E0715",
        "a user rule (`rule` item of a program file) with the name of a library rule",
        "rename it; `atl rules` lists the library",
    ),
    active(
        "E0716",
        "an example of a user rule does not apply, gives another result, or changes the values",
        "fix the example or the rule; the note says which",
    ),
    active(
        "E0717",
        "a user rule refuted by the bounded check: a random instance whose two sides differ (the notes give the instance, what it rewrites to and the sizes)",
        "fix the equation or add the side condition that excludes the instance",
    ),
    active(
        "E0718",
        "a user rule that could not be checked: no random instance of its left side was accepted",
        "loosen the pattern or the conditions; a rule is admitted only after random instances agreed",
    ),
    active(
        "E0719",
        "a malformed or repeated `status:` line",
        "`status: proved` or `status: checked -- REASON`",
    ),
    active(
        "E0801",
        "no rule with that name (with a suggestion)",
        "`atl rules` lists them",
    ),
    active(
        "E0802",
        "a rule used right-to-left whose right side is not a pattern",
        "use it left to right",
    ),
    active(
        "E0803",
        "a `with` that names no parameter, names a matched metavariable, or gives a binder a name already in use",
        "",
    ),
    active(
        "E0804",
        "an `in [PATH]` that leads nowhere",
        "paths are child numbers from the root",
    ),
    active("E0805", "an `around` pattern that matches nothing", ""),
    active(
        "E0806",
        "the rule matches nowhere (or fewer times than `at N`); a refused structural match is explained",
        "",
    ),
    active(
        "E0807",
        "a shape condition that cannot be evaluated at this site",
        "",
    ),
    active("E0808", "a shape condition that does not hold", ""),
    active("E0809", "a parameter without a value", "add `with k := …`"),
    active("E0810", "internal: an instantiation failed", "report it"),
    active(
        "E0811",
        "a side condition that is false at this site (goal, context, counterexample)",
        "choose another site or make the context imply it",
    ),
    active(
        "E0812",
        "a side condition the solver could not decide (never accepted)",
        "simplify, or add an `assume`",
    ),
    active(
        "E0813",
        "`unfold NAME` with no definition or no use of it; `unfold A as FORMAT` with a format `A` is not stored in; an unfold after which a definition reads two storages of one sparse matrix",
        "",
    ),
    active(
        "E0814",
        "`inline x` without a `let x`",
        "binder names are shown by `atl derive --trace`",
    ),
    active(
        "E0815",
        "a step or directive this version does not understand (see docs/directives.md)",
        "",
    ),
    active(
        "E0816",
        "a step that produced an ill-shaped program (a bug in a rule)",
        "report it",
    ),
    active(
        "E0817",
        "a step that changed the program's shape (a bug in a rule)",
        "report it",
    ),
    active("E0818", "`window x` without a `let x`", ""),
    active(
        "E0819",
        "a `window` that cannot apply: bounds out of scope, a length that depends on a loop variable, a scalar or fewer dimensions than ranges, or a use of the buffer other than a read of every windowed dimension by index",
        "",
    ),
    active(
        "E0820",
        "a malformed directive (`split i by 8 into io, ii`, `tile i, j by 64, 64`, `reorder a, b`, `fuse i, j into t`, `compute_at x at l`, `bound i to 2000`, …) or a split factor below 1",
        "",
    ),
    active(
        "E0821",
        "a directive names a loop variable that no loop binds",
        "names are as printed by `atl derive --trace`",
    ),
    active(
        "E0822",
        "`split` of a reduction (`sum` or `max`) loop that does not start at 0",
        "shift the sum to start at 0 (`rw shift_sum`)",
    ),
    active(
        "E0823",
        "a tail strategy `round` (RoundUp) or `shift` (ShiftInwards) on a loop whose extent is not provably a multiple of the factor (with the counterexample and the reason: writes past the end, values past a stage's end, reads out of bounds, or overlapping recomputation), or any `split` of a max-reduction whose extent is not provably a multiple of the factor (a partial tile cannot be padded: 0 is not the identity of `max`)",
        "use `tail guard`, or a factor that divides the extent (an `assume` can state that it does)",
    ),
    active(
        "E0824",
        "`reorder` of loops that are not directly nested",
        "exchange adjacent loops one pair at a time",
    ),
    active(
        "E0825",
        "`fuse` of loops that are not directly nested, of a gen and a sum, or of a loop that does not start at 0",
        "reorder, or `rw gen_lo_zero` first",
    ),
    active(
        "E0826",
        "a `compute_root`/`compute_inline`/`compute_at` naming no `let`",
        "stage names are shown by `atl derive --trace`",
    ),
    active(
        "E0827",
        "a stage cannot be moved across a construct that no let-lifting rule handles (`++`, `pad`, `trunc_l`, a max-reduction's body), or out of a stage it reads",
        "rewrite the program around the stage; move the stage it reads first",
    ),
    active(
        "E0828",
        "`compute_at` at a loop that does not enclose every use of the stage, or outside its scope, or of an unused stage",
        "choose a loop enclosing all consumers",
    ),
    active(
        "E0829",
        "`compute_at` cannot compute the window: a read not linear in a loop variable, or reads whose starts differ by a non-constant amount",
        "give the window with `window x in LO..HI`",
    ),
    active(
        "E0830",
        "`bound` whose extent (or size) is not provable from the `assume`s",
        "add the `assume`",
    ),
    active(
        "E0831",
        "a Halide directive with no sound counterpart (`compute_with`, `align_bounds`, …), with the reason",
        "see docs/directives.md",
    ),
    active(
        "E0832",
        "a directive names a loop that several loops could be (the same name written in two stages, which name resolution renamed apart)",
        "name it as printed (`x1`) or as `stage.var`, with the `let` that computes it (`NAME.var` for the definition's own loops); the REPL's `:loops` lists them",
    ),
    active(
        "E0833",
        "`boundary X into XP` cannot stage the read of `X`: a guard that is not the read's bounds (it drops reads that are in bounds), a halo that is not a fixed amount, a read that is not linear in its loops, or reads whose reach differs by a non-constant amount",
        "guard the read by exactly its bounds (`[0 <= q && q < W] * X[.., q]`), with any further condition in a separate guard",
    ),
    active(
        "E0834",
        "`stage X into XT order …` or `pack X by Q into XP` cannot make the copy: an order that is not a permutation of the dimensions, a tensor that is not a matrix (`stage` copies matrices, `pack` matrices and batches of matrices read once as `X[b, k, j]` with `b` a loop), or `X` not read by index",
        "stage or pack a matrix read as `X[a, b]`; `stage` with `order 1, 0` (transposed) or `order 0, 1` (a plain copy)",
    ),
    active(
        "E0838",
        "`compute_root` (or `compute_at` at an outer loop) of a stage that reads the variable of a loop it would leave (`compute_root` hoists it out of a `gen` or `sum` from 0 as a generator; other loops refuse)",
        "compute the stage at that loop or inside it (`compute_at x at i`)",
    ),
    active(
        "E0839",
        "`reorder` of two loops where the inner loop's range depends on the outer loop's variable (a triangular nest): no exchange is an equivalence",
        "give the inner loop a fixed range and a guard (`sum k < n: [k < i + 1] * …`), which can be reordered",
    ),
    active(
        "E0840",
        "`parallel` of a `sum` loop (its iterations accumulate into the same elements), or of a loop nested in (or enclosing) another `parallel` loop (OpenMP's nested parallelism is off)",
        "parallelize one `gen` loop of the nest",
    ),
    active(
        "E0841",
        "`vectorize` of a loop that is not an innermost `gen` computing a scalar: a `sum` (SIMD would reassociate its additions), a body containing a loop or a tensor `let` (a per-iteration buffer), or a tensor-valued body",
        "vectorize the innermost `gen`, e.g. the inner loop of a `split`",
    ),
    active(
        "E0842",
        "`unroll` of a loop whose bounds are not constants, or whose trip count is not between 2 and 64",
        "`split` by a constant factor and unroll the inner loop",
    ),
    active(
        "E0843",
        "conflicting annotations of one loop: the same one twice, or `unroll` with `parallel`, `vectorize` or `unroll off`",
        "one pragma per loop; `parallel` and `vectorize` combine, and `unroll off` combines with both",
    ),
    active(
        "E0844",
        "a step whose result would have a `gen` range length or reshape amount not guaranteed in range for every allowed size (the shape discipline; a guard's or a range's facts do not count)",
        "choose `with` values that keep every range non-negative, or add an `assume`",
    ),
    active(
        "E0845",
        "a step that would change the shape of the term it rewrites, for some size the declarations allow (e.g. `simpl` or a rule using a guard's fact about an extent)",
        "the term's shape must be equal for every allowed size; rewrite inside the guard's body without touching extents",
    ),
    active(
        "E0846",
        "a `with` value that mentions a name not in scope at the rewritten term (a binder of the term itself, or an unknown name)",
        "use sizes, constants and the binders around the rewritten term",
    ),
    active(
        "E0847",
        "the independent certificate checker refused a derivation the rewrite engine accepted (an engine bug)",
        "report it with the file; `atl derive --cert` and `atl verify` show the failing step",
    ),
    active(
        "E0848",
        "a step that would make the program larger than 20,000 nodes (repeated duplication by `unfold_let`/`inline`)",
        "keep the duplicated value in a `let`",
    ),
    active(
        "E0849",
        "a second `vector_width` in one derivation (or REPL session): a kernel is compiled for one vector width",
        "keep one `vector_width` step",
    ),
    active(
        "E0855",
        "a step of a derivation declared `grade exact` that reassociates additions (splitting, exchanging or partially summing a reduction), named as the user wrote it",
        "drop `grade exact` (the derivation is then graded `real`), or schedule the reduction without regrouping its terms",
    ),
    active(
        "E0856",
        "`rfactor` of a loop that is not a reduction from 0 directly inside another reduction",
        "`split k by 8 into ko, ki` first, then `rfactor ki into l`",
    ),
    active(
        "E0857",
        "a misused `specialize`: a condition that is not a conjunction of comparisons of sizes, a second `specialize` of the same derivation, or a step after it",
        "specialize on sizes (`specialize n % 16 == 0 && n >= 32 { … }`) as the last step of a derivation; schedule the general version before it",
    ),
    active(
        "E0858",
        "a `store_root x` or `store_at x at yo` that describes no sliding window: the stage is not computed inside a loop below the storage level, or is computed several loops below it (the window slides along one loop), or `yo` does not enclose the stage",
        "compute the stage inside a loop (`compute_at x at y`), then store it at the loop around `y` (`store_at x at yo`) or, when `y` is outermost, at the root (`store_root x`)",
    ),
    active(
        "E0901",
        "`trunc_l`/`trunc_r` drops a position that is not padding (the counterexample gives the sizes, binders and the dropped position; for a `sum`, the iteration that writes it)",
        "truncate only what an adjoint pair put there, `trunc_r(k, pad_r(k, e))`, or guard the dropped positions in the argument (`[i < n - k] * …`)",
    ),
    active(
        "E0902",
        "the solver could not prove that a truncation drops only padding (\"unknown\" is never acceptance)",
        "simplify the amounts or guards, or add an `assume`",
    ),
    active(
        "E0903",
        "an access index that can be out of bounds (ATL reads 0 there, the lowered code would read outside the buffer)",
        "guard the access (`[i + 1 < n] * f[i + 1]`) or read from a padded tensor",
    ),
    active(
        "E0904",
        "the solver could not prove an access in bounds",
        "guard the access, or add an `assume` that makes the bound provable",
    ),
    active(
        "E0905",
        "a reshape amount that can be invalid: negative `pad`/`trunc`, `trunc` of more than the extent, `split` by less than 1",
        "add an `assume` about the sizes, or change the amount",
    ),
    active(
        "E0906",
        "the solver could not prove a reshape amount valid",
        "add an `assume`",
    ),
    active(
        "E0907",
        "no pad type for an expression that is not well-shaped (`:pads` on a broken term)",
        "check the expression's shapes first",
    ),
    active(
        "E0911",
        "a metavariable reached lowering (only from hand-built IR)",
        "report it",
    ),
    active("E0912", "internal lowering error", "report it"),
    active(
        "E0913",
        "a loop annotation of a derived definition that does not apply to its kernel: no loop of that name (lowering removed it), a name also bound in a definition it uses (ambiguous), or a loop that fails the annotation's criterion in the kernel (not a `gen`, not innermost, iterations sharing a scalar or buffer, no constant trip count, nested in another `parallel` loop)",
        "annotate the loops as `atl emit --ir` shows them",
    ),
    active(
        "E0914",
        "a `store_root`/`store_at`/`fold_storage` that lowering cannot apply to the kernel: the stage is computed in several places (after a `partition` or a `specialize`), its rows are not computed by one loop at the start of its buffer's scope, the loop it slides along is `parallel`, its windows at consecutive iterations are not the same rows moved by a constant step smaller than the window, or a fold is smaller than a window or of a buffer no `store_root`/`store_at` keeps",
        "look at the kernel before the storage step (`atl emit --ir`): compute the stage once per iteration of one sequential loop, with a window that moves by a constant number of rows",
    ),
    active(
        "E0921",
        "loop-IR interpreter: an access out of the buffer",
        "report it: lowering produced wrong code",
    ),
    active(
        "E0922",
        "loop-IR interpreter: a read before any write",
        "report it",
    ),
    active(
        "E0923",
        "loop-IR interpreter: an output element never written",
        "report it",
    ),
    active(
        "E0924",
        "loop-IR interpreter: a store whose flat index does not match its coordinates, or a C division where floor division differs",
        "report it",
    ),
    active(
        "E0925",
        "loop-IR interpreter: two iterations of a loop annotated `parallel` or `vector` write the same element",
        "report it: an annotation was wrong",
    ),
    active(
        "E0926",
        "loop-IR interpreter: a kernel's check of a value read from an index array failed although the array satisfies its declaration",
        "report it: lowering checked more than the declaration says",
    ),
    active(
        "E0930",
        "the C compiler did not finish within the time limit (`atl schedule` gives each candidate one)",
        "the candidate's code is too large for the compiler: smaller tiles compile faster",
    ),
    active(
        "E0931",
        "`--name` (or the definition's name) is not a usable C function name",
        "choose a C identifier that is not a C keyword or C library name and does not start with `atl__` (in any case: the emitter's own helpers and macros), `omp_`, `__` or `_` and a capital letter; `atl_rownorm` is fine",
    ),
    active(
        "E0932",
        "compiling the C failed (no compiler, the compiler rejected the code, sanitizers without the harness)",
        "the message includes the compiler's output",
    ),
    active("E0933", "loading or calling the compiled kernel failed", ""),
    active(
        "E0934",
        "the sanitizer harness reported an error",
        "report it, with the notes",
    ),
    active("E0935", "cannot write the output files", "check the path"),
    active(
        "E0936",
        "`atl bench`: the compiled kernel disagrees with the interpreter at the check sizes, so nothing is timed",
        "a bug of lowering or of the C compiler's flags: report it with the file; `atl run` shows the difference",
    ),
    active(
        "E0937",
        "the sizes exceed a bound of the kernel's entry check (`size <= B`) that keeps its 64-bit index arithmetic from overflowing (the bound is in the C header's preconditions)",
        "use smaller sizes, or smaller constants in the index expressions",
    ),
    active(
        "E0938",
        "an index expression of the kernel may overflow 64-bit arithmetic at sizes the program allows (a huge index factor, split factor or guard constant): refused by lowering, or by the translation validator, which proves every `int64_t` value of a kernel fits",
        "use a smaller constant, or an `assume` bounding the sizes",
    ),
    active(
        "E0939",
        "`atl run`: the compiled kernel disagrees with the interpreter by more than the tolerance (the message names the worst element; the tolerance is relative to the output's largest magnitude)",
        "rounding of long sums or of reassociating rewrites: raise `--tolerance`; anything else is a bug of lowering or C emission: report it with the file",
    ),
    active(
        "E0940",
        "loop-IR text: a syntax error (an unexpected token or character, an unterminated string, nesting too deep)",
        "write the kernel as `atl emit --ir` prints it",
    ),
    active(
        "E0941",
        "loop-IR text: well-formed but not a kernel (an unknown note word or storage, target arithmetic in an ATL index expression, an access whose extents cannot be taken from its buffer)",
        "write the kernel as `atl emit --ir` prints it; give an access's extents (`@ (i : n)`) when they are not its buffer's shape",
    ),
    active(
        "E0942",
        "loop-IR text: the `source:` expression does not resolve as the body of a definition over the kernel's sizes and inputs",
        "the source is an ATL expression; every definition it uses must be bound by a `let`",
    ),
    active(
        "E0943",
        "`atl validate --ir` / `atl run --ir`: the kernel's sizes, inputs or output shape are not the definition's",
        "pass the definition the kernel was printed from (`--def`)",
    ),
    active(
        "E0944",
        "a name of the program (a size, an input, a binder) is reserved in C — a keyword, a name of the C library or `<math.h>`, or the emitter's `atl__` prefix — so its kernel cannot be written as C (the translation validator refuses it)",
        "rename it in the program",
    ),
    retired(
        "E0945",
        "(retired: definitions that read index arrays are lowered now)",
        "",
    ),
    retired(
        "E0946",
        "(retired: the Python module and atl-build pass index arrays now)",
        "",
    ),
    active(
        "E0950",
        "the kernel is not validated: the translation validator did not prove every obligation (the notes name the first ones), so it is not emitted, run or timed",
        "`atl validate FILE --def NAME` lists every obligation; `--no-validate` uses the kernel anyway (an emitted one says so in its header); please report the program",
    ),
    active(
        "E0951",
        "the kernel is rejected by the translation validator: lowering produced a wrong kernel (the notes give the counterexample)",
        "this is a bug of the lowering: please report it with the program; `atl validate FILE --def NAME` shows every obligation",
    ),
    active(
        "E0960",
        "`atl schedule` cannot search schedules of this definition: it is not a one-stage nest of `gen` loops around `sum` loops around a scalar, and its stages do not inline into one (the message says what is in the way)",
        "schedule it by hand with directives (docs/directives.md)",
    ),
    active(
        "E0961",
        "`atl schedule` found no schedule: no candidate was checked, validated, agreed with the interpreter and was timed within the budget (the note gives the first reasons)",
        "give a larger `--budget`, or smaller `--sizes`",
    ),
    active(
        "E1001",
        "`atl verify`: the file is not a certificate (not JSON, another `format`, a missing field)",
        "pass a file written by `atl derive --cert`",
    ),
    active(
        "E1002",
        "`atl verify`: the certificate's declarations or one of its programs does not parse or shape-check, a program text holds more than one expression, or the declarations are contradictory",
        "regenerate the certificate; programs that mention other definitions cannot be certified",
    ),
    active(
        "E1003",
        "`atl verify`: a step names a rule that neither the library nor the certificate's `user_rules` has, or whose statement differs from the one recorded (the rule changed after the certificate was made)",
        "re-run the derivation with the current rules",
    ),
    active(
        "E1004",
        "`atl verify`: the program before a step does not contain the recorded subterm at the recorded path (or the path leads nowhere)",
        "the certificate was edited or is from another program",
    ),
    active(
        "E1005",
        "`atl verify`: the subterm is not an instance of the rule's side (structural mismatch or a scoping refusal), or the recorded instantiation differs from the checker's match",
        "",
    ),
    active(
        "E1006",
        "`atl verify`: a side condition or a tactic's obligation is false (with a counterexample) or could not be proved, re-proved from scratch",
        "the step is not valid; the recorded verdict is not trusted",
    ),
    active(
        "E1007",
        "`atl verify`: the recorded side conditions differ from those the step has (one dropped, altered, added, or recorded under another context or verdict)",
        "",
    ),
    active(
        "E1008",
        "`atl verify`: rewriting does not give the recorded program (`after_site`, `after`, `result`), or a step changed the program's shape",
        "",
    ),
    active(
        "E1009",
        "`atl verify`: a step that cannot be checked independently (an `unfold` of a definition the certificate does not record; unknown steps)",
        "regenerate the certificate with `atl derive --cert`",
    ),
    active(
        "E1010",
        "`atl verify`: a step record that contradicts itself (command vs rule and direction, a grade that is not the rule's, rule data on a tactic, a malformed `window`)",
        "",
    ),
    active(
        "E1011",
        "`atl verify`: a recorded user rule that does not load, whose text defines another rule (or several), that is recorded twice, or that has the name of a library rule",
        "regenerate the certificate",
    ),
    active(
        "E1012",
        "`atl verify`: `initial` is not bound to `from`: the certificate records neither the `from` definition (`from_definition`) nor the nested certificate of its base derivation (`base`), records both or another name, or `initial` is not the recorded body (or the base's verified `result`)",
        "regenerate the certificate with `atl derive --cert`",
    ),
    active(
        "E1013",
        "`atl verify`: the nested certificate (`base`) is of another derivation than `from`, or has other declarations",
        "regenerate the certificate",
    ),
    active(
        "E1014",
        "`atl verify`: the shape discipline: a `gen` range length or reshape amount of a program of the certificate (`initial`, a step's result, the `from` body, a recorded definition) or an input extent is not proved in range (length `>= 0`, `split` `>= 1`, `pad` `>= 0`, `0 <=` `trunc` `<=` extent) under the declarations alone",
        "guards and enclosing ranges do not count: state the bound as an `assume`",
    ),
    active(
        "E1015",
        "`atl verify`: a step changes the shape of the term it rewrites for some size the declarations allow (a `simpl` that rewrites a `gen` bound or reshape amount using a guard's or range's facts; a rule whose shape condition holds only under a guard)",
        "",
    ),
    active(
        "E1101",
        "`atl layout`: the expression does not parse (a layout is written `(3,4):(4,1)`, an operation `compose(A, B)`)",
        "fix the text at the marked place; docs/layouts.md describes the notation",
    ),
    active(
        "E1102",
        "`atl layout`: a shape and a stride that are not a layout (not congruent, a negative extent)",
        "give the stride the shape's tuple structure; extents are >= 0",
    ),
    active(
        "E1103",
        "`atl layout`: a composition without a result (a stride-0 mode, an image outside the left operand's domain, a stride or extent that does not divide, modes that do not compose separately)",
        "the message names the condition that fails; docs/layouts.md lists them",
    ),
    active(
        "E1104",
        "`atl layout`: a complement without a result (overlapping or unaligned modes, a stride <= 0, a layout of size 0, a bound < 1)",
        "docs/layouts.md lists the conditions",
    ),
    active(
        "E1105",
        "`atl layout`: a size, stride or value beyond 64 bits",
        "use smaller extents or strides",
    ),
    active(
        "E1106",
        "`atl layout`: an unknown operation, the wrong number of arguments, or an argument of the wrong kind (an integer where a layout is expected, or the reverse)",
        "the operations are listed in docs/layouts.md",
    ),
];

/// The registry entry of `code` (`E0903`; a lower-case `e` is accepted too).
pub fn lookup(code: &str) -> Option<&'static ErrorCode> {
    let code = code.trim();
    let digits = code.strip_prefix('E').or_else(|| code.strip_prefix('e'))?;
    CODES.iter().find(|entry| entry.code[1..] == *digits)
}

/// The text `atl explain CODE` prints: the code and its title, what to do, and the
/// group it belongs to. `None` when the code is not registered.
pub fn explain(code: &str) -> Option<String> {
    let entry = lookup(code)?;
    let mut text = String::new();
    push_wrapped(&mut text, &format!("{}: {}", entry.code, entry.title));
    if entry.retired {
        text.push('\n');
        push_wrapped(
            &mut text,
            "This code is retired: no diagnostic raises it any more, and it is never reused for another problem.",
        );
    }
    if !entry.help.is_empty() {
        text.push('\n');
        push_wrapped(&mut text, &format!("What to do: {}", entry.help));
    }
    let group = entry.group();
    text.push('\n');
    push_wrapped(
        &mut text,
        &format!("Group {}: {}.", group.pattern(), group.title),
    );
    Some(text)
}

/// The width `explain` wraps its paragraphs to, so they read well in a terminal.
const EXPLAIN_WIDTH: usize = 80;

/// Appends `paragraph` to `text`, broken between words into lines of at most
/// [`EXPLAIN_WIDTH`] characters (a longer word gets a line of its own).
fn push_wrapped(text: &mut String, paragraph: &str) {
    let mut line_chars = 0;
    for word in paragraph.split(' ') {
        let word_chars = word.chars().count();
        if line_chars > 0 && line_chars + 1 + word_chars > EXPLAIN_WIDTH {
            text.push('\n');
            line_chars = 0;
        }
        if line_chars > 0 {
            text.push(' ');
            line_chars += 1;
        }
        text.push_str(word);
        line_chars += word_chars;
    }
    text.push('\n');
}

/// The header of `docs/errors.md`: says the file is generated and how to regenerate it.
const GENERATED_NOTE: &str = "<!-- Generated from the registry in lang/src/codes.rs by `errors_markdown`; do not edit by hand.
     Change the registry, then regenerate: ATL_BLESS=1 cargo test -p atl-lang --test error_codes -->
";

/// The introduction of `docs/errors.md`.
const INTRO: &str = "# Diagnostic codes

Every diagnostic `atl` prints has a stable code. Codes are never reused for a different
problem: a code no diagnostic raises any more keeps its entry, marked retired. The codes
are grouped by the stage that raises them. `atl explain E0903` prints one entry.
";

/// The text of `docs/errors.md`, rendered from [`GROUPS`] and [`CODES`]: the
/// introduction, then one section with a table per group. A test keeps the file equal
/// to it.
pub fn errors_markdown() -> String {
    let mut doc = String::new();
    doc.push_str(GENERATED_NOTE);
    doc.push('\n');
    doc.push_str(INTRO);
    for group in GROUPS {
        doc.push_str(&format!("\n## `{}`: {}\n\n", group.pattern(), group.title));
        doc.push_str("| code | meaning | what to do |\n|---|---|---|\n");
        for entry in CODES.iter().filter(|entry| entry.group() == group) {
            doc.push_str(&table_row(entry));
        }
    }
    doc
}

/// One line of the table; an empty cell is written `| |`.
fn table_row(entry: &ErrorCode) -> String {
    if entry.help.is_empty() {
        format!("| {} | {} | |\n", entry.code, entry.title)
    } else {
        format!("| {} | {} | {} |\n", entry.code, entry.title, entry.help)
    }
}
