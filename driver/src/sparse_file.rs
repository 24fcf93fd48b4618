//! Sparse matrices from the files users have: Matrix Market `.mtx` (coordinate —
//! `real`, `integer` or `pattern`; `general`, `symmetric` or `skew-symmetric` — and
//! `array real general`) and scipy's `scipy.sparse.save_npz` archives (`csr`, `csc`
//! and `coo`, matrices and arrays, compressed or not). Each is read into the list of
//! its stored entries and checked entry by entry: indices in range, `indptr`
//! non-decreasing from 0 to the number of entries, arrays of matching lengths, integer
//! index types, real values. Anything else is refused with a message that says what
//! was found; nothing here panics on any input. Duplicate entries add up, as scipy's
//! `toarray()` adds them.

use std::io::Read;

use atl_lang::formats::{Compressed, Entry, FormatError, Level, from_entries};

use crate::npy::{RawNpy, parse_raw};

/// A matrix as its stored entries `(row, column, value)`, in the file's order.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseMatrix {
    pub rows: usize,
    pub cols: usize,
    pub entries: Vec<(usize, usize, f64)>,
}

impl SparseMatrix {
    /// The matrix in a format of level formats (`[Dense, Compressed]`: CSR), built
    /// from its entries without the dense matrix; `transposed` stores the transpose
    /// (CSC from `[Dense, Compressed]`).
    pub fn to_format(
        &self,
        formats: &[Level],
        transposed: bool,
    ) -> Result<Compressed, FormatError> {
        let entries: Vec<Entry> = self
            .entries
            .iter()
            .map(|&(r, c, v)| (if transposed { vec![c, r] } else { vec![r, c] }, v))
            .collect();
        let shape = if transposed {
            [self.cols, self.rows]
        } else {
            [self.rows, self.cols]
        };
        from_entries(formats, &shape, &entries)
    }

    /// The dense row-major values (duplicates added). The caller bounds `rows * cols`
    /// first (it is compared with the input's declared shape).
    pub fn to_dense(&self) -> Vec<f64> {
        let mut data = vec![0.0; self.rows * self.cols];
        for &(r, c, v) in &self.entries {
            data[r * self.cols + c] += v;
        }
        data
    }
}

/// Reads a sparse matrix from a file's bytes, by its extension (`mtx` or `npz`).
pub fn read(extension: &str, bytes: &[u8]) -> Result<SparseMatrix, String> {
    match extension {
        "mtx" => {
            let text = std::str::from_utf8(bytes)
                .map_err(|_| "a Matrix Market file is text, and this one is not UTF-8")?;
            read_matrix_market(text)
        }
        "npz" => read_npz(bytes),
        other => Err(format!(
            "`.{other}` is not a sparse matrix file (`.mtx`, `.npz`)"
        )),
    }
}

/// Whether a path names a sparse matrix file this module reads.
pub fn is_sparse_path(path: &str) -> bool {
    path.ends_with(".mtx") || path.ends_with(".npz")
}

/// Parses a Matrix Market file.
pub fn read_matrix_market(text: &str) -> Result<SparseMatrix, String> {
    let mut lines = text.lines().enumerate();
    let (_, banner) = lines.next().ok_or("the file is empty")?;
    let words: Vec<String> = banner
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    let [head, object, layout, field, symmetry] = words.as_slice() else {
        return Err(format!(
            "line 1: expected `%%MatrixMarket matrix coordinate|array FIELD SYMMETRY`, found `{banner}`"
        ));
    };
    if head != "%%matrixmarket" || object != "matrix" {
        return Err(format!(
            "line 1: expected `%%MatrixMarket matrix …`, found `{banner}`"
        ));
    }
    let coordinate = match layout.as_str() {
        "coordinate" => true,
        "array" => false,
        other => {
            return Err(format!(
                "line 1: unknown layout `{other}` (coordinate or array)"
            ));
        }
    };
    let pattern = match field.as_str() {
        "real" | "double" | "integer" => false,
        "pattern" if coordinate => true,
        "complex" => return Err("line 1: complex matrices are not supported".into()),
        other => {
            return Err(format!(
                "line 1: field `{other}` is not supported (real, integer, or pattern for coordinates)"
            ));
        }
    };
    let (mirror, sign) = match symmetry.as_str() {
        "general" => (false, 1.0),
        "symmetric" => (true, 1.0),
        "skew-symmetric" => (true, -1.0),
        other => {
            return Err(format!(
                "line 1: symmetry `{other}` is not supported (general, symmetric, skew-symmetric)"
            ));
        }
    };
    if mirror && !coordinate {
        return Err("line 1: only `array real general` is supported for dense layouts".into());
    }
    // Comments and blank lines, then the size line, then the data lines.
    let mut data = lines.filter(|(_, l)| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('%')
    });
    let (size_at, size_line) = data.next().ok_or("no size line after the header")?;
    let sizes: Vec<&str> = size_line.split_whitespace().collect();
    let count = |k: usize| -> Result<usize, String> {
        sizes
            .get(k)
            .and_then(|w| w.parse::<usize>().ok())
            .ok_or_else(|| format!("line {}: malformed size line `{size_line}`", size_at + 1))
    };
    let expected_words = if coordinate { 3 } else { 2 };
    if sizes.len() != expected_words {
        return Err(format!(
            "line {}: the size line has {} numbers, expected {expected_words}",
            size_at + 1,
            sizes.len()
        ));
    }
    let (rows, cols) = (count(0)?, count(1)?);
    if mirror && rows != cols {
        return Err(format!(
            "line {}: a {symmetry} matrix must be square, this one is {rows} x {cols}",
            size_at + 1
        ));
    }
    let value = |word: Option<&str>, at: usize| -> Result<f64, String> {
        let w = word.ok_or_else(|| format!("line {}: a value is missing", at + 1))?;
        w.parse::<f64>()
            .map_err(|_| format!("line {}: `{w}` is not a number", at + 1))
    };
    let mut entries = Vec::new();
    if coordinate {
        let nnz = count(2)?;
        for (at, line) in data.by_ref().take(nnz) {
            let mut w = line.split_whitespace();
            let mut index = |what: &str, extent: usize| -> Result<usize, String> {
                let word = w
                    .next()
                    .ok_or_else(|| format!("line {}: the {what} index is missing", at + 1))?;
                match word.parse::<usize>() {
                    Ok(k) if (1..=extent).contains(&k) => Ok(k - 1),
                    _ => Err(format!(
                        "line {}: {what} index `{word}` is not in 1..={extent}",
                        at + 1
                    )),
                }
            };
            let r = index("row", rows)?;
            let c = index("column", cols)?;
            let v = if pattern { 1.0 } else { value(w.next(), at)? };
            if w.next().is_some() {
                return Err(format!("line {}: more numbers than an entry has", at + 1));
            }
            if mirror && c > r {
                return Err(format!(
                    "line {}: a {symmetry} file stores the lower triangle, but ({}, {}) is above the diagonal",
                    at + 1,
                    r + 1,
                    c + 1
                ));
            }
            if mirror && sign < 0.0 && r == c {
                return Err(format!(
                    "line {}: a skew-symmetric matrix has no diagonal entries",
                    at + 1
                ));
            }
            entries.push((r, c, v));
            if mirror && r != c {
                entries.push((c, r, sign * v));
            }
        }
        let stored = entries.iter().filter(|(r, c, _)| !mirror || c <= r).count();
        if stored < nnz {
            return Err(format!(
                "the size line announces {nnz} entries, the file has {stored}"
            ));
        }
    } else {
        // Column-major values, one per line.
        let total = rows
            .checked_mul(cols)
            .ok_or("the matrix is too large to read")?;
        let mut read = 0usize;
        for (at, line) in data.by_ref().take(total) {
            let mut w = line.split_whitespace();
            let v = value(w.next(), at)?;
            if w.next().is_some() {
                return Err(format!(
                    "line {}: one value per line in an array file",
                    at + 1
                ));
            }
            if v != 0.0 {
                entries.push((read % rows, read / rows, v));
            }
            read += 1;
        }
        if read < total {
            return Err(format!(
                "the size line announces {rows} x {cols} = {total} values, the file has {read}"
            ));
        }
    }
    if let Some((at, _)) = data.next() {
        return Err(format!(
            "line {}: more entries than the size line announces",
            at + 1
        ));
    }
    Ok(SparseMatrix {
        rows,
        cols,
        entries,
    })
}

/// The members of a `.npz` archive: name (without `.npy`) and bytes.
fn npz_members(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| format!("not a .npz archive (a zip file): {e}"))?;
    let mut out = Vec::new();
    for k in 0..archive.len() {
        let mut member = archive
            .by_index(k)
            .map_err(|e| format!("cannot read member {k} of the archive: {e}"))?;
        let name = member.name().trim_end_matches(".npy").to_string();
        // Read no further than the size the archive declares (a member that inflates
        // past it, a zip bomb, is refused rather than filling memory); the zip reader
        // checks the CRC of what it reads in full.
        let declared = member.size();
        let mut data = Vec::new();
        (&mut member)
            .take(declared.saturating_add(1))
            .read_to_end(&mut data)
            .map_err(|e| format!("cannot read `{name}` in the archive: {e}"))?;
        if data.len() as u64 != declared {
            return Err(format!(
                "`{name}` in the archive does not inflate to the {declared} bytes it declares"
            ));
        }
        out.push((name, data));
    }
    Ok(out)
}

/// Parses a `scipy.sparse.save_npz` archive.
pub fn read_npz(bytes: &[u8]) -> Result<SparseMatrix, String> {
    let members = npz_members(bytes)?;
    let member = |name: &str| -> Result<RawNpy<'_>, String> {
        let (_, data) = members.iter().find(|(n, _)| n == name).ok_or_else(|| {
            format!("the archive has no `{name}` array (is it from scipy.sparse.save_npz?)")
        })?;
        parse_raw(data).map_err(|m| format!("`{name}`: {m}"))
    };
    let format = text_of(&member("format")?)?;
    let shape = integers(&member("shape")?, "shape")?;
    let [rows, cols] = shape.as_slice() else {
        return Err(format!(
            "`shape` has {} dimensions; a sparse matrix has 2",
            shape.len()
        ));
    };
    let (rows, cols) = (*rows, *cols);
    let values = reals(&member("data")?)?;
    let entries = match format.as_str() {
        "coo" => {
            let row = integers(&member("row")?, "row")?;
            let col = integers(&member("col")?, "col")?;
            if row.len() != values.len() || col.len() != values.len() {
                return Err(format!(
                    "`row`, `col` and `data` have {}, {} and {} elements; they must be equal",
                    row.len(),
                    col.len(),
                    values.len()
                ));
            }
            let mut entries = Vec::with_capacity(values.len());
            for (k, ((r, c), v)) in row.iter().zip(&col).zip(&values).enumerate() {
                if *r >= rows || *c >= cols {
                    return Err(format!(
                        "entry {k} is at ({r}, {c}), outside the {rows} x {cols} matrix"
                    ));
                }
                entries.push((*r, *c, *v));
            }
            entries
        }
        "csr" | "csc" => {
            let (outer, inner) = if format == "csr" {
                (rows, cols)
            } else {
                (cols, rows)
            };
            let indptr = integers(&member("indptr")?, "indptr")?;
            let indices = integers(&member("indices")?, "indices")?;
            if indptr.len() != outer + 1 {
                return Err(format!(
                    "`indptr` has {} elements; a {format} matrix with {outer} {} needs {}",
                    indptr.len(),
                    if format == "csr" { "rows" } else { "columns" },
                    outer + 1
                ));
            }
            if indices.len() != values.len() {
                return Err(format!(
                    "`indices` and `data` have {} and {} elements; they must be equal",
                    indices.len(),
                    values.len()
                ));
            }
            if indptr[0] != 0 || indptr[outer] != indices.len() {
                return Err(format!(
                    "`indptr` must run from 0 to the number of entries ({}), it runs from {} to {}",
                    indices.len(),
                    indptr[0],
                    indptr[outer]
                ));
            }
            let mut entries = Vec::with_capacity(values.len());
            for o in 0..outer {
                let (lo, hi) = (indptr[o], indptr[o + 1]);
                if hi < lo {
                    return Err(format!("`indptr` decreases at {o}: {lo} then {hi}"));
                }
                for k in lo..hi {
                    let i = indices[k];
                    if i >= inner {
                        return Err(format!("`indices[{k}]` is {i}, outside 0..{inner}"));
                    }
                    let (r, c) = if format == "csr" { (o, i) } else { (i, o) };
                    entries.push((r, c, values[k]));
                }
            }
            entries
        }
        other => {
            return Err(format!(
                "sparse format `{other}` is not supported (csr, csc, coo): save `m.tocsr()`"
            ));
        }
    };
    Ok(SparseMatrix {
        rows,
        cols,
        entries,
    })
}

/// The text of a 0-d bytes or unicode array (`format`).
fn text_of(raw: &RawNpy<'_>) -> Result<String, String> {
    let text = match raw.descr.get(..2) {
        Some("|S") => raw.body.iter().map(|b| *b as char).collect::<String>(),
        Some("<U") => raw
            .body
            .chunks_exact(4)
            .filter_map(|c| char::from_u32(u32::from_le_bytes(c.try_into().ok()?)))
            .collect(),
        _ => {
            return Err(format!(
                "`format` has element type '{}', not text",
                raw.descr
            ));
        }
    };
    Ok(text.trim_end_matches('\0').to_string())
}

/// The non-negative integers of an index array (`shape`, `row`, `indptr`, …).
fn integers(raw: &RawNpy<'_>, name: &str) -> Result<Vec<usize>, String> {
    let size = match raw.descr.as_str() {
        "<i4" | "<u4" => 4,
        "<i8" | "<u8" => 8,
        "<i2" | "<u2" => 2,
        "|i1" | "|u1" => 1,
        other => {
            return Err(format!(
                "`{name}` has element type '{other}'; index arrays are integers"
            ));
        }
    };
    let signed = raw.descr.as_bytes()[1] == b'i';
    raw.body
        .chunks_exact(size)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            let negative = signed && c[size - 1] & 0x80 != 0;
            if negative {
                return Err(format!("`{name}` has a negative element"));
            }
            usize::try_from(u64::from_le_bytes(b))
                .map_err(|_| format!("`{name}` has an element too large for this machine"))
        })
        .collect()
}

/// The values of `data`, as f64 (floats, or integers and booleans as scipy stores them).
fn reals(raw: &RawNpy<'_>) -> Result<Vec<f64>, String> {
    let body = raw.body;
    Ok(match raw.descr.as_str() {
        "<f8" => body
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect(),
        "<f4" => body
            .chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes(c.try_into().expect("4 bytes"))))
            .collect(),
        "<i8" => body
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")) as f64)
            .collect(),
        "<i4" => body
            .chunks_exact(4)
            .map(|c| f64::from(i32::from_le_bytes(c.try_into().expect("4 bytes"))))
            .collect(),
        "|b1" => body.iter().map(|b| f64::from(u8::from(*b != 0))).collect(),
        other => {
            return Err(format!(
                "`data` has element type '{other}' (float32, float64, int32, int64 or bool are read)"
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_general_coordinate_file_reads_its_entries_one_based() {
        let m = read_matrix_market(
            "%%MatrixMarket matrix coordinate real general\n% c\n2 3 2\n1 1 1.5\n2 3 -2\n",
        )
        .expect("reads");
        assert_eq!((m.rows, m.cols), (2, 3));
        assert_eq!(m.to_dense(), [1.5, 0.0, 0.0, 0.0, 0.0, -2.0]);
    }

    #[test]
    fn malformed_coordinate_files_are_refused_with_the_line() {
        let head = "%%MatrixMarket matrix coordinate real general\n";
        for (body, says) in [
            ("2 2 1\n3 1 1\n", "row index `3` is not in 1..=2"),
            ("2 2 1\n1 0 1\n", "column index `0` is not in 1..=2"),
            ("2 2 2\n1 1 1\n", "announces 2 entries, the file has 1"),
            ("2 2 1\n1 1 1\n2 2 2\n", "more entries than the size line"),
            ("2 2 1\n1 1 x\n", "`x` is not a number"),
            ("2 2\n", "the size line has 2 numbers"),
            ("2 2 1\n1 1 1 7\n", "more numbers than an entry has"),
        ] {
            let err = read_matrix_market(&format!("{head}{body}")).expect_err(body);
            assert!(err.contains(says), "{body:?}: {err}");
        }
        let err = read_matrix_market("%%MatrixMarket matrix coordinate complex general\n1 1 0\n")
            .expect_err("complex");
        assert!(err.contains("complex"), "{err}");
        let err =
            read_matrix_market("%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 5\n")
                .expect_err("upper triangle");
        assert!(err.contains("above the diagonal"), "{err}");
    }

    #[test]
    fn symmetric_skew_and_pattern_files_fill_both_triangles() {
        let m = read_matrix_market(
            "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 3\n",
        )
        .expect("reads");
        assert_eq!(m.to_dense(), [0.0, -3.0, 3.0, 0.0]);
        let m = read_matrix_market(
            "%%MatrixMarket matrix coordinate pattern symmetric\n2 2 2\n1 1\n2 1\n",
        )
        .expect("reads");
        assert_eq!(m.to_dense(), [1.0, 1.0, 1.0, 0.0]);
    }

    #[test]
    fn an_array_file_is_column_major() {
        let m = read_matrix_market("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n")
            .expect("reads");
        assert_eq!(m.to_dense(), [1.0, 3.0, 2.0, 4.0]);
        let err = read_matrix_market("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n")
            .expect_err("short");
        assert!(err.contains("= 4 values, the file has 3"), "{err}");
    }

    #[test]
    fn bytes_that_are_no_archive_are_refused() {
        for bytes in [&b""[..], b"PK\x03\x04", b"not a zip at all"] {
            let err = read_npz(bytes).expect_err("refused");
            assert!(err.contains("not a .npz archive"), "{err}");
        }
    }
}
