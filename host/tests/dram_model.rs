//! The DRAM-granularity model of the strided read against the curve recorded on the H200
//! (`tests/data/h200_run.json`): within 15% at every stride the demo measures, where the
//! 32-byte sector model is off by up to 3x past stride 8.

use memlab::model::coalescing::{TransactionModel, bandwidth_fraction_vs_unit_stride};
use memlab::model::dram::{DramLocality, strided_fraction};
use memlab::present::report_dir::RunRecord;
use memlab::series::names;

#[test]
fn the_dram_model_follows_the_recorded_strided_curve() {
    let record: RunRecord = serde_json::from_str(include_str!("data/h200_run.json")).unwrap();
    let section = record.sections.iter().find(|s| s.name == "coalescing").unwrap();
    let measured = section.series.iter().find(|s| s.name == names::MEASURED).unwrap();
    assert_eq!(measured.points.len(), 7);
    let mut sector_worst = 1.0f64;
    for p in &measured.points {
        let stride = p.x as u64;
        let model = strided_fraction(4, stride, &DramLocality::H200);
        assert!((p.y / model - 1.0).abs() <= 0.15, "stride {stride}: measured {} vs model {model}", p.y);
        let sector = bandwidth_fraction_vs_unit_stride(4, stride, TransactionModel::Sector32);
        sector_worst = sector_worst.min(p.y / sector);
    }
    assert!(sector_worst < 0.35, "the sector model alone misses the far strides ({sector_worst})");
}
