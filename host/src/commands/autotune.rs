//! `memlab autotune`: times every compiled configuration of rung 8 at each shape class's size
//! (`demos::sgemm::autotune`), prints the table, and with `--write` records the fastest per class for
//! this GPU's compute capability in an autotune file (`crate::tuned`), keeping the choices for
//! other capabilities that file already holds.

use std::path::PathBuf;

use anyhow::Result;

use crate::demos::sgemm::autotune;
use crate::gpu::Gpu;
use crate::lab::{Lab, Settings};
use crate::present::report;
use crate::tuned::{ShapeClass, TunedFile};

/// Options of `autotune`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Write the choices to this autotune file (merged into it when it exists, else into the
    /// embedded one); the repository's is host/tuned/sgemm.json, which the build embeds, and
    /// MEMLAB_TUNED=FILE makes run-demos and bench read another one.
    #[arg(long)]
    pub write: Option<PathBuf>,
    /// Timed and warm-up runs per configuration.
    #[command(flatten)]
    pub runs: super::Runs,
}

/// Runs the sweep and writes the file; returns whether every check passed.
pub fn run(args: Args) -> Result<bool> {
    if let Some(path) = &args.write {
        crate::present::output::check_file("--write", path)?;
    }
    // The file merged into is read before any GPU work, so a bad one is refused first.
    let base = match &args.write {
        Some(path) if path.exists() => Some(TunedFile::read(path)?),
        Some(_) => Some(TunedFile::parse(crate::tuned::EMBEDDED, crate::tuned::DEFAULT_PATH)?),
        None => None,
    };
    let gpu = Gpu::open(args.device, None)?;
    let lab = Lab::new(gpu, Settings { repeats: args.runs.repeats(), ..Settings::default() });
    let sweep = autotune::sweep(&lab, &ShapeClass::ALL)?;
    let info = &lab.gpu.info;
    println!(
        "# memlab autotune on {} (cc {}.{})\n\n{}",
        info.name,
        info.cc.0,
        info.cc.1,
        report::section(&sweep.section, None)
    );
    if let (Some(path), Some(mut file)) = (&args.write, base) {
        let source = format!("memlab autotune on {} ({} timed runs, median)", info.name, args.runs.runs);
        for class in ShapeClass::ALL {
            if let Some(choice) = sweep.choice(info.cc, class, &source) {
                file.set(choice);
            }
        }
        crate::present::output::write(path, file.to_text())?;
        println!("wrote the choices for cc {}.{} to {}", info.cc.0, info.cc.1, path.display());
    }
    Ok(sweep.section.passed())
}
