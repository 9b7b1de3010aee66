//! NumPy `.npy` token files, as `np.save` writes them: a magic string, a header (a Python dict
//! literal naming the dtype, the memory order and the shape, parsed by the `npyz` crate), then the
//! elements. A file is recognised by its magic bytes, not by its name (the lecture's raw int32
//! files are called `data.npy` too).

use std::path::Path;

pub use npyz::Order;
use npyz::{DType, NpyHeader, TypeChar, WriterBuilder};

use crate::error::{Error, Result};

/// The first six bytes of every `.npy` file.
pub const MAGIC: &[u8] = b"\x93NUMPY";

/// How a `.npy` file's elements become int32 tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elements {
    /// Little-endian int32: read in place through the memory map.
    Int32,
    /// Little-endian uint16 (GPT-2-sized vocabularies): widened into memory.
    Uint16,
    /// Little-endian int64 (NumPy's default integer): narrowed into memory, each id checked.
    Int64,
}

impl Elements {
    pub fn size(self) -> usize {
        match self {
            Elements::Int32 => 4,
            Elements::Uint16 => 2,
            Elements::Int64 => 8,
        }
    }

    /// The NumPy name, as the header spells it.
    pub fn descr(self) -> &'static str {
        match self {
            Elements::Int32 => "<i4",
            Elements::Uint16 => "<u2",
            Elements::Int64 => "<i8",
        }
    }
}

/// What the header says, checked: the element type, the number of tokens and where they start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub elements: Elements,
    pub len: usize,
    /// Byte offset of the first element.
    pub offset: usize,
}

/// Reads and checks the header of the `.npy` file `bytes` (the whole file). A token file is a 1-D
/// array of int32, uint16 or int64 in little-endian C order; anything else is refused with what
/// the file holds instead.
pub fn layout(bytes: &[u8]) -> std::result::Result<Layout, String> {
    let mut rest = bytes;
    let header = NpyHeader::from_reader(&mut rest).map_err(|e| format!("not a readable .npy header: {e}"))?;
    // The reader stopped at the first element.
    let offset = bytes.len() - rest.len();
    let elements = match header.dtype() {
        DType::Plain(t) if t.to_string() == "<i4" => Elements::Int32,
        DType::Plain(t) if t.to_string() == "<u2" => Elements::Uint16,
        DType::Plain(t) if t.to_string() == "<i8" => Elements::Int64,
        DType::Plain(t) => {
            let kind = match t.type_char() {
                TypeChar::Float => "floating-point numbers",
                TypeChar::Int | TypeChar::Uint => "integers of another width or byte order",
                _ => "not integers",
            };
            return Err(format!(
                "holds dtype {t} ({kind}); token ids must be <i4 (int32, read in place), or <u2 or <i8 (converted)"
            ));
        }
        other => {
            return Err(format!(
                "holds a structured dtype ({other:?}); token ids must be a plain integer array"
            ));
        }
    };
    if header.order() == Order::Fortran {
        return Err("is stored in Fortran order; save token ids in C order (np.save of a 1-D array does)".into());
    }
    let shape = header.shape();
    let [n] = shape else {
        return Err(format!(
            "holds an array of shape {shape:?}; token ids must be 1-D (flatten it first)"
        ));
    };
    let len = usize::try_from(*n).map_err(|_| format!("claims {n} elements"))?;
    let wanted = len.checked_mul(elements.size());
    if wanted != Some(rest.len()) {
        return Err(format!(
            "claims {len} elements of {} after its header but {} bytes follow it (truncated or corrupt?)",
            elements.descr(),
            rest.len()
        ));
    }
    Ok(Layout { elements, len, offset })
}

/// An array as `np.save` writes it (format 1.0 header: magic bytes, the dtype's little-endian
/// NumPy name, the memory order, the shape; then the elements in that order), written atomically
/// by the `npyz` crate. `values` are in the file's order already.
pub fn save<T: npyz::AutoSerialize>(path: &Path, values: &[T], shape: &[usize], order: Order) -> Result<()> {
    let elements: usize = shape.iter().product();
    if elements != values.len() {
        return Err(Error::invalid(
            "npy::save",
            format!(
                "shape {shape:?} holds {elements} elements but {} were given",
                values.len()
            ),
        ));
    }
    let shape: Vec<u64> = shape.iter().map(|&n| n as u64).collect();
    let mut bytes = Vec::new();
    let io = |e: std::io::Error| Error::io(path, e);
    let mut writer = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&shape)
        .order(order)
        .writer(&mut bytes)
        .begin_nd()
        .map_err(io)?;
    writer.extend(values.iter()).map_err(io)?;
    writer.finish().map_err(io)?;
    Ok(crate::atomic_file::write(path, &bytes)?)
}

/// The tokens of a converted (non-int32) array, each checked to fit in int32.
pub fn convert(elements: Elements, data: &[u8]) -> std::result::Result<Vec<i32>, String> {
    match elements {
        Elements::Int32 => Ok(data
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()),
        Elements::Uint16 => Ok(data
            .chunks_exact(2)
            .map(|b| i32::from(u16::from_le_bytes([b[0], b[1]])))
            .collect()),
        Elements::Int64 => data
            .chunks_exact(8)
            .enumerate()
            .map(|(i, b)| {
                let v = i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                i32::try_from(v).map_err(|_| format!("token {i} is {v}, outside int32"))
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.npy` file as NumPy writes it (format 1.0, header padded to 64 bytes, ending in '\n').
    fn npy(descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
        let dict = format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
            if fortran { "True" } else { "False" }
        );
        let unpadded = MAGIC.len() + 4 + dict.len() + 1;
        let header = format!("{dict}{}\n", " ".repeat(unpadded.next_multiple_of(64) - unpadded));
        let mut out = MAGIC.to_vec();
        out.extend([1, 0]);
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.as_bytes());
        out.extend(data);
        out
    }

    #[test]
    fn int32_is_read_in_place_and_other_widths_are_converted() {
        let data: Vec<u8> = [7i32, -1, 300].iter().flat_map(|x| x.to_le_bytes()).collect();
        let file = npy("<i4", false, "(3,)", &data);
        let l = layout(&file).expect("valid");
        assert_eq!((l.elements, l.len, l.offset), (Elements::Int32, 3, file.len() - 12));
        assert_eq!(l.offset % 64, 0, "NumPy pads the header to a multiple of 64 bytes");
        assert_eq!(convert(l.elements, &file[l.offset..]).expect("fits"), [7, -1, 300]);
        let file = npy("<u2", false, "(2,)", &[0xff, 0xff, 1, 0]);
        let l = layout(&file).expect("valid");
        assert_eq!(convert(l.elements, &file[l.offset..]).expect("fits"), [65535, 1]);
        let big: Vec<u8> = [1i64, 1 << 40].iter().flat_map(|x| x.to_le_bytes()).collect();
        let file = npy("<i8", false, "(2,)", &big);
        let l = layout(&file).expect("valid");
        assert_eq!(
            convert(l.elements, &file[l.offset..]).expect_err("too big"),
            "token 1 is 1099511627776, outside int32"
        );
    }

    #[test]
    fn save_writes_what_numpy_writes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("a.npy");
        save(&path, &[7i32, -1, 300], &[3], Order::C).expect("written");
        let data: Vec<u8> = [7i32, -1, 300].iter().flat_map(|x| x.to_le_bytes()).collect();
        // Byte for byte what NumPy writes, except that npyz ends a shape tuple with ", " ("(3, )",
        // "(2, 2, )") where NumPy writes "(3,)" and "(2, 2)": the same Python literals to
        // `np.load`, which parses the header with `ast.literal_eval`.
        assert_eq!(std::fs::read(&path).expect("read"), npy("<i4", false, "(3, )", &data));
        save(&path, &[1u16, 2, 3, 4], &[2, 2], Order::Fortran).expect("written");
        let data: Vec<u8> = [1u16, 2, 3, 4].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(std::fs::read(&path).expect("read"), npy("<u2", true, "(2, 2, )", &data));
        assert!(
            save(&path, &[1u16, 2, 3], &[2, 2], Order::C).is_err(),
            "3 values are not 2×2"
        );
    }

    #[test]
    fn other_dtypes_orders_and_shapes_are_refused_clearly() {
        let four = [0u8; 16];
        let err = |descr: &str, fortran: bool, shape: &str, data: &[u8]| {
            layout(&npy(descr, fortran, shape, data)).expect_err("refused")
        };
        assert!(err("<f4", false, "(4,)", &four).contains("<f4 (floating-point numbers)"));
        assert!(err(">i4", false, "(4,)", &four).contains("another width or byte order"));
        assert!(err("<i4", true, "(2, 2)", &four).contains("Fortran order"));
        assert!(err("<i4", false, "(2, 2)", &four).contains("must be 1-D"));
        assert!(err("<i4", false, "(9,)", &four).contains("claims 9 elements"));
        assert!(layout(b"\x93NUMPY\x01").is_err());
    }
}
