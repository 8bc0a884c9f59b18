//! Every kernel's typed launch, in one namespace: `kernels::transpose_padded(&input, &mut
//! output, rows, cols)` returns the [`Launch`](crate::gpu::launch::Launch) that owns the entry
//! name, the launch shape (from the `memlab-contracts` crate) and the argument list. Each is
//! declared with [`kernels!`](crate::kernels!) in the demo module that owns the kernel; a kernel
//! added to a module appears here by itself.

pub use crate::demos::banks::kernels::*;
pub use crate::demos::clusters::kernels::*;
pub use crate::demos::coalescing::kernels::*;
pub use crate::demos::hierarchy::bandwidth::kernels::*;
pub use crate::demos::hierarchy::latency::kernels::*;
pub use crate::demos::hierarchy::spills::kernels::*;
pub use crate::demos::l2::partitions::kernels::*;
pub use crate::demos::l2::persisting::kernels::*;
pub use crate::demos::l2::policies::kernels::*;
pub use crate::demos::matmul::kernels::*;
pub use crate::demos::occupancy::kernels::*;
pub use crate::demos::race::kernels::*;
pub use crate::demos::roofline::kernels::*;
pub use crate::demos::sgemm::kernels::*;
pub use crate::demos::sgemm::tuned::kernels::*;
pub use crate::demos::tensor::kernels::*;
pub use crate::demos::tma::kernels::*;
pub use crate::demos::transpose::kernels::*;

use crate::demos;
use crate::gpu::launch::Entry;

/// The entries of every typed launch, module by module.
pub const TABLES: [&[Entry]; 18] = [
    demos::banks::ENTRIES,
    demos::clusters::ENTRIES,
    demos::coalescing::ENTRIES,
    demos::hierarchy::bandwidth::ENTRIES,
    demos::hierarchy::latency::ENTRIES,
    demos::hierarchy::spills::ENTRIES,
    demos::l2::partitions::ENTRIES,
    demos::l2::persisting::ENTRIES,
    demos::l2::policies::ENTRIES,
    demos::matmul::ENTRIES,
    demos::occupancy::ENTRIES,
    demos::race::ENTRIES,
    demos::roofline::ENTRIES,
    demos::sgemm::ENTRIES,
    demos::sgemm::tuned::ENTRIES,
    demos::tensor::ENTRIES,
    demos::tma::ENTRIES,
    demos::transpose::ENTRIES,
];

/// Every entry the host launches.
pub fn entries() -> impl Iterator<Item = &'static Entry> {
    TABLES.into_iter().flatten()
}
