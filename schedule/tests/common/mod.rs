//! What the schedule crate's tests share: a fixed machine, so that what they assert
//! does not depend on the machine that runs them.

use atl_schedule::machine::Machine;
use atl_schedule::nest::{Loop, Nest, Read};

/// An AVX-512 machine with 32 vector registers, 32 KiB L1d, 1 MiB L2, 32 MiB L3 and
/// 2 hardware threads (the Zen 4 the figures in the notes come from).
pub fn avx512_machine() -> Machine {
    Machine {
        isa: "avx512f".into(),
        vector_bytes: 64,
        vector_registers: 32,
        l1d: 32 << 10,
        l2: 1 << 20,
        l3: 32 << 20,
        cores: 2,
    }
}

/// A nest with one scalar operation per iteration, no guards and nothing around it
/// (no other stage's schedule, no reserved names).
#[allow(dead_code)] // not every test file builds nests by hand
pub fn nest(
    def: &str,
    gens: Vec<Loop>,
    sums: Vec<Loop>,
    reads: Vec<Read>,
    input_shapes: Vec<(String, Vec<i64>)>,
) -> Nest {
    Nest {
        def: def.into(),
        gens,
        sums,
        reads,
        input_shapes,
        layouts: Default::default(),
        ops: 1,
        guard_vars: Default::default(),
        prefix: Vec::new(),
        suffix: Vec::new(),
        spellings: Default::default(),
        reserved: Default::default(),
    }
}
