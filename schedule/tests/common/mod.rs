//! What the schedule crate's tests share: a fixed machine, so that what they assert
//! does not depend on the machine that runs them.

use atl_schedule::machine::Machine;

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
