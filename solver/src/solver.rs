//! The prover front: a cache, then the fast path, then z3; with counters for
//! benchmarks and diagnostics.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use atl_lang::index::Pred;

use crate::query::{Facts, Verdict, demeta_pred};
use crate::{arrays, fast, smt};

/// z3's deterministic resource limit per check (`rlimit`, a count of z3's internal
/// operations, so the outcome does not depend on machine load). Linear side
/// conditions need a tiny fraction of it; non-linear ones such as
/// `(i*k + j) / k == i` need a few hundred thousand. A hopeless query stops after
/// roughly 1–10 s, depending on the theory.
pub const DEFAULT_RLIMIT: u32 = 1_000_000;

/// Entries kept before the cache is emptied (a crude bound on memory; a derivation
/// asks far fewer distinct questions).
const CACHE_CAPACITY: usize = 100_000;

/// How a [`Solver`] decides queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SolverConfig {
    /// z3's `rlimit` per check (deterministic, unlike a timeout).
    pub rlimit: u32,
    /// Try the linear/interval fast path before z3.
    pub fast_path: bool,
    /// Call z3 when the fast path does not prove the goal. Without it, the solver
    /// answers only "proved" or "unknown".
    pub use_z3: bool,
    /// Remember verdicts (all verdicts are deterministic, so caching is exact).
    pub cache: bool,
}

impl Default for SolverConfig {
    fn default() -> Self {
        SolverConfig {
            rlimit: DEFAULT_RLIMIT,
            fast_path: true,
            use_z3: true,
            cache: true,
        }
    }
}

/// Counters of how queries were answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SolverStats {
    /// Calls to [`Solver::prove`].
    pub queries: u64,
    /// Answered from the cache.
    pub cache_hits: u64,
    /// Proved by the fast path.
    pub fast_path_hits: u64,
    /// Sent to z3 (each may use one or two z3 checks).
    pub z3_calls: u64,
    pub z3_proved: u64,
    pub z3_refuted: u64,
    pub z3_unknown: u64,
}

#[derive(Default)]
struct Counters {
    queries: AtomicU64,
    cache_hits: AtomicU64,
    fast_path_hits: AtomicU64,
    z3_calls: AtomicU64,
    z3_proved: AtomicU64,
    z3_refuted: AtomicU64,
    z3_unknown: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    facts: Facts,
    goal: Pred,
}

/// The index-arithmetic prover. `Send + Sync`: share one across threads; the cache is
/// behind a mutex that is never held while proving.
pub struct Solver {
    config: SolverConfig,
    /// Verdicts by a hash of the query; colliding queries share a bucket.
    cache: Mutex<HashMap<u64, Vec<(Key, Verdict)>>>,
    counters: Counters,
}

impl std::fmt::Debug for Solver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Solver")
            .field("config", &self.config)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Default for Solver {
    fn default() -> Self {
        Solver::new()
    }
}

fn query_hash(facts: &Facts, goal: &Pred) -> u64 {
    // DefaultHasher::new() has fixed keys: the hash is the same in every run.
    let mut h = DefaultHasher::new();
    facts.hash(&mut h);
    goal.hash(&mut h);
    h.finish()
}

impl Solver {
    pub fn new() -> Solver {
        Solver::with_config(SolverConfig::default())
    }

    pub fn with_config(config: SolverConfig) -> Solver {
        Solver {
            config,
            cache: Mutex::new(HashMap::new()),
            counters: Counters::default(),
        }
    }

    pub fn config(&self) -> SolverConfig {
        self.config
    }

    /// Decides whether `facts` imply `goal` over the integers (sizes `>= 1`, other
    /// variables free unless bounded by a fact). Metavariables `?x` are treated as
    /// variables named `?x`.
    pub fn prove(&self, facts: &Facts, goal: &Pred) -> Verdict {
        bump(&self.counters.queries);
        let hash = query_hash(facts, goal);
        if self.config.cache
            && let Some(v) = self.lookup(hash, facts, goal)
        {
            bump(&self.counters.cache_hits);
            return v;
        }
        let verdict = self.decide(facts, goal);
        if self.config.cache {
            self.insert(hash, facts, goal, &verdict);
        }
        verdict
    }

    /// Like [`Solver::prove`], but only answers from the cache and the fast path;
    /// never calls z3. For callers that need a cheap, best-effort answer.
    pub fn prove_fast(&self, facts: &Facts, goal: &Pred) -> bool {
        if self.config.cache
            && let Some(v) = self.lookup(query_hash(facts, goal), facts, goal)
        {
            return v.is_proved();
        }
        match arrays::atomize(facts, goal) {
            Some((facts, goal)) => fast::proves(&facts, &goal),
            None => fast::proves(facts, goal),
        }
    }

    fn decide(&self, facts: &Facts, goal: &Pred) -> Verdict {
        let demeta;
        let (facts, goal) = if goal.has_meta() || facts.facts.iter().any(Pred::has_meta) {
            demeta = (
                Facts {
                    sizes: facts.sizes.clone(),
                    facts: facts.facts.iter().map(demeta_pred).collect(),
                    arrays: facts.arrays.clone(),
                },
                demeta_pred(goal),
            );
            (&demeta.0, &demeta.1)
        } else {
            (facts, goal)
        };
        let atomized;
        let (facts, goal) = match arrays::atomize(facts, goal) {
            Some(query) => {
                atomized = query;
                (&atomized.0, &atomized.1)
            }
            None => (facts, goal),
        };
        if self.config.fast_path && fast::proves(facts, goal) {
            bump(&self.counters.fast_path_hits);
            return Verdict::Proved;
        }
        if !self.config.use_z3 {
            return Verdict::Unknown("not proved by the fast path (z3 disabled)".to_string());
        }
        bump(&self.counters.z3_calls);
        let verdict = smt::decide(facts, goal, self.config.rlimit);
        bump(match verdict {
            Verdict::Proved => &self.counters.z3_proved,
            Verdict::Refuted(_) => &self.counters.z3_refuted,
            Verdict::Unknown(_) => &self.counters.z3_unknown,
        });
        verdict
    }

    fn lookup(&self, hash: u64, facts: &Facts, goal: &Pred) -> Option<Verdict> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .get(&hash)?
            .iter()
            .find(|(k, _)| &k.facts == facts && &k.goal == goal)
            .map(|(_, v)| v.clone())
    }

    fn insert(&self, hash: u64, facts: &Facts, goal: &Pred, verdict: &Verdict) {
        let key = Key {
            facts: facts.clone(),
            goal: goal.clone(),
        };
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= CACHE_CAPACITY {
            cache.clear();
        }
        let bucket = cache.entry(hash).or_default();
        if !bucket.iter().any(|(k, _)| k == &key) {
            bucket.push((key, verdict.clone()));
        }
    }

    /// Forgets all cached verdicts (the counters are kept).
    pub fn clear_cache(&self) {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    pub fn stats(&self) -> SolverStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let c = &self.counters;
        SolverStats {
            queries: get(&c.queries),
            cache_hits: get(&c.cache_hits),
            fast_path_hits: get(&c.fast_path_hits),
            z3_calls: get(&c.z3_calls),
            z3_proved: get(&c.z3_proved),
            z3_refuted: get(&c.z3_refuted),
            z3_unknown: get(&c.z3_unknown),
        }
    }
}
