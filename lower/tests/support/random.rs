//! A generator of random well-shaped ATL programs for the differential tests (shared
//! by `atl-lower` and `atl-emit-c` through `#[path]`). Programs mix every construct
//! (nested `gen`/`sum`, guards, `let`s at any depth, tensor `+`/`-`, accesses with
//! out-of-range and negative indices, floor division, every reshape operator,
//! accesses into reshapes) and are generated from a seed, so failures reproduce.

#![allow(dead_code)]

/// The shared splitmix64 generator, so a seed names the same program everywhere.
pub use atl_lang::rng::SplitMix64 as Rng;

/// A generated expression and its shape (extents as ATL index expressions).
pub struct Gen {
    pub src: String,
    pub shape: Vec<String>,
}

pub struct Builder {
    rng: Rng,
    /// Index binders in scope.
    binders: Vec<String>,
    /// Tensor `let`s in scope with their shapes.
    lets: Vec<(String, Vec<String>)>,
    fresh: usize,
}

impl Builder {
    fn name(&mut self, base: &str) -> String {
        self.fresh += 1;
        format!("{base}{}", self.fresh)
    }

    /// An index expression over the binders in scope: often in range, sometimes not.
    fn index(&mut self, extent: &str) -> String {
        let var = if self.binders.is_empty() {
            "0".to_string()
        } else {
            self.binders[self.rng.below(self.binders.len())].clone()
        };
        match self.rng.below(9) {
            0 => format!("{var} + 1"),
            1 => format!("{var} - 1"),
            2 => format!("({var} * 2) / 3"),
            3 => format!("{var} % 2"),
            4 => format!("{extent} - 1 - {var}"),
            5 => format!("({var} - 3) / 2"),
            6 => "0".to_string(),
            _ => var,
        }
    }

    fn pred(&mut self) -> String {
        let var = if self.binders.is_empty() {
            "n".to_string()
        } else {
            self.binders[self.rng.below(self.binders.len())].clone()
        };
        match self.rng.below(5) {
            0 => format!("{var} < 2"),
            1 => format!("0 <= {var} - 1"),
            2 => format!("{var} % 2 == 0"),
            3 => format!("{var} + 1 < n && {var} >= 0"),
            _ => format!("!({var} == 1) || m > 2"),
        }
    }

    fn extent(&mut self) -> String {
        self.rng
            .pick(&["n", "m", "3", "n + 1", "m - 1", "2"])
            .to_string()
    }

    /// Some scalar expression.
    pub fn scalar(&mut self, depth: u32) -> String {
        let choice = if depth == 0 {
            self.rng.below(4)
        } else {
            self.rng.below(12)
        };
        match choice {
            0 => format!("{}", (self.rng.below(7) as f64 - 3.0) * 0.5),
            1 => {
                let i = self.index("n");
                format!("f[{i}]")
            }
            2 => {
                let (i, j) = (self.index("n"), self.index("m"));
                format!("g[{i}, {j}]")
            }
            3 => "s".to_string(),
            4 => format!("{} * {}", self.scalar(depth - 1), self.scalar(depth - 1)),
            5 => format!("({} + {})", self.scalar(depth - 1), self.scalar(depth - 1)),
            6 => format!("-({})", self.scalar(depth - 1)),
            7 => format!("[{}] * {}", self.pred(), self.scalar(depth - 1)),
            8 => {
                let v = self.name("k");
                let ext = self.extent();
                self.binders.push(v.clone());
                let body = self.scalar(depth - 1);
                self.binders.pop();
                format!("(sum {v} < {ext}: {body})")
            }
            9 => {
                // A scalar read from a tensor expression.
                let t = self.tensor(depth - 1);
                let mut src = format!("({})", t.src);
                for d in &t.shape {
                    let i = self.index(d);
                    src = format!("{src}[{i}]");
                }
                src
            }
            10 if !self.lets.is_empty() => {
                let (x, shape) = self.lets[self.rng.below(self.lets.len())].clone();
                let idx: Vec<String> = shape.iter().map(|d| self.index(d)).collect();
                if idx.is_empty() {
                    x
                } else {
                    format!("{x}[{}]", idx.join(", "))
                }
            }
            _ => {
                let x = self.name("x");
                let v = self.tensor(depth - 1);
                self.lets.push((x.clone(), v.shape.clone()));
                let body = self.scalar(depth - 1);
                self.lets.pop();
                format!("(let {x} = {} in {body})", v.src)
            }
        }
    }

    /// A tensor whose shape is `shape`, built with gens around a scalar.
    fn of_shape(&mut self, shape: &[String], depth: u32) -> String {
        let Some((first, rest)) = shape.split_first() else {
            return self.scalar(depth);
        };
        let v = self.name("i");
        self.binders.push(v.clone());
        let body = self.of_shape(rest, depth);
        self.binders.pop();
        format!("(gen {v} < {first}: {body})")
    }

    /// Some tensor expression of rank >= 1.
    pub fn tensor(&mut self, depth: u32) -> Gen {
        let choice = if depth == 0 {
            self.rng.below(3)
        } else {
            self.rng.below(15)
        };
        match choice {
            0 => Gen {
                src: "f".into(),
                shape: vec!["n".into()],
            },
            1 => Gen {
                src: "g".into(),
                shape: vec!["n".into(), "m".into()],
            },
            2 => {
                let i = self.index("n");
                Gen {
                    src: format!("g[{i}]"),
                    shape: vec!["m".into()],
                }
            }
            3 | 4 => {
                let ext = self.extent();
                let v = self.name("i");
                self.binders.push(v.clone());
                let (body, mut shape) = if self.rng.below(2) == 0 {
                    (self.scalar(depth - 1), Vec::new())
                } else {
                    let t = self.tensor(depth - 1);
                    (t.src, t.shape)
                };
                self.binders.pop();
                shape.insert(0, ext.clone());
                let lo = if self.rng.below(4) == 0 { "1" } else { "0" };
                let hi = if lo == "1" { format!("{ext} + 1") } else { ext };
                Gen {
                    src: format!("(gen {v} in {lo}..{hi}: {body})"),
                    shape,
                }
            }
            5 => {
                let t = self.tensor(depth - 1);
                let v = self.name("k");
                let ext = self.extent();
                self.binders.push(v.clone());
                let body = self.of_shape(&t.shape, depth - 1);
                self.binders.pop();
                Gen {
                    src: format!("(sum {v} < {ext}: {body} + {})", t.src),
                    shape: t.shape,
                }
            }
            6 => {
                let t = self.tensor(depth - 1);
                Gen {
                    src: format!("[{}] * {}", self.pred(), t.src),
                    shape: t.shape,
                }
            }
            7 => {
                let x = self.name("x");
                let v = self.tensor(depth - 1);
                self.lets.push((x.clone(), v.shape.clone()));
                let body = self.tensor(depth - 1);
                self.lets.pop();
                Gen {
                    src: format!("(let {x} = {} in {})", v.src, body.src),
                    shape: body.shape,
                }
            }
            8 => {
                let t = self.tensor(depth - 1);
                let other = self.of_shape(&t.shape, depth - 1);
                let op = *self.rng.pick(&["+", "-"]);
                Gen {
                    src: format!("({} {op} {other})", t.src),
                    shape: t.shape,
                }
            }
            9 => {
                let t = self.tensor(depth - 1);
                let ext = self.extent();
                let mut other_shape = t.shape.clone();
                other_shape[0] = ext;
                let other = self.of_shape(&other_shape, depth - 1);
                let mut shape = t.shape.clone();
                shape[0] = format!("{} + {}", t.shape[0], other_shape[0]);
                if self.rng.below(2) == 0 {
                    Gen {
                        src: format!("concat({}, {other})", t.src),
                        shape,
                    }
                } else {
                    Gen {
                        src: format!("concat({other}, {})", t.src),
                        shape,
                    }
                }
            }
            10 => {
                let t = self.tensor(depth - 1);
                if t.shape.len() < 2 {
                    return t;
                }
                let mut shape = t.shape.clone();
                if self.rng.below(2) == 0 {
                    shape.swap(0, 1);
                    Gen {
                        src: format!("transpose({})", t.src),
                        shape,
                    }
                } else {
                    let merged = format!("({}) * ({})", shape[0], shape[1]);
                    shape.splice(0..2, [merged]);
                    Gen {
                        src: format!("flatten({})", t.src),
                        shape,
                    }
                }
            }
            11 | 12 => {
                let t = self.tensor(depth - 1);
                let k = *self.rng.pick(&["1", "2", "3", "m"]);
                let op = *self
                    .rng
                    .pick(&["split", "pad_l", "pad_r", "trunc_l", "trunc_r"]);
                let mut shape = t.shape.clone();
                match op {
                    "split" => {
                        shape[0] = format!("cdiv({}, {k})", t.shape[0]);
                        shape.insert(1, k.to_string());
                    }
                    "pad_l" | "pad_r" => shape[0] = format!("{} + {k}", t.shape[0]),
                    _ => shape[0] = format!("{} - {k}", t.shape[0]),
                }
                Gen {
                    src: format!("{op}({k}, {})", t.src),
                    shape,
                }
            }
            13 => {
                // An access into a tensor expression that stays a tensor.
                let t = self.tensor(depth - 1);
                if t.shape.len() < 2 {
                    return t;
                }
                let i = self.index(&t.shape[0]);
                Gen {
                    src: format!("({})[{i}]", t.src),
                    shape: t.shape[1..].to_vec(),
                }
            }
            _ if !self.lets.is_empty() => {
                let (x, shape) = self.lets[self.rng.below(self.lets.len())].clone();
                if shape.is_empty() {
                    return Gen {
                        src: "f".into(),
                        shape: vec!["n".into()],
                    };
                }
                Gen { src: x, shape }
            }
            _ => Gen {
                src: "-g".into(),
                shape: vec!["n".into(), "m".into()],
            },
        }
    }
}

pub const HEADER: &str = "size n, m\ninput f : [n]\ninput g : [n, m]\ninput s : []\n";

/// The source of random program number `seed`: a header declaring `n`, `m`,
/// `f : [n]`, `g : [n, m]`, `s : []`, then `def p = …` (a scalar for every fifth
/// seed, a tensor otherwise). It may fail to check (then it is skipped).
pub fn program(seed: u64) -> String {
    let mut b = Builder {
        rng: Rng::new(seed),
        binders: Vec::new(),
        lets: Vec::new(),
        fresh: 0,
    };
    let body = if seed.is_multiple_of(5) {
        b.scalar(4)
    } else {
        b.tensor(4).src
    };
    format!("{HEADER}def p = {body}\n")
}
