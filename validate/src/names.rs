//! C names as part of a kernel's well-formedness: every name of the kernel is a C
//! identifier that C does not reserve, and no two declarations of one name are
//! visible together in the C the printer writes, since C has one namespace where the
//! loop IR has several.
//!
//! The loop IR keeps index variables, scalars and buffers apart: a scalar `n` inside a
//! loop does not change what the size `n` means in a loop bound, and a loop over `acc`
//! leaves the scalar `acc` alone. The C printer (`atl-emit-c`) prints every name as it
//! is (it renames only a name that is reserved or equal to the C symbol, injectively),
//! so in C the innermost declaration of a name wins whatever its kind. This module
//! models C's block scopes as the printer prints them:
//!
//! - file scope: the kernel's C function (by default its name) and its companion
//!   `NAME_set_threads` (`atl_loopir::cnames::set_threads_symbol`);
//! - the function's outermost block: the parameters (sizes, inputs, the output) and the
//!   statements of the body;
//! - a loop: a block around it declaring its hoisted buffers ([`For::hoisted_buffers`],
//!   `T *restrict b = NULL;`, an `omp parallel` region when the loop is parallel), the
//!   loop variable in the `for` header, the body in a block of its own;
//! - an `if`: a block per branch;
//! - an `alloc`: a block declaring the buffer (a stack array or a heap pointer), with
//!   the body in the same block — except a hoisted one, which declares nothing and
//!   reuses the buffer declared around its loop, which must then be the `b` visible;
//! - a scalar: declared where it stands, visible until the end of its block.
//!
//! Each declaration must be a C identifier ([`cnames::is_c_identifier`]), not reserved
//! ([`cnames::reserved`]: keywords, the headers' names, the printer's `atl__` prefix,
//! `omp_`), and differ from every name visible where it is declared, whatever its
//! kind: C would let an inner declaration hide an outer one, but hiding across the
//! loop IR's namespaces changes the meaning, and a second declaration in one block
//! does not compile. Every read or write of a scalar must find a scalar. The kernel's
//! own name is the default C symbol; that it is not reserved is the emitter's check
//! (E0931 for `atl emit`, `atl run` choosing its own symbol), here it must only be an
//! identifier that no other name of the kernel equals.
//!
//! Each violation is an obligation [`ObligationKind::WellFormed`] with the goal
//! `false` under the sizes alone (a reachable context), so the kernel is rejected with
//! a message naming the clash in the kernel's own names.

use atl_lang::index::Pred;
use atl_loopir::cnames;
use atl_loopir::ir::{For, Kernel, Stmt, Storage, Val};
use atl_solver::{Facts, Solver};

use crate::obligations::{Obligation, ObligationKind};
use crate::{CheckedObligation, discharge};

/// What a name declares.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// The kernel's C function, or its companion (file scope).
    Function,
    Size,
    Input,
    Output,
    Loop,
    Scalar,
    /// A buffer of an `alloc`.
    Alloc,
    /// A buffer declared around the loop over `loop_var`.
    Hoisted {
        loop_var: String,
    },
}

/// A declaration visible at the point of the walk.
#[derive(Clone, Debug)]
struct Entry {
    name: String,
    kind: Kind,
    /// Where it was declared, in the kernel's terms (`in loop `i``).
    place: String,
    /// The C block it belongs to.
    block: usize,
}

impl Entry {
    fn describe(&self) -> String {
        let (name, place) = (&self.name, &self.place);
        match &self.kind {
            Kind::Function => format!("the kernel's C function `{name}`"),
            Kind::Size => format!("the size `{name}`"),
            Kind::Input => format!("the input `{name}`"),
            Kind::Output => format!("the output `{name}`"),
            Kind::Loop => format!("the loop variable `{name}` {place}"),
            Kind::Scalar => format!("the scalar `{name}` declared {place}"),
            Kind::Alloc => format!("the buffer `{name}` allocated {place}"),
            Kind::Hoisted { loop_var } => {
                format!("the buffer `{name}` hoisted around loop `{loop_var}`")
            }
        }
    }
}

/// The walk: the declarations visible, the C block being printed, and the problems
/// found (each with its location).
#[derive(Default)]
struct Scopes {
    visible: Vec<Entry>,
    block: usize,
    blocks: usize,
    /// The variables of the loops around the point of the walk.
    loops: Vec<String>,
    /// The location as the other obligations write it (`for i > alloc t`).
    path: Vec<String>,
    /// (location, problem, whether it is a name C reserves or no identifier at all:
    /// the program's to change, [`ObligationKind::CName`]).
    problems: Vec<(String, String, bool)>,
}

impl Scopes {
    fn place(&self) -> String {
        match self.loops.last() {
            Some(l) => format!("in loop `{l}`"),
            None => "at the top level".to_string(),
        }
    }

    fn problem(&mut self, text: String) {
        self.problems.push((self.path.join(" > "), text, false));
    }

    /// A name that cannot be a C name at all (reserved, or no identifier).
    fn unusable_name(&mut self, text: String) {
        self.problems.push((self.path.join(" > "), text, true));
    }

    /// Opens a C block; returns what [`Scopes::close`] restores.
    fn open(&mut self) -> (usize, usize) {
        let saved = (self.visible.len(), self.block);
        self.blocks += 1;
        self.block = self.blocks;
        saved
    }

    fn close(&mut self, (len, block): (usize, usize)) {
        self.visible.truncate(len);
        self.block = block;
    }

    fn find(&self, name: &str) -> Option<&Entry> {
        self.visible.iter().rev().find(|e| e.name == name)
    }

    /// Declares `name` in the current block: it must be a C identifier C does not
    /// reserve, and no declaration of the same name may be visible.
    fn declare(&mut self, name: &str, kind: Kind) {
        let entry = Entry {
            name: name.to_string(),
            kind,
            place: self.place(),
            block: self.block,
        };
        let what = entry.describe();
        if !cnames::is_c_identifier(name) {
            self.unusable_name(format!("the name of {what} is not a C identifier"));
        } else if let Some(why) = cnames::reserved(name) {
            self.unusable_name(format!("the name of {what} is {why}"));
        }
        if let Some(other) = self.find(name) {
            let other_text = other.describe();
            let text = if other.block == self.block {
                format!(
                    "{what} is a second declaration of `{name}` in one C block, after {other_text}"
                )
            } else {
                format!("{what} hides {other_text}: C has one namespace")
            };
            self.problem(text);
        }
        self.visible.push(entry);
    }

    /// A read or write of the scalar `name`: the `name` C sees there must be a scalar.
    fn scalar_use(&mut self, name: &str) {
        let found = self.find(name).cloned();
        let place = self.place();
        match found {
            Some(e) if e.kind == Kind::Scalar => {}
            Some(e) => {
                let text = format!(
                    "the scalar `{name}` used {place} is, in C, {}",
                    e.describe()
                );
                self.problem(text);
            }
            None => self.problem(format!(
                "the scalar `{name}` used {place} is declared nowhere around it"
            )),
        }
    }

    fn val_uses(&mut self, v: &Val) {
        let mut names = Vec::new();
        v.visit(&mut |n| {
            if let Val::Scalar(s) = n {
                names.push(s.clone());
            }
        });
        for n in names {
            self.scalar_use(&n);
        }
    }

    fn stmts(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn for_loop(&mut self, l: &For) {
        let around = self.open();
        for b in &l.hoisted_buffers {
            self.declare(
                b,
                Kind::Hoisted {
                    loop_var: l.var.clone(),
                },
            );
        }
        let header = self.open();
        self.declare(&l.var, Kind::Loop);
        self.loops.push(l.var.clone());
        self.path.push(format!("for {}", l.var));
        let body = self.open();
        self.stmts(&l.body);
        self.close(body);
        self.path.pop();
        self.loops.pop();
        self.close(header);
        self.close(around);
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::For(l) => self.for_loop(l),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                for branch in [then_branch, else_branch] {
                    let saved = self.open();
                    self.stmts(branch);
                    self.close(saved);
                }
            }
            Stmt::Alloc {
                buf, storage, body, ..
            } => {
                let saved = self.open();
                if let Storage::Hoisted { loop_var, .. } = storage {
                    self.hoisted_alloc(buf, loop_var);
                } else {
                    self.declare(buf, Kind::Alloc);
                }
                self.path.push(format!("alloc {buf}"));
                self.stmts(body);
                self.path.pop();
                self.close(saved);
            }
            Stmt::Decl { name, init } => {
                if let Some(v) = init {
                    self.val_uses(v);
                }
                self.declare(name, Kind::Scalar);
            }
            Stmt::SetScalar { name, value, .. } => {
                self.val_uses(value);
                self.scalar_use(name);
            }
            Stmt::Store { value, .. } => self.val_uses(value),
            Stmt::Fill { .. } | Stmt::Fail { .. } => {}
        }
    }

    /// An `alloc` of `buf` placed in the buffer hoisted around the loop over
    /// `loop_var`: C declares nothing there and uses the `buf` it sees, which must be
    /// that buffer.
    fn hoisted_alloc(&mut self, buf: &str, loop_var: &str) {
        let entry = Entry {
            name: buf.to_string(),
            kind: Kind::Alloc,
            place: self.place(),
            block: self.block,
        };
        let what = entry.describe();
        let want = Kind::Hoisted {
            loop_var: loop_var.to_string(),
        };
        let found = self.find(buf).cloned();
        match found {
            Some(e) if e.kind == want => {}
            Some(e) => self.problem(format!(
                "{what} is to reuse the buffer `{buf}` hoisted around loop `{loop_var}`, but \
                 the `{buf}` C sees there is {}",
                e.describe()
            )),
            None => self.problem(format!(
                "{what} is to reuse the buffer `{buf}` hoisted around loop `{loop_var}`, which \
                 no loop around it declares"
            )),
        }
        self.visible.push(entry);
    }
}

/// The name obligations of `kernel` (one per problem, goal `false` under the sizes).
pub fn obligations(kernel: &Kernel) -> Vec<Obligation> {
    let mut scopes = Scopes::default();
    if !cnames::is_c_identifier(&kernel.name) {
        scopes.problem(format!(
            "the kernel's name `{}` is not a C identifier",
            kernel.name
        ));
    }
    // File scope: the C function and its companion.
    for f in [
        kernel.name.clone(),
        cnames::set_threads_symbol(&kernel.name),
    ] {
        scopes.visible.push(Entry {
            name: f,
            kind: Kind::Function,
            place: String::new(),
            block: 0,
        });
    }
    // The function's block: the parameters, then the body.
    let function = scopes.open();
    for s in &kernel.sizes {
        scopes.declare(s, Kind::Size);
    }
    for i in &kernel.inputs {
        scopes.declare(&i.name, Kind::Input);
    }
    scopes.declare(&kernel.output.name, Kind::Output);
    scopes.stmts(&kernel.body);
    scopes.close(function);
    let context = Facts {
        sizes: kernel.sizes.clone(),
        facts: Vec::new(),
        arrays: crate::obligations::index_arrays(kernel),
    };
    scopes
        .problems
        .into_iter()
        .map(|(location, problem, unusable)| Obligation {
            kind: if unusable {
                ObligationKind::CName { problem }
            } else {
                ObligationKind::WellFormed { problem }
            },
            location,
            context: context.clone(),
            goal: Pred::Bool(false),
            lemma: None,
        })
        .collect()
}

/// Decides the name obligations of `kernel` ([`obligations`]): each is refuted.
pub fn check(kernel: &Kernel, solver: &Solver) -> Vec<CheckedObligation> {
    obligations(kernel)
        .into_iter()
        .map(|o| discharge(o, solver))
        .collect()
}
