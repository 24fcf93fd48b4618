//! Reading and writing NumPy `.npy` files (format versions 1–3): float32, float64 or
//! integer input in C order, float64 output. Only what `atl` needs; anything else is refused
//! with a message that says what was found.

use std::io::Write;

/// A dense row-major array read from a file.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// An `.npy` file split into its element type (`descr`, such as `<f8`), its C-order
/// shape and its data bytes (their length checked against the shape).
#[derive(Clone, Debug, PartialEq)]
pub struct RawNpy<'b> {
    pub descr: String,
    pub shape: Vec<usize>,
    pub body: &'b [u8],
}

/// The byte size of one element of `descr` (`<f8`: 8, `|S3`: 3, `<U3`: 12), or None.
fn element_size(descr: &str) -> Option<usize> {
    let kind = descr.get(1..2)?;
    let n: usize = descr.get(2..)?.parse().ok()?;
    match kind {
        "U" => n.checked_mul(4),
        "f" | "i" | "u" | "S" | "b" => Some(n),
        _ => None,
    }
}

/// Parses the bytes of an `.npy` file: float32 or float64, or integers of any width
/// (index arrays are saved as `int32` or `int64`; an integer that a float64 cannot
/// hold exactly, beyond 2^53 in magnitude, is refused rather than rounded).
pub fn parse(bytes: &[u8]) -> Result<NpyArray, String> {
    let raw = parse_raw(bytes)?;
    let descr = raw.descr.replacen('|', "<", 1);
    let unsupported = || {
        format!(
            "unsupported element type '{}' (expected little-endian float32 '<f4', float64 '<f8', or integers such as int32 '<i4')",
            raw.descr
        )
    };
    let (kind, width) = match (
        descr.get(1..2),
        descr.get(2..).and_then(|w| w.parse::<usize>().ok()),
    ) {
        (Some(k @ ("f" | "i" | "u")), Some(w @ (1 | 2 | 4 | 8))) if !(k == "f" && w < 4) => {
            (k.to_string(), w)
        }
        _ => return Err(unsupported()),
    };
    let exact = 2f64.powi(53);
    let mut data = Vec::with_capacity(raw.body.len() / width);
    for (k, c) in raw.body.chunks_exact(width).enumerate() {
        let mut b = [0u8; 8];
        b[..width].copy_from_slice(c);
        let value = match kind.as_str() {
            "f" if width == 8 => f64::from_le_bytes(b),
            "f" => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            "i" => {
                // Sign-extend from the element's width.
                let shift = 64 - 8 * width as u32;
                let v = (i64::from_le_bytes(b) << shift) >> shift;
                let f = v as f64;
                if f.abs() > exact {
                    return Err(format!(
                        "element {k} is {v}, which a float64 cannot hold exactly"
                    ));
                }
                f
            }
            _ => {
                let v = u64::from_le_bytes(b);
                let f = v as f64;
                if f > exact {
                    return Err(format!(
                        "element {k} is {v}, which a float64 cannot hold exactly"
                    ));
                }
                f
            }
        };
        data.push(value);
    }
    Ok(NpyArray {
        shape: raw.shape,
        data,
    })
}

/// Parses the header of an `.npy` file of any fixed-size element type (little-endian
/// or byte-sized), C order.
pub fn parse_raw(bytes: &[u8]) -> Result<RawNpy<'_>, String> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err("not a .npy file (missing the \\x93NUMPY magic)".into());
    }
    let major = bytes[6];
    let (header_len, header_start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10usize),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err("truncated .npy header".into());
            }
            (
                u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                12,
            )
        }
        v => return Err(format!("unsupported .npy format version {v}")),
    };
    let header_end = header_start
        .checked_add(header_len)
        .filter(|e| *e <= bytes.len())
        .ok_or("truncated .npy header")?;
    let header = std::str::from_utf8(&bytes[header_start..header_end])
        .map_err(|_| "the .npy header is not text")?;
    let descr = dict_value(header, "descr").ok_or("the .npy header has no 'descr'")?;
    let descr = descr
        .trim_matches(|c| c == '\'' || c == '"')
        .replacen('=', "<", 1);
    if descr.starts_with('>') {
        return Err(format!(
            "big-endian element type '{descr}' is not supported (save it little-endian: a.astype(a.dtype.newbyteorder('<')))"
        ));
    }
    let elem = element_size(&descr).ok_or_else(|| format!("unsupported element type '{descr}'"))?;
    let fortran =
        dict_value(header, "fortran_order").ok_or("the .npy header has no 'fortran_order'")?;
    if fortran.trim() != "False" {
        return Err(
            "Fortran-order arrays are not supported; save it in C order (np.ascontiguousarray)"
                .into(),
        );
    }
    let shape_text = dict_value(header, "shape").ok_or("the .npy header has no 'shape'")?;
    let inner = shape_text
        .trim()
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or("malformed 'shape' in the .npy header")?;
    let mut shape = Vec::new();
    for part in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        shape.push(
            part.parse::<usize>()
                .map_err(|_| format!("malformed dimension '{part}' in the .npy header"))?,
        );
    }
    let count = shape
        .iter()
        .try_fold(1usize, |acc, d| acc.checked_mul(*d))
        .ok_or("the .npy shape is too large")?;
    let body = &bytes[header_end..];
    let need = count
        .checked_mul(elem)
        .ok_or("the .npy shape is too large")?;
    if body.len() != need {
        return Err(format!(
            "the .npy data has {} bytes but shape {:?} needs {need}",
            body.len(),
            shape
        ));
    }
    Ok(RawNpy { descr, shape, body })
}

/// The text after `'key':` up to the next top-level comma (tuples kept whole).
fn dict_value<'h>(header: &'h str, key: &str) -> Option<&'h str> {
    let pos = header
        .find(&format!("'{key}'"))
        .or_else(|| header.find(&format!("\"{key}\"")))?;
    let rest = &header[pos + key.len() + 2..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let mut depth = 0;
    for (k, ch) in rest.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' | '}' if depth == 0 => return Some(rest[..k].trim()),
            _ => {}
        }
    }
    None
}

/// Writes a float64 C-order `.npy` (format 1.0).
pub fn write_f64(out: &mut dyn Write, shape: &[usize], data: &[f64]) -> std::io::Result<()> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape_text = match dims.len() {
        0 => "()".to_string(),
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape_text}, }}");
    // The header (with magic, version and length) is padded to a multiple of 64 and
    // ends in a newline.
    let unpadded = MAGIC.len() + 2 + 2 + header.len() + 1;
    let pad = (64 - unpadded % 64) % 64;
    header.push_str(&" ".repeat(pad));
    header.push('\n');
    out.write_all(MAGIC)?;
    out.write_all(&[1, 0])?;
    out.write_all(&(header.len() as u16).to_le_bytes())?;
    out.write_all(header.as_bytes())?;
    for v in data {
        out.write_all(&v.to_le_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_f64() {
        let mut buf = Vec::new();
        write_f64(&mut buf, &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, -6.5]).unwrap();
        // The header is padded to a multiple of 64 bytes, then come 6 doubles.
        assert_eq!((buf.len() - 6 * 8) % 64, 0, "header padded to 64 bytes");
        assert_eq!(
            buf[buf.len() - 6 * 8 - 1],
            b'\n',
            "header ends in a newline"
        );
        let a = parse(&buf).unwrap();
        assert_eq!(a.shape, vec![2, 3]);
        assert_eq!(a.data, vec![1.0, 2.0, 3.0, 4.0, 5.0, -6.5]);
    }

    #[test]
    fn scalar_and_vector_shapes() {
        for shape in [vec![], vec![4usize]] {
            let n: usize = shape.iter().product();
            let data: Vec<f64> = (0..n).map(|k| k as f64).collect();
            let mut buf = Vec::new();
            write_f64(&mut buf, &shape, &data).unwrap();
            let a = parse(&buf).unwrap();
            assert_eq!(a.shape, shape);
            assert_eq!(a.data, data);
        }
    }

    #[test]
    fn reads_float32_written_by_hand() {
        // A float32 [2] array as numpy writes it (header padded to 64 bytes).
        let mut header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }".to_string();
        let pad = 64 - (10 + header.len() + 1) % 64;
        header.push_str(&" ".repeat(pad));
        header.push('\n');
        let mut buf = MAGIC.to_vec();
        buf.extend([1, 0]);
        buf.extend((header.len() as u16).to_le_bytes());
        buf.extend(header.as_bytes());
        buf.extend(1.5f32.to_le_bytes());
        buf.extend((-2.0f32).to_le_bytes());
        let a = parse(&buf).unwrap();
        assert_eq!(a.data, vec![1.5, -2.0]);
    }

    #[test]
    fn refuses_bad_files() {
        assert!(parse(b"hello").is_err());
        let mut buf = Vec::new();
        write_f64(&mut buf, &[3], &[1.0, 2.0, 3.0]).unwrap();
        buf.pop();
        assert!(parse(&buf).unwrap_err().contains("needs 24"));
        let text = String::from_utf8_lossy(&buf).replace("'<f8'", "'<i8'");
        assert!(parse(text.as_bytes()).is_err());
    }
}
