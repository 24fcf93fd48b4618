//! The soundness fuzzer's deterministic generator: the project's one splitmix64
//! (`atl_lang::rng`), so a case is reproduced from its seed alone, whatever the platform.

pub use atl_lang::rng::SplitMix64 as Rng;
