//! Sparse matrices as users have them, read to their dense values: the fixtures in
//! `test_data/sparse` were written by scipy 1.17 (`scipy.sparse.save_npz` of
//! `csr_matrix`, `csc_matrix`, `coo_matrix`, `csr_array` in float32 uncompressed,
//! `coo_array`, a COO matrix with a duplicate entry; `scipy.io.mmwrite` of a general
//! coordinate matrix, a symmetric one and a dense array) from the matrices written out
//! below by hand. Malformed archives — truncated, corrupted, or well-formed zips whose
//! arrays break the format's invariants — are refused with a message naming the fault.

use std::io::Write;
use std::path::PathBuf;

use atl_driver::sparse_file::{SparseMatrix, read};

/// The 3 x 4 matrix of every `m*` fixture.
const M: [f64; 12] = [1., 0., 2., 0., 0., 0., 0., 3., 4., 5., 0., 0.];

fn fixture(name: &str) -> (String, Vec<u8>) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("test_data/sparse")
        .join(name);
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .expect("extension")
        .to_string();
    (extension, std::fs::read(&path).expect("fixture"))
}

fn dense(name: &str) -> (usize, usize, Vec<f64>) {
    let (extension, bytes) = fixture(name);
    let m = read(&extension, &bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    (m.rows, m.cols, m.to_dense())
}

#[test]
fn scipy_archives_and_matrix_market_files_give_the_matrix_written() {
    for name in [
        "m_csr.npz",
        "m_csc.npz",
        "m_coo.npz",
        "m_csr_array_f32.npz",
        "m_coo_array.npz",
        "m_coo_duplicates.npz",
        "m.mtx",
        "m_array.mtx",
    ] {
        assert_eq!(dense(name), (3, 4, M.to_vec()), "{name}");
    }
    // Stored as its lower triangle.
    assert_eq!(
        dense("s_symmetric.mtx"),
        (3, 3, vec![1., 0., 7., 0., 2., 0., 7., 0., 3.])
    );
}

/// Read into CSR and CSC by the level formats (without a dense matrix), the fixtures
/// give the arrays scipy itself stores for them (`indptr`, `indices`, `data` of
/// `scipy.sparse.load_npz`, printed by scipy 1.17), whatever file they come from.
#[test]
fn the_level_formats_give_scipys_own_csr_and_csc_arrays() {
    use atl_lang::formats::{Level, LevelIndex};
    let csr = [Level::Dense, Level::Compressed];
    for name in ["m_csr.npz", "m_coo.npz", "m.mtx", "m_coo_duplicates.npz"] {
        let (extension, bytes) = fixture(name);
        let m = read(&extension, &bytes).expect("reads");
        let c = m.to_format(&csr, false).expect("CSR");
        assert_eq!(
            c.levels[1],
            LevelIndex::Compressed {
                dim: 4,
                pos: vec![0, 2, 3, 5],
                crd: vec![0, 2, 3, 0, 1],
            },
            "{name}"
        );
        assert_eq!(c.vals, [1., 2., 3., 4., 5.], "{name}");
        let t = m.to_format(&csr, true).expect("CSC");
        assert_eq!(
            t.levels[1],
            LevelIndex::Compressed {
                dim: 3,
                pos: vec![0, 2, 3, 4, 5],
                crd: vec![0, 2, 2, 0, 1],
            },
            "{name}"
        );
        assert_eq!(t.vals, [1., 4., 5., 2., 3.], "{name}");
    }
}

#[test]
fn formats_other_than_csr_csc_coo_are_refused_by_name() {
    let (extension, bytes) = fixture("m_bsr.npz");
    let err = read(&extension, &bytes).expect_err("bsr");
    assert!(
        err.contains("sparse format `bsr` is not supported"),
        "{err}"
    );
}

#[test]
fn truncated_and_corrupted_archives_are_refused() {
    let (_, bytes) = fixture("m_csr.npz");
    for cut in [0, 4, 100, bytes.len() / 2, bytes.len() - 1] {
        assert!(read("npz", &bytes[..cut]).is_err(), "cut at {cut}");
    }
    // Every single-byte corruption is refused or read to a matrix of the right shape
    // (a byte of a value, or of a header's padding, may change and still be valid):
    // never a panic, never an index out of range.
    for k in 0..bytes.len() {
        let mut edited = bytes.clone();
        edited[k] ^= 0x5a;
        if let Ok(m) = read("npz", &edited) {
            assert!(m.entries.iter().all(|(r, c, _)| *r < m.rows && *c < m.cols));
        }
    }
}

/// The bytes of an `.npy` file of little-endian `descr` elements.
fn npy(descr: &str, shape: &[usize], body: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape_text = match dims.len() {
        0 => "()".to_string(),
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}\n");
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend(body);
    out
}

fn ints(values: &[i64]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|v| (*v as i32).to_le_bytes())
        .collect()
}

/// A CSR archive written member by member (stored, not deflated).
fn csr(shape: &[i64], indptr: &[i64], indices: &[i64], data: &[f64]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let shape_bytes: Vec<u8> = shape.iter().flat_map(|v| v.to_le_bytes()).collect();
    let data_bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
    for (name, bytes) in [
        ("format.npy", npy("|S3", &[], b"csr")),
        ("shape.npy", npy("<i8", &[shape.len()], &shape_bytes)),
        ("indptr.npy", npy("<i4", &[indptr.len()], &ints(indptr))),
        ("indices.npy", npy("<i4", &[indices.len()], &ints(indices))),
        ("data.npy", npy("<f8", &[data.len()], &data_bytes)),
    ] {
        zip.start_file(name, options).expect("member");
        zip.write_all(&bytes).expect("written");
    }
    zip.finish().expect("finished").into_inner()
}

#[test]
fn archives_whose_arrays_break_the_format_are_refused_with_the_reason() {
    // The well-formed one first: the test's writer is right.
    let good = csr(&[2, 3], &[0, 1, 2], &[2, 0], &[5., 6.]);
    let m: SparseMatrix = read("npz", &good).expect("reads");
    assert_eq!(m.to_dense(), [0., 0., 5., 6., 0., 0.]);
    for (archive, says) in [
        (
            csr(&[2, 3], &[0, 1, 2], &[3, 0], &[5., 6.]),
            "`indices[0]` is 3, outside 0..3",
        ),
        (
            csr(&[2, 3], &[0, 2, 1], &[0, 0], &[5., 6.]),
            "must run from 0 to the number of entries",
        ),
        (
            csr(&[2, 3], &[0, 2, 1, 2], &[0, 0], &[5., 6.]),
            "`indptr` has 4 elements",
        ),
        (
            csr(&[2, 3], &[1, 1, 2], &[0, 0], &[5., 6.]),
            "runs from 1 to 2",
        ),
        (
            csr(&[2, 3], &[0, 1, 2], &[0, 0], &[5.]),
            "`indices` and `data` have 2 and 1",
        ),
        (
            csr(&[2, 3, 4], &[0, 1, 2], &[0, 0], &[5., 6.]),
            "`shape` has 3 dimensions",
        ),
        (
            csr(&[2, 3], &[0, 1, 2], &[-1, 0], &[5., 6.]),
            "`indices` has a negative element",
        ),
    ] {
        let err = read("npz", &archive).expect_err(says);
        assert!(err.contains(says), "expected `{says}`: {err}");
    }
    // A decreasing `indptr` inside 0..nnz.
    let err =
        read("npz", &csr(&[3, 3], &[0, 2, 1, 2], &[0, 0], &[5., 6.])).expect_err("decreasing");
    assert!(err.contains("`indptr` decreases at 1"), "{err}");
}
