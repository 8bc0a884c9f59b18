//! The swizzle modes of `tma_transpose`'s input map against the bank model: its table and its
//! chart.

use memlab_contracts::tma::box_cols;

use crate::gpu::tensor_map::Swizzle;
use crate::model::banks::WarpRequest;
use crate::series::{Series, names};

/// One swizzle mode's row of the table: the bank model's wavefronts of the column read, and
/// `tma_transpose`'s median ms, GB/s and check.
pub(super) struct SwizzleRow {
    pub(super) swizzle: Swizzle,
    pub(super) plain: u32,
    pub(super) swizzled: u32,
    pub(super) ideal: u32,
    pub(super) ms: f64,
    pub(super) gbs: f64,
    pub(super) check: String,
}

/// Bank wavefronts of one warp's float4 column read of the transpose's input tile under swizzle
/// `mode`: `(unswizzled, swizzled, ideal)`, from the bank model.
pub(super) fn column_read_wavefronts(mode: u32) -> (u32, u32, u32) {
    let w = box_cols(mode);
    let plain = WarpRequest::tma_tile_column(mode, w, false).analyze();
    let swizzled = WarpRequest::tma_tile_column(mode, w, true).analyze();
    (plain.wavefronts, swizzled.wavefronts, swizzled.ideal_wavefronts)
}

/// The swizzle chart: `tma_transpose`'s time per mode against the fastest mode's, and the bank
/// model's column-read wavefronts per ideal with the map's swizzle and without.
pub(super) fn swizzle_series(rows: &[SwizzleRow]) -> [Series; 3] {
    let fastest = rows.iter().map(|r| r.ms).fold(f64::INFINITY, f64::min);
    let by_mode = |name: &str, y: &str, value: &dyn Fn(&SwizzleRow) -> f64| {
        let points = rows.iter().map(|r| (r.swizzle.mode() as f64, value(r), r.swizzle.name()));
        Series::labelled(name, "swizzle mode", y, points)
    };
    [
        by_mode(names::MEASURED, "tma_transpose time / fastest mode", &|r| r.ms / fastest),
        by_mode(names::BANK_MODEL, "column read: wavefronts / ideal", &|r| (r.swizzled / r.ideal) as f64),
        by_mode(names::UNSWIZZLED_MODEL, "column read: wavefronts / ideal", &|r| (r.plain / r.ideal) as f64),
    ]
}

/// The swizzle table: header and a row per mode.
pub(super) fn swizzle_table(rows: &[SwizzleRow]) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "swizzle",
        "box (rows x f32)",
        "column read unswizzled",
        "with the map's swizzle",
        "tma_transpose ms",
        "GB/s",
        "check",
    ];
    let cells = rows
        .iter()
        .map(|r| {
            vec![
                r.swizzle.name(),
                format!("64 x {}", box_cols(r.swizzle.mode())),
                format!("{}-way ({} wavefronts)", r.plain / r.ideal, r.plain),
                format!("{}-way ({} wavefronts)", r.swizzled / r.ideal, r.swizzled),
                format!("{:.3}", r.ms),
                format!("{:.0}", r.gbs),
                r.check.clone(),
            ]
        })
        .collect();
    (header.iter().map(|s| s.to_string()).collect(), cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bank_model_predicts_the_swizzles() {
        assert_eq!(column_read_wavefronts(0), (32, 32, 4));
        assert_eq!(column_read_wavefronts(1), (8, 4, 4));
        assert_eq!(column_read_wavefronts(2), (16, 4, 4));
        assert_eq!(column_read_wavefronts(3), (32, 4, 4));
        assert_eq!(memlab_contracts::tma::SWIZZLE_MODES as usize, Swizzle::ALL.len());
    }
}
