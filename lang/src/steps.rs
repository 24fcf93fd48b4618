//! The one table of derivation steps and scheduling directives: for each its name, its
//! class, its argument synopsis, the usage text its error messages show, and a one-line
//! help. Everything that lists steps is derived from it: the parser's keyword
//! recognition and its E0205 help, the rewrite engine's directive dispatch (one handler
//! per entry, tested in `atl-rewrites`), its E0815 help and usage messages, the REPL's
//! `:help` and tab completion, and the checker's step names (`atl-proofs`). A test
//! below checks that `docs/directives.md` documents every directive.
//!
//! Adding a directive: one entry here and its handler in `rewrites/src/directives/mod.rs`.
//! It lives in `atl-lang` because the parser needs it and cannot depend on the engine.

/// What the grade `exact` means, in the one wording every command prints (`atl check`,
/// `atl derive`, `atl verify`, the REPL's `:rule`, the E0855 note): see
/// [`describe_grade`].
pub const GRADE_EXACT_MEANING: &str = "bit for bit in the interpreter wherever the values computed are finite; compiled kernels may differ by fused multiply-adds unless compiled with `--fp strict`";

/// What the grade `real` means (as [`GRADE_EXACT_MEANING`]).
pub const GRADE_REAL_MEANING: &str = "equal over the reals; rounding may differ";

/// A grade with what it means: `exact (bit for bit in the interpreter …)`, `real
/// (equal over the reals; …)`; any other word as it is.
pub fn describe_grade(grade: &str) -> String {
    match grade {
        "exact" => format!("exact ({GRADE_EXACT_MEANING})"),
        "real" => format!("real ({GRADE_REAL_MEANING})"),
        other => other.to_string(),
    }
}

/// What kind of step an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepClass {
    /// A rule application (`rw`, `rw<-`), with its own syntax.
    Rewrite,
    /// A step of the engine that is not a rule application (`simpl`, `window`, …), with
    /// its own syntax.
    Tactic,
    /// A scheduling directive: words, integers and commas, expanded by the engine into
    /// rule and tactic steps.
    Directive,
    /// A loop annotation (`parallel x`, …): directive syntax, one step that leaves the
    /// program unchanged and records a hint for lowering.
    LoopHint,
}

/// One entry of the step table.
#[derive(Clone, Copy, Debug)]
pub struct StepInfo {
    pub name: &'static str,
    pub class: StepClass,
    /// The step with its arguments named (`split i by K into io, ii …`), as lists show
    /// it; a rewrite's or a tactic's synopsis also parses as that step.
    pub synopsis: &'static str,
    /// The help of a malformed use (E0820 for a directive), verbatim.
    pub usage: &'static str,
    /// The fixed words of its arguments (`by`, `into`, `tail`, …), in the synopsis's
    /// order: the REPL completes them after the step's name.
    pub keywords: &'static [&'static str],
    /// One line saying what the step does.
    pub help: &'static str,
}

/// The usage text the three loop annotations share.
const LOOP_HINT_USAGE: &str =
    "`parallel y`, `vectorize x`, `unroll k`, `unroll k off`: one loop, named by its binder";

/// Every step and directive, in the order lists show them: rewrites and tactics, then
/// directives, then loop annotations.
pub const STEPS: &[StepInfo] = &[
    StepInfo {
        name: "rw",
        class: StepClass::Rewrite,
        synopsis: "rw RULE",
        usage: "`rw RULE [at N] [in [PATH]] [around (PATTERN)] [with k := v, …]`",
        keywords: &["at", "in", "around", "with"],
        help: "rewrite with a rule, left to right",
    },
    StepInfo {
        name: "rw<-",
        class: StepClass::Rewrite,
        synopsis: "rw<- RULE",
        usage: "`rw<- RULE [at N] [in [PATH]] [around (PATTERN)] [with k := v, …]`",
        keywords: &["at", "in", "around", "with"],
        help: "rewrite with a rule, right to left",
    },
    StepInfo {
        name: "unfold",
        class: StepClass::Tactic,
        synopsis: "unfold NAME",
        usage: "`unfold NAME` for a definition NAME, `unfold A as FORMAT` for another storage of a sparse matrix A",
        keywords: &["as"],
        help: "replace every reference to a definition by its body",
    },
    StepInfo {
        name: "inline",
        class: StepClass::Tactic,
        synopsis: "inline NAME",
        usage: "`inline x` for a stage `let x = …`",
        keywords: &[],
        help: "substitute a `let` away",
    },
    StepInfo {
        name: "simpl",
        class: StepClass::Tactic,
        synopsis: "simpl",
        usage: "`simpl` (no arguments)",
        keywords: &[],
        help: "simplify every index expression under its context",
    },
    StepInfo {
        name: "simpl_guard",
        class: StepClass::Tactic,
        synopsis: "simpl_guard",
        usage: "`simpl_guard` (no arguments)",
        keywords: &[],
        help: "remove the guards their context decides",
    },
    StepInfo {
        name: "window",
        class: StepClass::Tactic,
        synopsis: "window x in LO..HI",
        usage: "`window x in LO..HI[, LO2..HI2, …]` for a stage `let x = …`",
        keywords: &["in"],
        help: "store a stage only on the window its reads use",
    },
    StepInfo {
        name: "check",
        class: StepClass::Tactic,
        synopsis: "check",
        usage: "`check` (no arguments)",
        keywords: &[],
        help: "change nothing; check the program (shape discipline)",
    },
    StepInfo {
        name: "split",
        class: StepClass::Directive,
        synopsis: "split i by K into io, ii [tail guard|round|shift|separate]",
        usage: "`split i by 8 into io, ii [tail guard|round|shift|separate]`",
        keywords: &["by", "into", "tail", "guard", "round", "shift", "separate"],
        help: "split a loop into an outer and an inner loop",
    },
    StepInfo {
        name: "tile",
        class: StepClass::Directive,
        synopsis: "tile i, j by A, B [into io, jo, ii, ji]",
        usage: "`tile i, j by 64, 64` (loops `io, ii, jo, ji`), or `tile i, j by 64, 64 into io, jo, ii, ji` (Halide's order: the tile loops outside)",
        keywords: &["by", "into"],
        help: "split two loops; with `into`, the tile loops outside the loops within a tile",
    },
    StepInfo {
        name: "reorder",
        class: StepClass::Directive,
        synopsis: "reorder a, b, …",
        usage: "`reorder a, b, …` puts loops nested one in the other in the order given, outermost first (`reorder io, jo, ii, ji`)",
        keywords: &[],
        help: "put nested loops in the order given, outermost first",
    },
    StepInfo {
        name: "fuse",
        class: StepClass::Directive,
        synopsis: "fuse i, j into t",
        usage: "`fuse i, j into t` makes one loop `t` of two directly nested loops",
        keywords: &["into"],
        help: "make one loop of two directly nested loops",
    },
    StepInfo {
        name: "pack",
        class: StepClass::Directive,
        synopsis: "pack X by Q into XP",
        usage: "`pack B by 16 into Bp` copies the columns of the matrix `B` into zero-padded panels of 16, once",
        keywords: &["by", "into"],
        help: "copy a matrix's columns into contiguous zero-padded panels, computed once",
    },
    StepInfo {
        name: "stage",
        class: StepClass::Directive,
        synopsis: "stage X into XT order P, P",
        usage: "`stage K into KT order 1, 0` copies the matrix `K` transposed (`KT[d, j]` is `K[j, d]`), once, and reads the copy instead",
        keywords: &["into", "order"],
        help: "read a copy of a matrix stored in another order (transposed), computed once",
    },
    StepInfo {
        name: "boundary",
        class: StepClass::Directive,
        synopsis: "boundary X into XP [pad N]",
        usage: "`boundary inp into inp_b` stages a copy of `inp` with zeros around it, once, for its guarded read; `pad 16` adds 16 more zeros at the end of each row",
        keywords: &["into", "pad"],
        help: "read a zero-bordered copy of a tensor, computed once, instead of guarding the read",
    },
    StepInfo {
        name: "partition",
        class: StepClass::Directive,
        synopsis: "partition x",
        usage: "`partition x` for a loop `x` with boundary guards (`[0 <= x - 1]`, `[x + 1 < W]`), or the tile loop `io` of an earlier `split i by K into io, ii`",
        keywords: &[],
        help: "split off a loop's boundary iterations so that its steady state has no guard on it (a tile loop: its full tiles from the last one)",
    },
    StepInfo {
        name: "compute_root",
        class: StepClass::Directive,
        synopsis: "compute_root x",
        usage: "`compute_root x` for a stage `let x = …`",
        keywords: &[],
        help: "lift a stage out of every enclosing loop",
    },
    StepInfo {
        name: "compute_inline",
        class: StepClass::Directive,
        synopsis: "compute_inline x",
        usage: "`compute_inline x` for a stage `let x = …`",
        keywords: &[],
        help: "inline a stage into its reads",
    },
    StepInfo {
        name: "compute_at",
        class: StepClass::Directive,
        synopsis: "compute_at x at l",
        usage: "`compute_at x at io` computes the stage `let x` inside loop `io`",
        keywords: &["at"],
        help: "compute a stage inside a loop, on the window the loop reads",
    },
    StepInfo {
        name: "store_root",
        class: StepClass::Directive,
        synopsis: "store_root x",
        usage: "`store_root x` keeps the buffer of stage `x` (computed inside a loop with `compute_at`) for the whole kernel: the loop computes only the rows the earlier iterations did not (Halide's sliding window)",
        keywords: &[],
        help: "keep a stage's buffer across the iterations of the loop that computes it, and compute only its new rows (sliding window)",
    },
    StepInfo {
        name: "store_at",
        class: StepClass::Directive,
        synopsis: "store_at x at l",
        usage: "`store_at x at yo` keeps the buffer of stage `x` (computed with `compute_at` at the loop directly inside `yo`) for each iteration of `yo`: the inner loop computes only the rows its earlier iterations did not (Halide's sliding window)",
        keywords: &["at"],
        help: "keep a stage's buffer for each iteration of a loop, and compute only its new rows in the loop inside it (sliding window)",
    },
    StepInfo {
        name: "fold_storage",
        class: StepClass::Directive,
        synopsis: "fold_storage x by F",
        usage: "`fold_storage x by 3` stores the rows of stage `x` (kept by `store_root x` or `store_at x at …`) modulo 3: rows 3 apart share memory, which the validator proves is never overwritten before it is read (Halide's `fold_storage`)",
        keywords: &["by"],
        help: "store a sliding window's rows modulo a number of rows, so that its buffer holds only the live rows",
    },
    StepInfo {
        name: "bound",
        class: StepClass::Directive,
        synopsis: "bound v to N",
        usage: "`bound i to 2000`: loop `i` (or a size) is 2000, as `assume`s imply",
        keywords: &["to"],
        help: "check that a loop (or a size) has a given extent",
    },
    StepInfo {
        name: "rfactor",
        class: StepClass::Directive,
        synopsis: "rfactor ki into l [as part]",
        usage: "`rfactor ki into l [as part]` for the inner loop `ki` of two nested sums (`split k by 8 into ko, ki` first): the partial sums `let part = gen l < 8: sum ko: …`, added afterwards",
        keywords: &["into", "as"],
        help: "turn a reduction into partial sums over a new pure loop (Halide's rfactor)",
    },
    StepInfo {
        name: "grade",
        class: StepClass::Directive,
        synopsis: "grade exact",
        usage: "`grade exact`: every step of the derivation must keep the interpreter's floating-point result bit for bit (wherever the values are finite)",
        keywords: &["exact"],
        help: "declare the derivation exact: steps that reassociate sums are refused",
    },
    StepInfo {
        name: "specialize",
        class: StepClass::Directive,
        synopsis: "specialize COND { steps }",
        usage: "`specialize n % 16 == 0 { split i by 16 into io, ii; vectorize ii }`: a condition on sizes (comparisons joined by `&&`), then the steps of the specialized version in braces; the last step of a derivation",
        keywords: &[],
        help: "a second version of the program for a run-time condition on sizes, scheduled by the steps in braces (Halide's specialize)",
    },
    StepInfo {
        name: "vector_width",
        class: StepClass::Directive,
        synopsis: "vector_width N",
        usage: "`vector_width N`, N one of 128, 256, 512: the SIMD width in bits the kernel's C asks the compiler to prefer (GCC's `-mprefer-vector-width=N`, carried by the kernel's C); one per derivation",
        keywords: &[],
        help: "choose the SIMD width the compiler uses for the kernel (128, 256 or 512 bits)",
    },
    StepInfo {
        name: "parallel",
        class: StepClass::LoopHint,
        synopsis: "parallel x",
        usage: LOOP_HINT_USAGE,
        keywords: &[],
        help: "run the iterations of a `gen` loop on several threads",
    },
    StepInfo {
        name: "vectorize",
        class: StepClass::LoopHint,
        synopsis: "vectorize x",
        usage: LOOP_HINT_USAGE,
        keywords: &[],
        help: "run an innermost `gen` loop in SIMD lanes",
    },
    StepInfo {
        name: "unroll",
        class: StepClass::LoopHint,
        synopsis: "unroll x [off]",
        usage: LOOP_HINT_USAGE,
        keywords: &["off"],
        help: "unroll a loop with a constant trip count (`off`: never unroll it)",
    },
];

/// The entry named `name`, if any.
pub fn lookup(name: &str) -> Option<&'static StepInfo> {
    STEPS.iter().find(|s| s.name == name)
}

/// Whether `name` is a step with syntax of its own (a rewrite or a tactic); every
/// other word at the start of a step is read as a directive.
pub fn has_own_syntax(name: &str) -> bool {
    lookup(name).is_some_and(|s| matches!(s.class, StepClass::Rewrite | StepClass::Tactic))
}

/// Whether `name` is a loop annotation (`parallel`, `vectorize`, `unroll`).
pub fn is_loop_hint(name: &str) -> bool {
    lookup(name).is_some_and(|s| s.class == StepClass::LoopHint)
}

/// Whether `name` is expanded by the engine's directive layer (a directive or a loop
/// annotation).
pub fn is_directive(name: &str) -> bool {
    lookup(name).is_some_and(|s| matches!(s.class, StepClass::Directive | StepClass::LoopHint))
}

/// The help of E0205 (a line that does not start with a step word): the steps with
/// syntax of their own, then "or a scheduling directive".
pub fn not_a_step_help() -> String {
    let own: Vec<String> = STEPS
        .iter()
        .filter(|s| matches!(s.class, StepClass::Rewrite | StepClass::Tactic))
        // `window` came after this message was written and is not in it; the message
        // is kept as it was (the test snapshots hold it), so it is left out here.
        .filter(|s| s.name != "window")
        .map(|s| format!("`{}`", s.synopsis))
        .collect();
    format!(
        "steps are {} or a scheduling directive, one per line",
        own.join(", ")
    )
}

/// The help of E0815 (a step word the engine does not know): every name, the
/// directives apart.
pub fn unknown_step_help() -> String {
    let names = |directives: bool| -> Vec<String> {
        STEPS
            .iter()
            .filter(|s| is_directive(s.name) == directives)
            .map(|s| format!("`{}`", s.name))
            .collect()
    };
    format!(
        "steps are {}, and the directives {}",
        names(false).join(", "),
        names(true).join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::StepKind;

    #[test]
    fn names_are_unique() {
        for (k, s) in STEPS.iter().enumerate() {
            assert!(
                STEPS[..k].iter().all(|t| t.name != s.name),
                "`{}` is in the table twice",
                s.name
            );
        }
    }

    #[test]
    fn helps_keep_the_words_of_the_messages() {
        assert_eq!(
            not_a_step_help(),
            "steps are `rw RULE`, `rw<- RULE`, `unfold NAME`, `inline NAME`, `simpl`, `simpl_guard`, `check` or a scheduling directive, one per line"
        );
        assert_eq!(
            unknown_step_help(),
            "steps are `rw`, `rw<-`, `unfold`, `inline`, `simpl`, `simpl_guard`, `window`, `check`, and the directives `split`, `tile`, `reorder`, `fuse`, `pack`, `stage`, `boundary`, `partition`, `compute_root`, `compute_inline`, `compute_at`, `store_root`, `store_at`, `fold_storage`, `bound`, `rfactor`, `grade`, `specialize`, `vector_width`, `parallel`, `vectorize`, `unroll`"
        );
    }

    /// Every keyword is a word of the step's synopsis or usage, and every word of a
    /// directive's synopsis that is not a placeholder is one of its keywords (so that
    /// completion offers what the synopsis shows).
    #[test]
    fn keywords_are_the_fixed_words_of_the_synopsis() {
        let words = |text: &str| -> Vec<String> {
            text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect()
        };
        for s in STEPS {
            let known: Vec<String> = words(s.synopsis)
                .into_iter()
                .chain(words(s.usage))
                .collect();
            for k in s.keywords {
                assert!(known.iter().any(|w| w == k), "`{}`: `{k}`", s.name);
            }
        }
        // The fixed words of the directives' synopses, by hand.
        let fixed = [
            "by", "into", "tail", "guard", "round", "shift", "separate", "pad", "at", "to", "as",
            "exact",
        ];
        for s in STEPS.iter().filter(|s| is_directive_class(s.class)) {
            for w in words(s.synopsis).iter().skip(1) {
                if fixed.contains(&w.as_str()) {
                    assert!(s.keywords.contains(&w.as_str()), "`{}`: `{w}`", s.name);
                }
            }
        }
        assert_eq!(lookup("grade").map(|s| s.keywords), Some(&["exact"][..]));
    }

    /// The parser reads every rewrite and tactic with its own syntax, and every other
    /// entry as a directive.
    #[test]
    fn the_parser_recognizes_every_entry() {
        for s in STEPS {
            // A directive's synopsis has optional parts in brackets: its name alone is a
            // directive step (the engine checks the arguments).
            let text = if s.name == "specialize" {
                // Its block is part of its syntax.
                "specialize n % 16 == 0 { check }"
            } else if is_directive_class(s.class) {
                s.name
            } else {
                s.synopsis
            };
            let (steps, diags) = crate::parser::parse_steps(text);
            assert!(diags.is_empty(), "`{text}`: {diags:?}");
            let [step] = steps.as_slice() else {
                panic!("`{text}` parsed as {} steps", steps.len())
            };
            let is_directive = matches!(
                step.kind,
                StepKind::Directive { .. } | StepKind::Specialize { .. }
            );
            assert_eq!(is_directive, is_directive_class(s.class), "`{}`", s.name);
        }
    }

    fn is_directive_class(c: StepClass) -> bool {
        matches!(c, StepClass::Directive | StepClass::LoopHint)
    }

    /// `docs/directives.md` documents every directive and loop annotation.
    #[test]
    fn the_directives_documentation_mentions_every_directive() {
        let doc = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/directives.md"
        ))
        .expect("docs/directives.md");
        for s in STEPS.iter().filter(|s| is_directive_class(s.class)) {
            assert!(
                doc.contains(&format!("`{} ", s.name)),
                "docs/directives.md does not mention `{}`",
                s.name
            );
        }
    }
}
