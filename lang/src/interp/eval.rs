//! The interpreter's evaluation: destination-passing over the compiled `Node`s
//! (step 3 of `super`'s overview), and the random and checked inputs it runs on.

use super::*;

// ---------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------

/// Below this many output elements a `gen` is evaluated sequentially: the rayon
/// overhead would dominate.
pub(super) const PAR_MIN_ELEMENTS: usize = 4096;

/// Checks the inputs, evaluates the reachable definitions in program order, then `node`.
pub(super) fn run(
    compiler: Compiler<'_>,
    node: &Node,
    inputs: &BTreeMap<String, Tensor>,
    options: &EvalOptions,
) -> Result<Tensor, Diagnostic> {
    let program = compiler.program;
    let mut slices: Vec<&[f64]> = vec![&[]; program.inputs.len()];
    let arrays_read = compiler.arrays_read.borrow().clone();
    for pos in 0..program.inputs.len() {
        let declared = match &compiler.inputs[pos] {
            Some(shape) => shape.clone(),
            None if arrays_read[pos] => compiler.input_shape(pos)?,
            None => continue,
        };
        let declared = &declared;
        let decl = &program.inputs[pos];
        let Some(tensor) = inputs.get(&decl.name) else {
            return Err(at(
                Diagnostic::error("E0604", format!("input `{}` has no value", decl.name)),
                decl.span,
                "declared here",
            )
            .with_help(format!(
                "supply it with `--input {0}=random:SEED` or `--input {0}=PATH.npy`",
                decl.name
            )));
        };
        if &tensor.shape != declared {
            return Err(at(
                Diagnostic::error(
                    "E0605",
                    format!(
                        "input `{}` has shape {}, expected {} (declared as {})",
                        decl.name,
                        fmt_shape(&tensor.shape),
                        fmt_shape(declared),
                        fmt_index_shape(&decl.shape)
                    ),
                ),
                decl.span,
                "declared here",
            ));
        }
        if shape_numel(&tensor.shape) != Some(tensor.data.len()) {
            return Err(at(
                Diagnostic::error(
                    "E0605",
                    format!(
                        "input `{}` has {} values, but its shape {} needs {}",
                        decl.name,
                        tensor.data.len(),
                        fmt_shape(&tensor.shape),
                        node_count_text(&tensor.shape)
                    ),
                ),
                decl.span,
                "declared here",
            ));
        }
        if let Some(facts) = &decl.index_array {
            let sizes = compiler.sizes;
            check_index_array(&decl.name, facts, &tensor.data, &|n| sizes.get(n).copied())
                .map_err(|message| {
                    at(
                        Diagnostic::error("E0610", message),
                        decl.span,
                        "declared here",
                    )
                })?;
        }
        slices[pos] = &tensor.data;
    }
    let mut ctx = Ctx {
        inputs: slices,
        defs: vec![None; program.defs.len()],
        parallel: options.parallel,
        max_iterations: options.max_iterations,
        monitor: options.monitor.as_deref(),
    };
    // A definition only refers to earlier ones, so program order is dependency order.
    for (pos, def) in compiler.defs.iter().enumerate() {
        if let Some(def) = def {
            let value = ctx.eval_full(def)?;
            ctx.defs[pos] = Some(Arc::new(value));
        }
    }
    let data = ctx.eval_full(node)?;
    Ok(Tensor {
        shape: node.shape.clone(),
        data,
    })
}

pub(super) fn node_count_text(shape: &[usize]) -> String {
    shape_numel(shape).map_or_else(
        || "more than can be addressed".to_string(),
        |n| n.to_string(),
    )
}

/// The evaluation environment of one thread.
#[derive(Clone, Debug)]
pub(super) struct Env {
    /// Values of the `gen`/`sum` binders in scope, outermost first.
    pub(super) idx: Vec<i64>,
    /// Values of the `let` variables in scope, outermost first.
    pub(super) lets: Vec<Arc<Vec<f64>>>,
    /// Indices applied to the node being evaluated, innermost first: the last entry is
    /// the index into the node's outermost dimension. A node evaluated with `p` pending
    /// indices writes `node[pending[p-1]]…[pending[0]]`, of shape `shape[p..]`.
    pub(super) pending: Vec<i64>,
    /// The iterations the enclosing loops run in all (the product of their trip
    /// counts): what one more iteration of the node being evaluated is multiplied by.
    pub(super) outer_iterations: u128,
}

impl Default for Env {
    fn default() -> Env {
        Env {
            idx: Vec::new(),
            lets: Vec::new(),
            pending: Vec::new(),
            outer_iterations: 1,
        }
    }
}

/// Run-time values shared by all threads.
pub(super) struct Ctx<'a> {
    pub(super) inputs: Vec<&'a [f64]>,
    pub(super) defs: Vec<Option<Arc<Vec<f64>>>>,
    pub(super) parallel: bool,
    pub(super) max_iterations: u64,
    pub(super) monitor: Option<&'a Monitor>,
}

/// Whether `k` is a valid position in an extent of `n`.
pub(super) fn in_range(k: i64, n: usize) -> bool {
    usize::try_from(k).is_ok_and(|k| k < n)
}

pub(super) fn split_out(
    out: &mut [f64],
    at: usize,
    span: Span,
) -> Result<(&mut [f64], &mut [f64]), Diagnostic> {
    out.split_at_mut_checked(at)
        .ok_or_else(|| internal(span, "buffer split out of range"))
}

impl Ctx<'_> {
    /// Evaluates a closed node (no binders, lets or pending indices) into a new buffer.
    pub(super) fn eval_full(&self, node: &Node) -> Result<Vec<f64>, Diagnostic> {
        let mut data = vec![0.0; node.numel()];
        self.eval(node, &mut Env::default(), &mut data)?;
        Ok(data)
    }

    pub(super) fn index(&self, c: &CIdx, env: &Env, span: Span) -> Result<i64, Diagnostic> {
        c.eval(&env.idx, &self.inputs).ok_or_else(|| overflow(span))
    }

    /// E0609 once the monitor's cancellation flag is set.
    pub(super) fn check_cancel(&self, span: Span) -> Result<(), Diagnostic> {
        match self.monitor {
            Some(m) if m.is_cancelled() => Err(at(
                Diagnostic::error("E0609", "the evaluation was interrupted"),
                span,
                "while evaluating this",
            )),
            _ => Ok(()),
        }
    }

    /// Counts a loop of `trips` iterations inside the enclosing ones: the new count of
    /// `env.outer_iterations` for its body (the caller restores the old one), or E0509.
    pub(super) fn enter_loop(
        &self,
        trips: u128,
        env: &Env,
        span: Span,
    ) -> Result<u128, Diagnostic> {
        let total = env.outer_iterations.saturating_mul(trips);
        if total > u128::from(self.max_iterations) {
            return Err(too_long(span, total, self.max_iterations));
        }
        Ok(total)
    }

    /// Writes the value of `node`, indexed by the pending indices of `env`, into `out`.
    /// On success `env` is as it was; after an error it may not be (the caller aborts or,
    /// in a parallel loop, resets it).
    pub(super) fn eval(
        &self,
        node: &Node,
        env: &mut Env,
        out: &mut [f64],
    ) -> Result<(), Diagnostic> {
        if node.suffix.get(env.pending.len()) != Some(&out.len()) {
            return Err(internal(
                node.span,
                "output buffer does not match the shape",
            ));
        }
        if out.is_empty() && !node.checks {
            // Nothing to compute (an element shape with a zero extent).
            return Ok(());
        }
        let span = node.span;
        match &node.kind {
            Kind::Lit(v) => {
                out.fill(*v);
                Ok(())
            }
            Kind::Coord(index) => {
                // Exact up to 2^53, as the interpreter's reals are doubles.
                let value = self.index(index, env, span)?;
                out.fill(value as f64);
                Ok(())
            }
            Kind::Load(src) => self.load(node, *src, env, out),
            Kind::Gen {
                lo,
                hi,
                body,
                one_hot,
            } => {
                let extent = node.dim(0);
                let lo_v = self.gen_lower_bound(node, lo, hi, extent, env)?;
                match env.pending.pop() {
                    Some(k) => {
                        let r = if in_range(k, extent) {
                            // lo + k < hi, so it cannot overflow.
                            env.idx.push(lo_v + k);
                            let r = self.eval(body, env, out);
                            env.idx.pop();
                            r
                        } else {
                            out.fill(0.0);
                            Ok(())
                        };
                        env.pending.push(k);
                        r
                    }
                    None if one_hot.is_some() && !body.checks => {
                        out.fill(0.0);
                        self.one_hot(node, lo_v, env, out, false)
                    }
                    None => {
                        let outer = env.outer_iterations;
                        env.outer_iterations = self.enter_loop(extent as u128, env, span)?;
                        let r = self.gen_loop(lo_v, extent, body, env, out);
                        env.outer_iterations = outer;
                        r
                    }
                }
            }
            Kind::Sum { lo, hi, body } => {
                let lo_v = self.index(lo, env, span)?;
                let hi_v = self.index(hi, env, span)?;
                out.fill(0.0);
                let trips = u128::try_from(i128::from(hi_v) - i128::from(lo_v)).unwrap_or(0);
                let outer = env.outer_iterations;
                env.outer_iterations = self.enter_loop(trips, env, span)?;
                let r = self.sum_loop(lo_v, hi_v, body, env, out);
                env.outer_iterations = outer;
                r
            }
            Kind::MaxRed { lo, hi, body } => {
                // Scalar bodies only (E0416): `out` is one element.
                let lo_v = self.index(lo, env, span)?;
                let hi_v = self.index(hi, env, span)?;
                let trips = u128::try_from(i128::from(hi_v) - i128::from(lo_v)).unwrap_or(0);
                let outer = env.outer_iterations;
                env.outer_iterations = self.enter_loop(trips, env, span)?;
                let r = self.max_loop(lo_v, hi_v, body, env);
                env.outer_iterations = outer;
                out.fill(r?);
                Ok(())
            }
            Kind::Guard { pred, body } => {
                if pred
                    .eval(&env.idx, &self.inputs)
                    .ok_or_else(|| overflow(span))?
                {
                    self.eval(body, env, out)
                } else {
                    out.fill(0.0);
                    Ok(())
                }
            }
            Kind::Let { value, body, cache } => {
                let buf = match cache.as_ref().and_then(OnceLock::get) {
                    Some(buf) => Arc::clone(buf),
                    None => {
                        // The value is a whole tensor: evaluate it without the pending
                        // indices.
                        let saved = std::mem::take(&mut env.pending);
                        // A cached value is computed once, whatever loops it is in.
                        let outer = env.outer_iterations;
                        if cache.is_some() {
                            env.outer_iterations = 1;
                        }
                        let mut buf = vec![0.0; value.numel()];
                        let r = self.eval(value, env, &mut buf);
                        env.pending = saved;
                        env.outer_iterations = outer;
                        r?;
                        let buf = Arc::new(buf);
                        if let Some(cache) = cache {
                            // Another thread may have filled it meanwhile, with the same
                            // value.
                            let _ = cache.set(Arc::clone(&buf));
                        }
                        buf
                    }
                };
                env.lets.push(buf);
                let r = self.eval(body, env, out);
                env.lets.pop();
                r
            }
            Kind::Access { tensor, index } => {
                let k = self.index(index, env, span)?;
                env.pending.push(k);
                let r = self.eval(tensor, env, out);
                env.pending.pop();
                r
            }
            Kind::Neg(a) => {
                // `(-e)[k]` out of bounds is the zero `+0.0`, not `-(+0.0)`.
                let oob = env
                    .pending
                    .iter()
                    .rev()
                    .enumerate()
                    .any(|(d, &k)| !in_range(k, node.dim(d)));
                if oob {
                    out.fill(0.0);
                } else {
                    self.eval(a, env, out)?;
                    for x in out.iter_mut() {
                        *x = -*x;
                    }
                }
                Ok(())
            }
            Kind::Binary { op, lhs, rhs } => self.binary(node, *op, lhs, rhs, env, out),
            Kind::Call { func, args } => {
                let [slot] = out else {
                    return Err(internal(span, "scalar function with a tensor result"));
                };
                let mut values = Vec::with_capacity(args.len());
                for a in args {
                    let mut v = [0.0];
                    self.eval(a, env, &mut v)?;
                    values.push(v[0]);
                }
                *slot = func.apply(&values);
                Ok(())
            }
            Kind::Concat(a, b) => {
                let na = a.dim(0);
                match env.pending.last().copied() {
                    Some(k) if k < na as i64 => self.eval(a, env, out),
                    Some(k) => {
                        // k >= na >= 0, so this cannot overflow.
                        self.with_top(env, k - na as i64, |env| self.eval(b, env, out))
                    }
                    None => {
                        let (head, tail) = split_out(out, a.numel(), span)?;
                        self.eval(a, env, head)?;
                        self.eval(b, env, tail)
                    }
                }
            }
            Kind::Transpose(a) => self.transpose(node, a, env, out),
            Kind::Flatten(a) => match env.pending.pop() {
                Some(k) => {
                    let (n, m) = (a.dim(0), a.dim(1));
                    let r = if in_range(k, n * m) {
                        let m = m as i64;
                        env.pending.push(k % m);
                        env.pending.push(k / m);
                        let r = self.eval(a, env, out);
                        env.pending.truncate(env.pending.len().saturating_sub(2));
                        r
                    } else {
                        out.fill(0.0);
                        Ok(())
                    };
                    env.pending.push(k);
                    r
                }
                // Flattening does not move data in row-major order.
                None => self.eval(a, env, out),
            },
            Kind::Amount { op, amount, k, arg } => {
                self.amount(node, *op, amount, *k, arg, env, out)
            }
        }
    }

    /// Replaces the outermost pending index by `k` while running `f`.
    pub(super) fn with_top(
        &self,
        env: &mut Env,
        k: i64,
        f: impl FnOnce(&mut Env) -> Result<(), Diagnostic>,
    ) -> Result<(), Diagnostic> {
        let Some(top) = env.pending.last_mut() else {
            return Ok(());
        };
        let saved = std::mem::replace(top, k);
        let r = f(env);
        if let Some(top) = env.pending.last_mut() {
            *top = saved;
        }
        r
    }

    pub(super) fn load(
        &self,
        node: &Node,
        src: Src,
        env: &Env,
        out: &mut [f64],
    ) -> Result<(), Diagnostic> {
        let data: Option<&[f64]> = match src {
            Src::Input(p) => self.inputs.get(p).copied(),
            Src::Def(p) => self
                .defs
                .get(p)
                .and_then(|d| d.as_deref())
                .map(Vec::as_slice),
            Src::Let(l) => env.lets.get(l).map(|v| v.as_slice()),
        };
        let data = data.ok_or_else(|| internal(node.span, "stored tensor missing"))?;
        let mut offset = 0usize;
        for (d, &k) in env.pending.iter().rev().enumerate() {
            if !in_range(k, node.dim(d)) {
                out.fill(0.0);
                return Ok(());
            }
            offset += k as usize * node.stride(d + 1);
        }
        let missing = || internal(node.span, "stored tensor has the wrong size");
        if let [o] = out {
            // The common case (a scalar read) without a `memcpy` call.
            *o = *data.get(offset).ok_or_else(missing)?;
        } else {
            out.copy_from_slice(data.get(offset..offset + out.len()).ok_or_else(missing)?);
        }
        Ok(())
    }

    /// Evaluates the bounds of a `gen`, checks that its extent is the one its shape was
    /// computed with, and returns the lower bound.
    pub(super) fn gen_lower_bound(
        &self,
        node: &Node,
        lo: &CIdx,
        hi: &CIdx,
        extent: usize,
        env: &Env,
    ) -> Result<i64, Diagnostic> {
        let lo_v = self.index(lo, env, node.span)?;
        if lo.is_const() && hi.is_const() {
            // Checked at compile time.
            return Ok(lo_v);
        }
        let hi_v = self.index(hi, env, node.span)?;
        let actual = if hi_v > lo_v {
            hi_v.checked_sub(lo_v).ok_or_else(|| overflow(node.span))?
        } else {
            0
        };
        if !usize::try_from(actual).is_ok_and(|a| a == extent) {
            return Err(mismatch(
                node.span,
                format!(
                    "this `gen` has {actual} elements here but {extent} where its shape was \
                     computed (its bounds depend on an enclosing binder: a jagged tensor)"
                ),
            ));
        }
        Ok(lo_v)
    }

    /// Evaluates every iteration of a `gen` into consecutive chunks of `out`.
    /// The terms of a `sum` over `lo..hi`, added into `out` (zeroed by the caller).
    pub(super) fn sum_loop(
        &self,
        lo_v: i64,
        hi_v: i64,
        body: &Node,
        env: &mut Env,
        out: &mut [f64],
    ) -> Result<(), Diagnostic> {
        if let [acc] = out {
            let mut t = [0.0];
            for v in lo_v..hi_v {
                self.check_cancel(body.span)?;
                env.idx.push(v);
                self.eval(body, env, &mut t)?;
                env.idx.pop();
                *acc += t[0];
            }
        } else if let Kind::Gen {
            lo,
            hi,
            one_hot: Some(_),
            ..
        } = &body.kind
            && !body.checks
            // Read through an access, the sum's output is one element of the
            // generator's (the pending indices select it): the general loop below.
            && env.pending.is_empty()
        {
            // A sum of one-hot generators (a scatter): each term adds its one
            // non-zero element in place. The other elements would add exact zeros,
            // which change nothing: a sum that starts at +0 never holds -0.
            for v in lo_v..hi_v {
                self.check_cancel(body.span)?;
                env.idx.push(v);
                let r = self
                    .gen_lower_bound(body, lo, hi, body.dim(0), env)
                    .and_then(|lo| self.one_hot(body, lo, env, out, true));
                env.idx.pop();
                r?;
            }
        } else {
            let mut t = vec![0.0; out.len()];
            for v in lo_v..hi_v {
                self.check_cancel(body.span)?;
                env.idx.push(v);
                self.eval(body, env, &mut t)?;
                env.idx.pop();
                for (o, x) in out.iter_mut().zip(&t) {
                    *o += x;
                }
            }
        }
        Ok(())
    }

    /// The one-hot generator `node` (from `lo_v`) at the one binder value where it may
    /// be non-zero: its body written into that element's chunk of `out` (which the
    /// caller zeroed), or added to it when `accumulate` (a term of a sum); nothing when
    /// that value is outside the generator. Written, not added, the chunk is
    /// bit-identical to the loop's (a `-0.0` body stays `-0.0`).
    pub(super) fn one_hot(
        &self,
        node: &Node,
        lo_v: i64,
        env: &mut Env,
        out: &mut [f64],
        accumulate: bool,
    ) -> Result<(), Diagnostic> {
        let Kind::Gen {
            body,
            one_hot: Some(target),
            ..
        } = &node.kind
        else {
            return Err(internal(
                node.span,
                "a one-hot generator without its target",
            ));
        };
        let t = self.index(target, env, node.span)?;
        let k = i128::from(t) - i128::from(lo_v);
        let extent = node.dim(0);
        if k < 0 || k >= extent as i128 {
            return Ok(());
        }
        let elem = body.numel();
        let k = k as usize;
        let place = &mut out[k * elem..(k + 1) * elem];
        env.idx.push(t);
        let r = if accumulate {
            let mut chunk = vec![0.0; elem];
            self.eval(body, env, &mut chunk).map(|()| {
                for (o, x) in place.iter_mut().zip(&chunk) {
                    *o += x;
                }
            })
        } else {
            self.eval(body, env, place)
        };
        env.idx.pop();
        r
    }

    /// The largest of the (scalar) terms over `lo..hi`; `-inf` when there are none.
    pub(super) fn max_loop(
        &self,
        lo_v: i64,
        hi_v: i64,
        body: &Node,
        env: &mut Env,
    ) -> Result<f64, Diagnostic> {
        let mut acc = crate::functions::MAX_EMPTY;
        let mut t = [0.0];
        for v in lo_v..hi_v {
            self.check_cancel(body.span)?;
            env.idx.push(v);
            self.eval(body, env, &mut t)?;
            env.idx.pop();
            acc = crate::functions::max_step(acc, t[0]);
        }
        Ok(acc)
    }

    pub(super) fn gen_loop(
        &self,
        lo_v: i64,
        extent: usize,
        body: &Node,
        env: &mut Env,
        out: &mut [f64],
    ) -> Result<(), Diagnostic> {
        let elem = body.numel();
        if elem == 0 {
            // Empty elements: only the run-time shape checks below can say anything.
            if body.checks {
                for t in 0..extent {
                    env.idx.push(lo_v + t as i64);
                    self.eval(body, env, &mut [])?;
                    env.idx.pop();
                }
            }
            return Ok(());
        }
        // The outermost loop of an evaluation reports its iterations as progress.
        let progress = self.monitor.filter(|_| env.idx.is_empty());
        if let Some(m) = progress {
            m.restart_count(extent as u64);
        }
        // The binder values lo..lo+extent fit in i64: lo + extent is the checked `hi`.
        if !(self.parallel && extent >= 2 && out.len() >= PAR_MIN_ELEMENTS) {
            for (t, chunk) in out.chunks_mut(elem).enumerate() {
                self.check_cancel(body.span)?;
                env.idx.push(lo_v + t as i64);
                self.eval(body, env, chunk)?;
                env.idx.pop();
                if let Some(m) = progress {
                    m.advance(1);
                }
            }
            return Ok(());
        }
        let base_idx = env.idx.len();
        let base_lets = env.lets.len();
        let template: &Env = env;
        // Iterations after a known failure are skipped, but earlier ones still run, so
        // the reported error is the first in iteration order, as in a sequential run.
        let first_failure = AtomicUsize::new(usize::MAX);
        let failure: Mutex<Option<(usize, Diagnostic)>> = Mutex::new(None);
        out.par_chunks_mut(elem).enumerate().for_each_init(
            || template.clone(),
            |local, (t, chunk)| {
                if t > first_failure.load(Ordering::Relaxed) {
                    return;
                }
                // An earlier failed iteration may have left the environment dirty.
                local.idx.truncate(base_idx);
                local.lets.truncate(base_lets);
                local.pending.clear();
                local.idx.push(lo_v + t as i64);
                let result = self
                    .check_cancel(body.span)
                    .and_then(|()| self.eval(body, local, chunk));
                if let Some(m) = progress {
                    m.advance(1);
                }
                if let Err(e) = result {
                    first_failure.fetch_min(t, Ordering::Relaxed);
                    let mut slot = failure.lock().unwrap_or_else(PoisonError::into_inner);
                    if slot.as_ref().is_none_or(|(u, _)| t < *u) {
                        *slot = Some((t, e));
                    }
                }
            },
        );
        match failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }

    pub(super) fn binary(
        &self,
        node: &Node,
        op: BinOp,
        lhs: &Node,
        rhs: &Node,
        env: &mut Env,
        out: &mut [f64],
    ) -> Result<(), Diagnostic> {
        match op {
            BinOp::Add | BinOp::Sub => {
                self.eval(lhs, env, out)?;
                let mut small = [0.0];
                let mut big = Vec::new();
                let t: &mut [f64] = if out.len() == 1 {
                    &mut small
                } else {
                    big.resize(out.len(), 0.0);
                    &mut big
                };
                self.eval(rhs, env, t)?;
                if op == BinOp::Add {
                    out.iter_mut().zip(t.iter()).for_each(|(o, x)| *o += x);
                } else {
                    out.iter_mut().zip(t.iter()).for_each(|(o, x)| *o -= x);
                }
                Ok(())
            }
            BinOp::Mul | BinOp::Div => {
                let [slot] = out else {
                    return Err(internal(node.span, "scalar operation on a tensor"));
                };
                let mut a = [0.0];
                let mut b = [0.0];
                self.eval(lhs, env, &mut a)?;
                self.eval(rhs, env, &mut b)?;
                *slot = if op == BinOp::Mul {
                    a[0] * b[0]
                } else {
                    if b[0] == 0.0 {
                        return Err(at(
                            Diagnostic::error("E0501", format!("division by zero ({} / 0)", a[0])),
                            node.span,
                            "the divisor is 0 here",
                        )
                        .with_help(
                            "a guard `[p] * (x / d)` skips the division wherever `p` is false; \
                             use one to exclude the positions where the divisor is 0",
                        ));
                    }
                    a[0] / b[0]
                };
                Ok(())
            }
        }
    }

    pub(super) fn transpose(
        &self,
        node: &Node,
        a: &Node,
        env: &mut Env,
        out: &mut [f64],
    ) -> Result<(), Diagnostic> {
        let p = env.pending.len();
        if p >= 2 {
            // transpose(e)[i][j] = e[j][i].
            env.pending.swap(p - 1, p - 2);
            let r = self.eval(a, env, out);
            env.pending.swap(p - 1, p - 2);
            return r;
        }
        let n = a.dim(0);
        let m = a.dim(1);
        let r = a.stride(2);
        if r == 0 {
            return Ok(());
        }
        if let Some(i) = env.pending.pop() {
            // transpose(e)[i] = gen j < |e|: e[j][i].
            let mut result = Ok(());
            for (j, chunk) in out.chunks_mut(r).enumerate() {
                env.pending.push(i);
                env.pending.push(j as i64);
                result = self.eval(a, env, chunk);
                env.pending.truncate(p - 1);
                if result.is_err() {
                    break;
                }
            }
            env.pending.push(i);
            return result;
        }
        let mut tmp = vec![0.0; a.numel()];
        self.eval(a, env, &mut tmp)?;
        for i in 0..n {
            for j in 0..m {
                let src = tmp.get((i * m + j) * r..(i * m + j + 1) * r);
                let dst = out.get_mut((j * n + i) * r..(j * n + i + 1) * r);
                match (src, dst) {
                    (Some(src), Some(dst)) => dst.copy_from_slice(src),
                    _ => return Err(internal(node.span, "transpose out of range")),
                }
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn amount(
        &self,
        node: &Node,
        op: AmountOp,
        amount: &CIdx,
        k: usize,
        arg: &Node,
        env: &mut Env,
        out: &mut [f64],
    ) -> Result<(), Diagnostic> {
        let span = node.span;
        if !amount.is_const() {
            let actual = self.index(amount, env, span)?;
            if !usize::try_from(actual).is_ok_and(|a| a == k) {
                return Err(mismatch(
                    span,
                    format!(
                        "the amount of this `{}` is {actual} here but {k} where its shape was \
                         computed (it depends on an enclosing binder: a jagged tensor)",
                        op.name()
                    ),
                ));
            }
        }
        let n = arg.dim(0);
        let elem = arg.stride(1);
        let ki = k as i64;
        let p = env.pending.len();
        match op {
            AmountOp::Split => {
                let rows = node.dim(0);
                if p >= 2 {
                    // split(k, e)[i][j] = [i*k + j < |e|] * e[i*k + j] for 0 <= j < k.
                    let i = env.pending[p - 1];
                    let j = env.pending[p - 2];
                    if !(in_range(i, rows) && in_range(j, k)) {
                        out.fill(0.0);
                        return Ok(());
                    }
                    // i < cdiv(n, k) and j < k, so t < n + k: no overflow.
                    let t = i * ki + j;
                    if !in_range(t, n) {
                        out.fill(0.0);
                        return Ok(());
                    }
                    env.pending.truncate(p - 2);
                    env.pending.push(t);
                    let r = self.eval(arg, env, out);
                    env.pending.pop();
                    env.pending.push(j);
                    env.pending.push(i);
                    return r;
                }
                if let Some(i) = env.pending.pop() {
                    let mut result = Ok(());
                    if in_range(i, rows) {
                        for (j, chunk) in out.chunks_mut(elem.max(1)).enumerate() {
                            let t = i * ki + j as i64;
                            if in_range(t, n) {
                                env.pending.push(t);
                                result = self.eval(arg, env, chunk);
                                env.pending.pop();
                                if result.is_err() {
                                    break;
                                }
                            } else {
                                chunk.fill(0.0);
                            }
                        }
                    } else {
                        out.fill(0.0);
                    }
                    env.pending.push(i);
                    return result;
                }
                // Row-major, split(k, e) is e's data followed by a zero tail.
                let (head, tail) = split_out(out, arg.numel(), span)?;
                self.eval(arg, env, head)?;
                tail.fill(0.0);
                Ok(())
            }
            AmountOp::PadL => match env.pending.last().copied() {
                Some(i) if i < ki => {
                    out.fill(0.0);
                    Ok(())
                }
                Some(i) => self.with_top(env, i - ki, |env| self.eval(arg, env, out)),
                None => {
                    let (head, tail) = split_out(out, k * elem, span)?;
                    head.fill(0.0);
                    self.eval(arg, env, tail)
                }
            },
            AmountOp::PadR => match env.pending.last().copied() {
                Some(i) if in_range(i, n) => self.eval(arg, env, out),
                Some(_) => {
                    out.fill(0.0);
                    Ok(())
                }
                None => {
                    let (head, tail) = split_out(out, arg.numel(), span)?;
                    self.eval(arg, env, head)?;
                    tail.fill(0.0);
                    Ok(())
                }
            },
            AmountOp::TruncL | AmountOp::TruncR => {
                let kept = node.dim(0);
                let skip = if op == AmountOp::TruncL { k } else { 0 };
                match env.pending.last().copied() {
                    Some(i) if in_range(i, kept) => {
                        self.with_top(env, i + skip as i64, |env| self.eval(arg, env, out))
                    }
                    Some(_) => {
                        out.fill(0.0);
                        Ok(())
                    }
                    None => {
                        let mut tmp = vec![0.0; arg.numel()];
                        self.eval(arg, env, &mut tmp)?;
                        let start = skip * elem;
                        let src = tmp
                            .get(start..start + out.len())
                            .ok_or_else(|| internal(span, "truncation out of range"))?;
                        out.copy_from_slice(src);
                        Ok(())
                    }
                }
            }
        }
    }
}
