//! The machine the search runs on, detected at run time: the vector extension (and so
//! the vector width and the number of vector registers the register tile must fit
//! in), the data caches and the cores. The cost model reads it, and the result records
//! it as a comment, so a schedule found on one machine says where it came from.

use std::path::Path;

/// What the cost model knows of the machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// The widest vector extension the CPU reports (`avx512f`, `avx2`, `sse2`, or
    /// `scalar` elsewhere).
    pub isa: String,
    /// Bytes in one vector register of that extension.
    pub vector_bytes: usize,
    /// Architectural vector registers (32 with AVX-512, 16 with AVX2 and SSE).
    pub vector_registers: usize,
    /// Data cache sizes in bytes, level 1 to 3 (0 where the system does not say).
    pub l1d: usize,
    pub l2: usize,
    pub l3: usize,
    /// Hardware threads available to this process.
    pub cores: usize,
}

impl Machine {
    /// The machine this process runs on.
    pub fn detect() -> Machine {
        let (isa, vector_bytes, vector_registers) = vector_extension();
        let caches = Path::new("/sys/devices/system/cpu/cpu0/cache");
        Machine {
            isa: isa.to_string(),
            vector_bytes,
            vector_registers,
            l1d: cache_size(caches, 1).unwrap_or(32 << 10),
            l2: cache_size(caches, 2).unwrap_or(512 << 10),
            l3: cache_size(caches, 3).unwrap_or(8 << 20),
            cores: std::thread::available_parallelism().map_or(1, usize::from),
        }
    }

    /// Elements of `element_bytes` bytes in one vector register (at least 1).
    pub fn lanes(&self, element_bytes: usize) -> usize {
        (self.vector_bytes / element_bytes.max(1)).max(1)
    }

    /// One line describing the machine, for the result's comment and the report.
    pub fn describe(&self) -> String {
        format!(
            "{}: {}-bit vectors, {} vector registers, L1d {} KiB, L2 {} KiB, L3 {} KiB, {} hardware thread(s)",
            self.isa,
            self.vector_bytes * 8,
            self.vector_registers,
            self.l1d >> 10,
            self.l2 >> 10,
            self.l3 >> 10,
            self.cores
        )
    }
}

#[cfg(target_arch = "x86_64")]
fn vector_extension() -> (&'static str, usize, usize) {
    if std::arch::is_x86_feature_detected!("avx512f") {
        ("avx512f", 64, 32)
    } else if std::arch::is_x86_feature_detected!("avx2") {
        ("avx2", 32, 16)
    } else {
        ("sse2", 16, 16)
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn vector_extension() -> (&'static str, usize, usize) {
    ("scalar", 8, 16)
}

/// The size of the data (or unified) cache of `level` under `dir`
/// (`/sys/devices/system/cpu/cpu0/cache`: `index*/level`, `type`, `size` like `48K`).
pub fn cache_size(dir: &Path, level: u32) -> Option<usize> {
    let entries = std::fs::read_dir(dir).ok()?;
    for entry in entries.flatten() {
        let path = entry.path();
        let read = |name: &str| std::fs::read_to_string(path.join(name)).ok();
        let Some(l) = read("level").and_then(|s| s.trim().parse::<u32>().ok()) else {
            continue;
        };
        let kind = read("type").unwrap_or_default();
        if l == level && kind.trim() != "Instruction" {
            return read("size").and_then(|s| parse_cache_size(s.trim()));
        }
    }
    None
}

/// `48K`, `1024K`, `32M`, `512` (bytes) as bytes.
pub fn parse_cache_size(text: &str) -> Option<usize> {
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((k, _)) => text.split_at(k),
        None => (text, ""),
    };
    let n: usize = digits.parse().ok()?;
    let scale = match unit.trim() {
        "" => 1,
        "K" | "KB" | "KiB" => 1 << 10,
        "M" | "MB" | "MiB" => 1 << 20,
        "G" | "GB" | "GiB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_are_read_in_the_kernels_units() {
        assert_eq!(parse_cache_size("48K"), Some(48 * 1024));
        assert_eq!(parse_cache_size("32M"), Some(32 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("12X"), None);
        assert_eq!(parse_cache_size("K"), None);
    }

    #[test]
    fn a_sysfs_tree_gives_each_levels_data_cache() {
        let dir = tempfile::tempdir().expect("tempdir");
        let entry = |k: u32, level: &str, kind: &str, size: &str| {
            let d = dir.path().join(format!("index{k}"));
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::write(d.join("level"), level).expect("level");
            std::fs::write(d.join("type"), kind).expect("type");
            std::fs::write(d.join("size"), size).expect("size");
        };
        entry(0, "1\n", "Data\n", "48K\n");
        entry(1, "1\n", "Instruction\n", "32K\n");
        entry(2, "2\n", "Unified\n", "2048K\n");
        assert_eq!(cache_size(dir.path(), 1), Some(48 << 10));
        assert_eq!(cache_size(dir.path(), 2), Some(2 << 20));
        assert_eq!(cache_size(dir.path(), 3), None);
    }

    #[test]
    fn lanes_follow_the_element_size() {
        let m = Machine {
            isa: "avx2".into(),
            vector_bytes: 32,
            vector_registers: 16,
            l1d: 32 << 10,
            l2: 1 << 20,
            l3: 16 << 20,
            cores: 2,
        };
        assert_eq!(m.lanes(4), 8);
        assert_eq!(m.lanes(8), 4);
        assert!(
            m.describe()
                .starts_with("avx2: 256-bit vectors, 16 vector registers")
        );
    }
}
