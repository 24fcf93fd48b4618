//! What the CLI's integration tests share: running `atl` in process, and writing
//! `.npy` inputs independently of the CLI's own reader.

// Each test crate includes this module and uses part of it.
#![allow(dead_code)]

use std::path::Path;

use atl_cli::run;

/// Runs `atl ARGS…` in this process; returns (status, stdout, stderr).
pub fn atl(args: &[&str]) -> (i32, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let mut all = vec!["atl"];
    all.extend_from_slice(args);
    let code = run(all, &mut out, &mut err, false);
    (
        code,
        String::from_utf8(out).expect("stdout is UTF-8"),
        String::from_utf8(err).expect("stderr is UTF-8"),
    )
}

/// `data` as a float64 C-order `.npy` file of the given shape (format 1.0, written
/// here so that a test does not rely on the CLI's own reader being right), at
/// `dir/name`; returns the path.
pub fn write_npy(dir: &Path, name: &str, shape: &[usize], data: &[f64]) -> String {
    assert_eq!(data.len(), shape.iter().product::<usize>());
    std::fs::create_dir_all(dir).expect("temp dir");
    let dims: Vec<String> = shape.iter().map(|d| format!("{d}, ")).collect();
    let mut header = format!(
        "{{'descr': '<f8', 'fortran_order': False, 'shape': ({}), }}",
        dims.concat().trim_end()
    );
    // Magic (6) + version (2) + header length (2) + header, padded to 64 with a newline.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for v in data {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    let file = dir.join(name);
    std::fs::write(&file, bytes).expect("write");
    file.display().to_string()
}

/// The values of a `--json` result of `atl eval` (`data`) or of a run's report
/// (`output.data`).
pub fn json_values(json: &str) -> Vec<f64> {
    let v: serde_json::Value = serde_json::from_str(json.trim()).expect("JSON");
    v["data"]
        .as_array()
        .or_else(|| v["output"]["data"].as_array())
        .unwrap_or_else(|| panic!("no data in {v}"))
        .iter()
        .map(|d| d.as_f64().expect("number"))
        .collect()
}
