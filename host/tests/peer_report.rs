//! The peer lesson's report from made-up figures of two devices (no GPU): the topology, the
//! N x N tables, and the charts written as SVG and PNG.

use memlab::demos::peer::matrix::PairMatrix;
use memlab::demos::peer::topology::{Path, Topology};
use memlab::demos::peer::{Curve, PeerRecord};
use memlab::gpu::peer::PeerCaps;
use memlab::lab::Section;
use memlab::present::peer_report;

fn record() -> PeerRecord {
    let access = PeerCaps { access: true, rank: 0, atomics: true };
    let link = Path::NvSwitch { links: 18, version: Some(6), gbs_per_link: Some(25.0) };
    let mut caps = PairMatrix::new(2);
    let mut paths = PairMatrix::new(2);
    for (i, j) in [(0, 1), (1, 0)] {
        caps.set(i, j, access);
        paths.set(i, j, link.clone());
    }
    let mut copy = PairMatrix::new(2);
    copy.set(0, 0, 1950.0);
    copy.set(1, 1, 1948.0);
    copy.set(0, 1, 389.5);
    copy.set(1, 0, 388.0);
    let mut both = PairMatrix::new(2);
    both.set(0, 1, 760.0);
    both.set(1, 0, 760.0);
    let mut latency = PairMatrix::new(2);
    latency.set(0, 0, 650.0);
    latency.set(0, 1, 1800.0);
    let strides = [1usize, 2, 4, 8, 16, 32, 64];
    let curve = |owner: usize, base: f64| Curve {
        accessor: 0,
        owner,
        points: strides.iter().map(|&s| (s, base / (s.min(8) as f64))).collect(),
    };
    let (header, rows) = copy.table(&["GPU 0".into(), "GPU 1".into()], "GB/s, one way", |v| format!("{v:.1}"));
    let section = Section {
        name: "peer".into(),
        title: "Copy engines".into(),
        lesson: "A copy between GPUs runs on the copy engines.".into(),
        sweep: Some((header, rows)),
        ..Section::default()
    };
    PeerRecord {
        labels: vec!["GPU 0".into(), "GPU 1".into()],
        names: vec!["NVIDIA H200".into(), "NVIDIA H200".into()],
        topology: Topology {
            ordinals: vec![0, 1],
            bus_ids: vec!["0000:1B:00.0".into(), "0000:43:00.0".into()],
            caps,
            paths,
            nvml: true,
        },
        copy_gbs: copy,
        both_gbs: both,
        latency_ns: latency,
        curves: vec![curve(0, 3000.0), curve(1, 380.0)],
        sections: vec![section],
    }
}

#[test]
fn markdown_shows_the_topology_and_the_matrix() {
    let md = peer_report::markdown(&record());
    assert!(md.starts_with("# memlab peer: GPU 0 (NVIDIA H200), GPU 1 (NVIDIA H200)"), "{md}");
    assert!(md.contains("NVLink 4.0 via NVSwitch, 18 x 25.0 = 450 GB/s each way"), "{md}");
    assert!(md.contains("| GPU 0 -> GPU 1 | yes    | 0    | yes     |"), "{md}");
    assert!(md.contains("PCI: GPU 0 at 0000:1B:00.0, GPU 1 at 0000:43:00.0"), "{md}");
    assert!(md.contains("| from GPU 0    | 1950.0   | 389.5    |"), "{md}");
    assert!(md.contains("| from GPU 1    | 388.0    | 1948.0   |"), "{md}");
    assert!(md.trim_end().ends_with("All results verified."), "{md}");
}

#[test]
fn the_coalescing_chart_puts_the_link_beside_local_hbm_and_the_model() {
    let chart = peer_report::coalescing_chart(&record()).expect("a curve over the link");
    assert_eq!(chart.series.len(), 3);
    assert_eq!(chart.series[0].name, "GPU 0 reading GPU 1's HBM over the link");
    assert_eq!(chart.series[0].points[0].y, 380.0);
    assert_eq!(chart.series[1].points[0].y, 3000.0);
    // The sector model scaled to the link's stride 1: an eighth of it from stride 8 on.
    assert_eq!(chart.series[2].points[3].y, 380.0 / 8.0);
    assert_eq!(chart.series[2].points[6].y, 380.0 / 8.0);
}

#[test]
fn report_folder_has_the_markdown_and_both_charts() {
    let dir = std::env::temp_dir().join(format!("memlab-peer-report-{}", std::process::id()));
    let files = peer_report::write(&dir, &record()).unwrap();
    let names: Vec<String> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["peer.md", "peer_matrix.svg", "peer_matrix.png", "peer_coalescing.svg", "peer_coalescing.png"]);
    for f in &files {
        assert!(std::fs::metadata(f).unwrap().len() > 500, "{} is nearly empty", f.display());
    }
    let svg = std::fs::read_to_string(dir.join("peer_matrix.svg")).unwrap();
    assert!(svg.contains("390 GB/s") && svg.contains("1950 GB/s") && svg.contains("to GPU 1"), "matrix labels");
    let md = std::fs::read_to_string(dir.join("peer.md")).unwrap();
    assert!(md.contains("![N x N copy bandwidth](peer_matrix.svg)"));
    if std::env::var_os("MEMLAB_KEEP_CHARTS").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
