//! The sweep of `memlab autotune`: every configuration of rung 8 the PTX has
//! (`memlab_contracts::sgemm::TUNED`) and the split-K rung at the model's split, checked element
//! by element on the ladder's odd sizes, then checked and timed at each shape class's
//! representative size next to cuBLAS; the fastest correct one per class is the choice for the
//! device's compute capability. Not a demo of
//! `run-demos`: it runs only when asked, and its result is a file (`crate::tuned`).

use anyhow::Result;
use memlab_contracts::sgemm::SPLIT_K;

use super::{Rung, check_odd_sizes, check_split_k_odd_sizes, measure_split_k, tuned_available};
use crate::gpu::cublas::Cublas;
use crate::gpu::timing::time;
use crate::lab::ODD_GEMM_SIZES;
use crate::lab::{Lab, Section, poison};
use crate::probes::gemm::{Operands, time_cublas};
use crate::refuse;
use crate::tuned::{Choice, Pick, ShapeClass};
use crate::verify::{Check, Precision};

/// One configuration at one class's size.
#[derive(Debug, Clone)]
pub struct Point {
    /// The configuration, or the split-K rung.
    pub config: Pick,
    /// The class.
    pub class: ShapeClass,
    /// Median TFLOP/s; `None` when a check failed.
    pub tflops: Option<f64>,
}

/// The sweep's outcome: every point, cuBLAS per class, and the report section.
pub struct Sweep {
    /// Every configuration at every class.
    pub points: Vec<Point>,
    /// cuBLAS SGEMM (FP32) per class, TFLOP/s.
    pub cublas: Vec<(ShapeClass, Option<f64>)>,
    /// The table, notes and checks.
    pub section: Section,
}

impl Sweep {
    /// The fastest correct configuration of `class`, as the file records it.
    pub fn choice(&self, cc: (u32, u32), class: ShapeClass, source: &str) -> Option<Choice> {
        let best = self
            .points
            .iter()
            .filter(|p| p.class == class)
            .filter_map(|p| Some((p, p.tflops?)))
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        let (m, n, k) = class.representative();
        Some(Choice {
            cc: format!("{}.{}", cc.0, cc.1),
            class,
            config: best.0.config.name().to_string(),
            source: source.to_string(),
            size: Some(format!("{m}x{n}x{k}")),
            tflops: Some(round2(best.1)),
            cublas_tflops: self.cublas.iter().find(|c| c.0 == class).and_then(|c| c.1).map(round2),
        })
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Runs the sweep over `classes`.
///
/// # Errors
/// A PTX without rung 8 (below cc 8.0), or a failed allocation, launch or cuBLAS call.
pub fn sweep(lab: &Lab, classes: &[ShapeClass]) -> Result<Sweep> {
    let configs = tuned_available(lab.gpu.ptx);
    if configs.is_empty() {
        refuse!(
            "the {} PTX this device runs has no configuration of rung 8: autotune needs cc 8.0 or later (cp.async)",
            lab.gpu.ptx.arch
        );
    }
    let cublas = Cublas::open(&lab.gpu)?;
    let rungs: Vec<Rung> = configs.iter().copied().map(Rung::tuned).collect();
    // One check per configuration and odd size, in check_odd_sizes's order (size-major).
    let odd = check_odd_sizes(lab, &rungs)?;
    let correct = |i: usize| odd.iter().skip(i).step_by(rungs.len()).all(|c| c.passed());
    let split_k = crate::ptx::kernel_names(lab.gpu.ptx.text).contains(&SPLIT_K);
    let split_odd = if split_k { check_split_k_odd_sizes(lab)? } else { Vec::new() };
    let split_correct = split_odd.iter().all(|c| c.passed());
    let mut header = vec!["configuration".to_string(), "threads".into(), "shared B".into()];
    let mut table: Vec<Vec<String>> =
        configs.iter().map(|c| vec![c.name.to_string(), c.threads().to_string(), c.smem_bytes().to_string()]).collect();
    if split_k {
        let c = Pick::SplitK.tile();
        table.push(vec![format!("{SPLIT_K} (model's split)"), c.threads().to_string(), c.smem_bytes().to_string()]);
    }
    let mut cublas_row = vec!["cuBLAS SGEMM (FP32)".to_string(), "-".into(), "-".into()];
    let (mut points, mut cublas_rates, mut checks) = (Vec::new(), Vec::new(), odd.clone());
    checks.extend(split_odd);
    for &class in classes {
        let (m, n, k) = class.representative();
        header.push(format!("TFLOP/s {m}x{n}x{k} ({})", class.name()));
        let mut ops = Operands::new(&lab.gpu, (m, n, k))?;
        let c = time_cublas(lab, cublas.as_ref(), &ops, Precision::F32)?.map(|t| t.tflops(ops.flop()));
        cublas_rates.push((class, c));
        cublas_row.push(c.map_or("skipped".into(), |c| format!("{c:.2}")));
        for (i, (rung, row)) in rungs.iter().zip(&mut table).enumerate() {
            poison(&ops.c)?;
            let launch = ops.launch(rung.launch);
            launch.enqueue(&lab.gpu)?;
            let (check, _) = ops.check(&lab.gpu)?;
            let ok = check.passed() && correct(i);
            checks.push(check);
            let tflops = if ok {
                Some(time(&lab.gpu, lab.settings.repeats, || launch.enqueue(&lab.gpu))?.tflops(ops.flop()))
            } else {
                None
            };
            row.push(tflops.map_or("wrong result".into(), |t| format!("{t:.2}")));
            points.push(Point { config: Pick::Plain(configs[i]), class, tflops });
        }
        if split_k {
            let (cell, check, point) = split_k_point(lab, &mut ops, split_correct, class)?;
            table[rungs.len()].push(cell);
            checks.push(check);
            points.push(point);
        }
    }
    table.push(cublas_row);
    let mut sweep = Sweep {
        points,
        cublas: cublas_rates,
        section: Section {
            name: "autotune".into(),
            title: "Autotuning rung 8: every compiled configuration per shape class".into(),
            lesson: "The fastest tile depends on the GPU and on the shape: large products want big tiles (more reuse per load), small ones enough blocks to fill every SM.".into(),
            kernels: Vec::new(),
            sweep: Some((header, table)),
            checks,
            notes: Vec::new(),
            series: Vec::new(),
        },
    };
    sweep.section.notes = choice_notes(&sweep, lab.gpu.info.cc, classes);
    Ok(sweep)
}

/// The split-K rung at the model's split on `ops`: its cell, its check, and its point (timed
/// only when it and its odd-size checks passed).
fn split_k_point(
    lab: &Lab,
    ops: &mut Operands,
    odd_correct: bool,
    class: ShapeClass,
) -> Result<(String, Check, Point)> {
    let split = measure_split_k(lab, ops)?;
    let ok = split.row.check.passed() && odd_correct;
    let tflops = ok.then(|| split.row.rate.value());
    let cell = tflops.map_or("wrong result".into(), |t| format!("{t:.2} ({} splits)", split.plan.chosen.splits));
    Ok((cell, split.row.check, Point { config: Pick::SplitK, class, tflops }))
}

/// One note per class naming its choice and its share of cuBLAS, then what was checked.
fn choice_notes(sweep: &Sweep, cc: (u32, u32), classes: &[ShapeClass]) -> Vec<String> {
    let mut notes: Vec<String> = classes
        .iter()
        .map(|&class| match sweep.choice(cc, class, "") {
            Some(c) => format!(
                "{}: {} at {:.2} TFLOP/s{}",
                class.name(),
                c.config,
                c.tflops.unwrap_or(0.0),
                c.cublas_tflops
                    .map_or(String::new(), |b| format!(", {:.0}% of cuBLAS", 100.0 * c.tflops.unwrap_or(0.0) / b))
            ),
            None => format!("{}: no configuration gave a correct result", class.name()),
        })
        .collect();
    notes.push(format!(
        "each configuration checked element by element on {}, and on sampled dot products at each timed size",
        ODD_GEMM_SIZES.map(|(m, n, k)| format!("{m}x{n}x{k}")).join(" and ")
    ));
    notes
}
