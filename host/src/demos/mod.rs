//! The lessons: one module per memory level or technique. Each owns its kernels' launch shapes
//! (its `shapes` module; the typed launches themselves are generated into
//! [`crate::launches`]), allocates its inputs, launches its kernels, checks every result against
//! the CPU reference, asks the driver for the kernels' figures, times them with events and
//! returns a [`crate::lab::Section`] of the report, through the measurement core below
//! ([`crate::lab`]) and the shared probes ([`crate::probes`]). A lesson names no other lesson:
//! what several need (the memcpy ceiling) is measured once by its owner and passed in as
//! [`crate::lab::Inputs`]. The summaries above them (`summary/`) compose them, and the
//! registry (`registry.rs`) lists them for `run-demos`.

use crate::lab::{Entry, Lesson, OptionsFor, Shared};

/// Declares the lessons in the order `run-demos` runs them: each module, its lesson type, and
/// its options as a field of [`Options`]. A new lesson is one line here.
macro_rules! lessons {
    ($($module:ident :: $lesson:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// Every lesson's own flags, one field per lesson (flattened into `run-demos` and
        /// `bench`).
        #[derive(clap::Args, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[group(skip)]
        pub struct Options {
            $(
                #[allow(missing_docs)]
                #[command(flatten)]
                pub $module: <$module::$lesson as Lesson>::Options,
            )*
        }

        $(
            impl<O: HasOptions> OptionsFor<$module::$lesson> for O {
                fn options(&self) -> <$module::$lesson as Lesson>::Options {
                    self.lessons().$module.clone()
                }
            }
        )*

        /// The lessons' entries, in order, on options `O`.
        pub const fn lessons<O: HasOptions>() -> [Entry<O>; [$(stringify!($module)),*].len()] {
            [$(Entry::of::<$module::$lesson>()),*]
        }
    };
}

lessons! {
    memcpy::Memcpy,
    transpose::Transpose,
    matmul::Matmul,
    sgemm::Sgemm,
    tensor::Tensor,
    coalescing::Coalescing,
    banks::Banks,
    occupancy::Occupancy,
    clusters::Clusters,
    l2::L2,
    tma::Tma,
    reduction::Reduction,
}

pub mod host_memory;
pub mod peer;
pub mod race;

/// Options that hold the lessons' [`Options`].
pub trait HasOptions {
    /// The lessons' options.
    fn lessons(&self) -> &Options;
}

impl Options {
    /// The sizes several lessons measure at, from the lessons that own them.
    pub fn shared(&self) -> Shared {
        Shared {
            matrix: self.transpose.matrix,
            sweep: self.transpose.sweep().to_vec(),
            gemm: self.sgemm.shapes.first().copied(),
            matmul: self.matmul.tiled,
        }
    }
}

/// One field of the recorded H200 run (`docs/report/run.json`), for the demos' unit tests,
/// which check their notes against real rows.
#[cfg(test)]
pub(crate) fn recorded<T: serde::de::DeserializeOwned>(field: &str) -> T {
    let run: serde_json::Value = serde_json::from_str(include_str!("../../../docs/report/run.json")).unwrap();
    serde_json::from_value(run[field].clone()).unwrap_or_else(|e| panic!("run.json's {field}: {e}"))
}
