//! The surface syntax tree produced by the parser: every node carries its span, names
//! are unresolved, and the sugar of DESIGN §3.1 is kept (multi-binder `gen`, `i < n`
//! ranges, `e[i, j]`, `a ++ b`). `resolve` lowers it to the core IR.

use crate::index::{CmpOp, IndexOp};
use crate::ir::{AmountOp, BinOp};
use crate::span::Span;

/// A name with its position.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SIndex {
    pub kind: SIndexKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SIndexKind {
    Int(i64),
    Name(String),
    Meta(String),
    Neg(Box<SIndex>),
    Bin(IndexOp, Box<SIndex>, Box<SIndex>),
    /// `pos[e]`: an element of an index array.
    Load(Ident, Box<SIndex>),
    /// Parentheses are kept so that `-(3)` (negation of a constant) and `-3` (a negative
    /// constant) stay distinct through a print/parse round trip.
    Paren(Box<SIndex>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct SPred {
    pub kind: SPredKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SPredKind {
    Bool(bool),
    Cmp(CmpOp, SIndex, SIndex),
    And(Box<SPred>, Box<SPred>),
    Or(Box<SPred>, Box<SPred>),
    Not(Box<SPred>),
    /// A predicate metavariable `?p` (rule patterns only).
    Meta(String),
}

/// The range of one binder: `i < n` (from 0) or `i in lo..hi`.
#[derive(Clone, Debug, PartialEq)]
pub enum SRange {
    Below(SIndex),
    Between(SIndex, SIndex),
}

/// One binder of a `gen` or `sum` head. In rule patterns the variable may be a binder
/// metavariable, spelled with its `?` (`gen ?i < ?n: ?e`).
#[derive(Clone, Debug, PartialEq)]
pub struct SBinder {
    pub var: Ident,
    pub range: SRange,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantifier {
    Gen,
    Sum,
    /// `max k < m: e`, the max-reduction (`max` followed by a binder; `max(a, b)` is
    /// the scalar function).
    Max,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SExpr {
    pub kind: SExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SExprKind {
    Num(f64),
    Name(String),
    Meta(String),
    /// Kept for the same reason as [`SIndexKind::Paren`]: `-(1)` vs `-1`.
    Paren(Box<SExpr>),
    /// `gen i < n, j < m: body` (binders nest left to right) or the same with `sum`.
    Bind {
        quantifier: Quantifier,
        binders: Vec<SBinder>,
        body: Box<SExpr>,
    },
    Guard {
        pred: SPred,
        body: Box<SExpr>,
    },
    Let {
        var: Ident,
        value: Box<SExpr>,
        body: Box<SExpr>,
    },
    /// `tensor[i, j, …]`.
    Access {
        tensor: Box<SExpr>,
        indices: Vec<SIndex>,
    },
    Neg(Box<SExpr>),
    Binary {
        op: BinOp,
        lhs: Box<SExpr>,
        rhs: Box<SExpr>,
    },
    Concat(Box<SExpr>, Box<SExpr>),
    Transpose(Box<SExpr>),
    Flatten(Box<SExpr>),
    Amount {
        op: AmountOp,
        amount: SIndex,
        arg: Box<SExpr>,
    },
    /// A scalar function applied to scalars: `sqrt(e)`, `max(a, b)`, … (`name` as
    /// written, resolved against `crate::functions`), or `select(a OP b, x, y)` (then
    /// `cmp` is `OP` and `args` are `a, b, x, y`).
    Call {
        name: Ident,
        cmp: Option<crate::index::CmpOp>,
        args: Vec<SExpr>,
    },
    /// `e[?i := k]`: capture-avoiding substitution of a binder metavariable, only in
    /// rule patterns.
    Subst {
        body: Box<SExpr>,
        var: Ident,
        value: SIndex,
    },
    /// `float(i + 1)`: an index expression's value as a scalar.
    Coord(SIndex),
    /// Placeholder left by error recovery; never reaches resolution.
    Error,
}

/// Which match of a rule a rewrite step applies to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SiteSelector {
    /// `at N`: the N-th match in pre-order (1-based).
    pub at: Option<(u64, Span)>,
    /// `around (PATTERN)`: the first match inside the first subterm matching PATTERN.
    pub around: Option<Box<SExpr>>,
    /// `in [0, 1, …]`: the child-index path from the root to the site.
    pub path: Option<(Vec<u64>, Span)>,
}

/// One argument word of a generic scheduling directive.
#[derive(Clone, Debug, PartialEq)]
pub enum DirectiveArg {
    Word(Ident),
    Int(i64, Span),
    Comma(Span),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub kind: StepKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StepKind {
    /// `rw RULE …` (forward) or `rw<- RULE …` (backward).
    Rewrite {
        backward: bool,
        rule: Ident,
        site: SiteSelector,
        /// `with k := 8, m := n`: instantiations of metavariables.
        with: Vec<(Ident, SIndex)>,
    },
    /// `unfold NAME`, or `unfold A as FORMAT` for another storage of the sparse
    /// matrix `A`.
    Unfold {
        name: Ident,
        storage: Option<Ident>,
    },
    Inline(Ident),
    Simpl,
    SimplGuard,
    Check,
    /// `window x in LO..HI[, LO2..HI2, …]`: store only rows LO..HI of the let-bound `x`
    /// (and columns LO2..HI2, …: one range per leading dimension); every read of `x`
    /// must be provably in the window.
    Window {
        var: Ident,
        /// One `(LO, HI)` per windowed dimension, outermost first (at least one).
        dims: Vec<(SIndex, SIndex)>,
    },
    /// `specialize COND { steps }` (Halide's `specialize`): the program becomes its
    /// version under the run-time condition `COND` (on sizes), scheduled by `steps`,
    /// and its general version, scheduled as before the block.
    Specialize {
        cond: SPred,
        steps: Vec<Step>,
    },
    /// Any other command word with its arguments (Halide-style directives); a later
    /// stage gives them meaning or reports them as unknown.
    Directive {
        name: Ident,
        args: Vec<DirectiveArg>,
    },
}

/// What an `int` input declares beyond its shape: the `int` keyword's span, the
/// range of its values (`in lo..hi`) and whether they are `sorted`.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexArrayAst {
    pub int_span: Span,
    pub range: Option<(SIndex, SIndex)>,
    pub sorted: Option<Span>,
}

/// An input's storage layout as written, `layout (M, K):(1, M)`: one extent and one
/// stride per dimension.
#[derive(Clone, Debug, PartialEq)]
pub struct LayoutAst {
    pub extents: Vec<SIndex>,
    pub strides: Vec<SIndex>,
    pub span: Span,
}

/// One storage of a sparse declaration: `csr(pos, crd, vals)`.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseStorage {
    pub format: Ident,
    pub arrays: Vec<Ident>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Size(Vec<Ident>, Span),
    Assume(SPred, Span),
    Input {
        name: Ident,
        shape: Vec<SIndex>,
        /// `Some` for an index array, `input pos : int[n + 1] in 0..nnz + 1 sorted`.
        index_array: Option<IndexArrayAst>,
        /// `layout (M, K):(1, M)`: how the input is stored (CuTe notation).
        layout: Option<LayoutAst>,
        span: Span,
    },
    Def {
        name: Ident,
        body: SExpr,
        span: Span,
    },
    /// `sparse A : [n, m] as csr(pos, crd, vals)`: a matrix defined by the arrays that
    /// store it (`crate::sparse`); `as csr(…), csc(…)` lists several storages of the
    /// one matrix, the first defining it (`unfold A as csc` reads another).
    Sparse {
        name: Ident,
        shape: Vec<SIndex>,
        storages: Vec<SparseStorage>,
        span: Span,
    },
    Derive {
        name: Ident,
        from: Ident,
        steps: Vec<Step>,
        span: Span,
    },
    /// `rule NAME: LHS => RHS` with its indented lines: a user rule, kept as text
    /// because its syntax is the rule files' (the rewrite crate loads and checks it).
    Rule(RuleItem),
}

/// A user rule as written in a program file. `text` starts at the rule's name (after
/// the `rule` keyword) and runs to the item's last token; `text_offset` is its byte
/// offset in the file, so diagnostics of the rule loader can point into the file.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleItem {
    pub name: Ident,
    pub text: String,
    pub text_offset: usize,
    /// 1-based line of the header in the file.
    pub line: usize,
    /// The `# …` comment line just above the header (the rule's equation comment).
    pub doc: Option<String>,
    /// The whole item, from `rule` to its last token.
    pub span: Span,
}

/// A parsed source file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct File {
    pub items: Vec<Item>,
    /// Names of definitions whose items failed to parse: references to them are not
    /// reported again as unknown names.
    pub broken: Vec<String>,
}
