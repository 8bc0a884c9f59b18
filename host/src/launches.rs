//! Every kernel's typed launch, generated at build time (`host/build/launches.rs`) from the
//! kernel's own signature in `kernels-gpu/src`, so a parameter list is written once.
//!
//! `launches::transpose_padded(shape, &input, &mut output, rows, cols)` returns the
//! [`Launch`] of that entry with `shape` ([`LaunchShape`]: each lesson's `shapes` module owns
//! its kernels' shapes) and the arguments in the entry's order, each a
//! [`KernelArg`](crate::gpu::launch::KernelArg): `GlobalIn<T>` is passed as
//! `&DeviceBuffer<T>`, `GlobalOut<T>` as `&mut DeviceBuffer<T>`, a tensor-map slot as a
//! [`MapSlot`], scalars as themselves. [`entry`] holds each entry's name and PTX parameters,
//! [`ENTRIES`] all of them, which `tests/launch_params.rs` checks against every PTX build.

use cust::memory::DeviceBuffer;

use crate::gpu::launch::{Entry, KernelArg, Launch, LaunchShape};
use crate::gpu::tensor_map::MapSlot;

include!(concat!(env!("OUT_DIR"), "/launches.rs"));
