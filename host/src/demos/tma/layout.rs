//! The matrices as the lesson stores them, rows padded to the tensor maps' 16-byte pitch, the
//! refusal of a matrix the kernels cannot count, and the tensor maps over the stored matrices.

use anyhow::Result;
use memlab_contracts::tma::{COPY_BOXES, TILE};

use super::plan::Plan;
use crate::gpu::tensor_map::{Element, L2Promotion, MapSlot, Swizzle, TiledSpec};
use crate::lab::Lab;
use crate::refuse;

/// A matrix as the lesson stores it: `rows x cols` f32, row-major, rows `pitch` elements apart
/// (`pitch >= cols`; the `pitch - cols` elements after each row are padding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stored {
    pub(super) rows: usize,
    pub(super) cols: usize,
    pub(super) pitch: usize,
}

impl Stored {
    /// A `rows x cols` matrix with its rows padded to the smallest pitch a tensor map can
    /// describe ([`Element::padded_pitch`]: a multiple of 16 bytes, CUDA Driver API,
    /// `cuTensorMapEncodeTiled`).
    pub(super) fn padded(rows: usize, cols: usize) -> Stored {
        Stored { rows, cols, pitch: Element::F32.padded_pitch(cols as u64) as usize }
    }

    /// Elements of its buffer, `rows x pitch` (saturating).
    pub(super) fn elements(&self) -> usize {
        self.rows.saturating_mul(self.pitch)
    }

    /// `(rows, cols, pitch)`.
    pub(super) fn dims(&self) -> (usize, usize, usize) {
        (self.rows, self.cols, self.pitch)
    }
}

/// The lesson's two layouts for a `rows x cols` input: the input (and every copy's output) and
/// the transposed `cols x rows` output, each with its rows padded ([`Stored::padded`]).
pub(super) fn layouts(rows: usize, cols: usize) -> (Stored, Stored) {
    (Stored::padded(rows, cols), Stored::padded(cols, rows))
}

/// The note on the padded rows of `input` and of the transposed `output`; none when neither
/// needs padding.
pub(super) fn padding_note(input: Stored, output: Stored) -> Option<String> {
    let rows = |s: Stored| format!("from {} to {} f32 ({} bytes)", s.cols, s.pitch, 4 * s.pitch);
    let out = |s: Stored| format!("the transposed {}x{} output's rows", s.rows, s.cols);
    let padded = match (input.pitch != input.cols, output.pitch != output.cols) {
        (false, false) => return None,
        (true, false) => format!("rows padded {}", rows(input)),
        (false, true) => format!("{} padded {}", out(output), rows(output)),
        (true, true) => format!("rows padded {}, {} {}", rows(input), out(output), rows(output)),
    };
    let (r, c, p) = input.dims();
    let moved = if input.pitch != input.cols {
        format!(
            ". The 1-D bulk copy moves whole 16-byte chunks, so it copies the padded {r}x{p} matrix, as the LSU copy does and the LSU transpose transposes it (their GB/s count those bytes); the tensor maps move the {r}x{c} elements"
        )
    } else {
        String::new()
    };
    Some(format!(
        "{padded} for the tensor map's 16-byte stride{moved}. Every check compares the {r}x{c} elements, the padding excluded"
    ))
}

/// The tensor map of `matrix` at `address`, box `64 x box_cols`.
pub(super) fn spec(address: u64, matrix: Stored, box_cols: u32, swizzle: Swizzle) -> TiledSpec {
    boxed(address, matrix, (TILE, box_cols), swizzle)
}

/// The tensor map of `matrix` at `address` (its rows `matrix.pitch` apart), box `rows x cols`
/// of `boxed`, no L2 promotion.
pub(super) fn boxed(address: u64, matrix: Stored, (box_rows, box_cols): (u32, u32), swizzle: Swizzle) -> TiledSpec {
    TiledSpec {
        address,
        element: Element::F32,
        rows: matrix.rows as u64,
        cols: matrix.cols as u64,
        pitch: matrix.pitch as u64,
        box_rows,
        box_cols,
        swizzle,
        l2_promotion: L2Promotion::None,
    }
}

/// The slot of `spec` with the L2 promotion `l2`.
pub(super) fn promoted(lab: &Lab, spec: TiledSpec, l2: L2Promotion) -> Result<MapSlot> {
    lab.place_map(&TiledSpec { l2_promotion: l2, ..spec })
}

/// The two tensor maps of a copy of the matrix `stored` between `addrs` (input, output), box
/// `b`, no swizzle.
pub(super) fn copy_specs(stored: Stored, (in_addr, out_addr): (u64, u64), b: (u32, u32)) -> (TiledSpec, TiledSpec) {
    (boxed(in_addr, stored, b, Swizzle::None), boxed(out_addr, stored, b, Swizzle::None))
}

/// Refuses, in one line before any work, a `rows x cols` matrix whose padded input or
/// transposed output ([`layouts`]) holds more than `u32::MAX` elements: the kernels count
/// elements in 32 bits. Every other shape runs: the padded pitches are ones a tensor map
/// describes, and a padded buffer is a whole number of the 1-D bulk copy's 16-byte granules.
///
/// # Errors
/// The refusal.
pub(super) fn check_matrix(rows: usize, cols: usize) -> Result<()> {
    let (input, output) = layouts(rows, cols);
    for (what, m) in [("input", input), ("transposed output", output)] {
        if m.elements() > u32::MAX as usize {
            let padded = if m.pitch == m.cols {
                String::new()
            } else {
                format!(", its rows padded to {} f32 (16-byte strides),", m.pitch)
            };
            refuse!(
                "the TMA demo: the {what} {}x{}{padded} holds {} elements; the kernels count elements in 32 bits (at most {})",
                m.rows,
                m.cols,
                m.elements(),
                u32::MAX
            );
        }
    }
    Ok(())
}

/// A kernel's tensor maps: its input's and its output's.
pub(super) type Maps = (MapSlot, MapSlot);

/// Places the maps ([`copy_specs`]) of each box of [`COPY_BOXES`] that `plan`'s `tma_copy`
/// sweep uses, input then output.
pub(super) fn place_copy_maps(lab: &Lab, plan: &Plan, stored: Stored, addrs: (u64, u64)) -> Result<Vec<((u32, u32), Maps)>> {
    COPY_BOXES
        .iter()
        .filter(|&&(box_rows, box_cols)| plan.copy.iter().any(|p| (p.box_rows, p.box_cols) == (box_rows, box_cols)))
        .map(|&b| {
            let (map_in, map_out) = copy_specs(stored, addrs, b);
            Ok((b, (lab.place_map(&map_in)?, lab.place_map(&map_out)?)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlab_contracts::tma::box_cols;

    #[test]
    fn odd_widths_are_stored_with_padded_rows_and_said_so() {
        // 31x33: input rows of 33 f32 in 36 (144 bytes), the transposed 33x31's rows of 31 in 32.
        let (input, output) = layouts(31, 33);
        assert_eq!(
            (input, output),
            (Stored { rows: 31, cols: 33, pitch: 36 }, Stored { rows: 33, cols: 31, pitch: 32 })
        );
        assert_eq!((input.elements(), output.elements()), (31 * 36, 33 * 32));
        // Every pitch is one a tensor map describes, for every box and swizzle the lesson uses.
        for (rows, cols) in [(31, 33), (28, 44), (1, 1), (3, 1000), (1000, 7), (70000, 2), (8192, 1001)] {
            let (input, output) = layouts(rows, cols);
            for b in COPY_BOXES {
                boxed(0, input, b, Swizzle::None).check().unwrap();
            }
            for sw in Swizzle::ALL {
                spec(0, input, box_cols(sw.mode()), sw).check().unwrap();
            }
            spec(0, output, TILE, Swizzle::None).check().unwrap();
            // The 1-D bulk copy moves the padded input: whole 16-byte granules.
            assert!(input.elements().is_multiple_of(4), "{rows}x{cols}");
            assert!(check_matrix(rows, cols).is_ok(), "{rows}x{cols}");
        }
        assert_eq!(
            padding_note(input, output).unwrap(),
            "rows padded from 33 to 36 f32 (144 bytes), the transposed 33x31 output's rows from 31 to 32 f32 (128 bytes) for the tensor map's 16-byte stride. The 1-D bulk copy moves whole 16-byte chunks, so it copies the padded 31x36 matrix, as the LSU copy does and the LSU transpose transposes it (their GB/s count those bytes); the tensor maps move the 31x33 elements. Every check compares the 31x33 elements, the padding excluded"
        );
        // 28x44: only the transposed output (rows of 28 f32 = 112 bytes) is already aligned.
        let (input, output) = layouts(28, 44);
        assert_eq!((input.pitch, output.pitch), (44, 28));
        assert_eq!(padding_note(input, output), None);
        let (input, output) = layouts(31, 36);
        assert_eq!(
            padding_note(input, output).unwrap(),
            "the transposed 36x31 output's rows padded from 31 to 32 f32 (128 bytes) for the tensor map's 16-byte stride. Every check compares the 31x36 elements, the padding excluded"
        );
        assert!(
            padding_note(layouts(1000, 7).0, layouts(1000, 7).1)
                .unwrap()
                .starts_with("rows padded from 7 to 8 f32 (32 bytes) for")
        );
        assert_eq!(layouts(8192, 8192).0.pitch, 8192);
        // What stays refused: more elements than the kernels count in 32 bits, padded.
        assert_eq!(
            check_matrix(1 << 16, (1 << 16) - 1).unwrap_err().to_string(),
            "the TMA demo: the input 65536x65535, its rows padded to 65536 f32 (16-byte strides), holds 4294967296 elements; the kernels count elements in 32 bits (at most 4294967295)"
        );
        assert_eq!(
            check_matrix((1 << 16) - 1, 1 << 16).unwrap_err().to_string(),
            "the TMA demo: the transposed output 65536x65535, its rows padded to 65536 f32 (16-byte strides), holds 4294967296 elements; the kernels count elements in 32 bits (at most 4294967295)"
        );
        assert!(
            check_matrix(1 << 17, 1 << 16)
                .unwrap_err()
                .to_string()
                .contains("the input 131072x65536 holds 8589934592 elements")
        );
        assert!(check_matrix(65535, 65535).is_ok(), "65535 x 65536 elements fit");
    }
}
