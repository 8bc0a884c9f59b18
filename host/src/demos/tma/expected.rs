//! What each output must be, and its exact check, the padding after each row excluded.

use std::cell::RefCell;

use anyhow::Result;
use cust::memory::DeviceBuffer;

use super::layout::Stored;
use crate::gpu::Gpu;
use crate::gpu::staging::Staging;
use crate::lab::recheck_exact_staged;
use crate::reference;
use crate::verify::{Check, Streamed};

/// What each output element must be.
#[derive(Clone, Copy)]
pub(super) enum Want<'a> {
    /// The input itself (a copy's output), held on the host.
    Input(&'a [f32]),
    /// The transpose of the `rows x cols` input of seed `seed`, from the generator.
    Transposed { seed: u64, rows: usize, cols: usize },
}

/// What each output element must be, where the output holds it, and the first output that
/// passed its full check against it: every later dense output is only compared
/// ([`recheck_exact_staged`]), its check that one's when every element matches.
pub(super) struct Expected<'a> {
    want: Want<'a>,
    stored: Stored,
    passed: RefCell<Option<Check>>,
}

impl<'a> Expected<'a> {
    pub(super) fn new(want: Want<'a>, stored: Stored) -> Expected<'a> {
        Expected { want, stored, passed: RefCell::new(None) }
    }

    /// `output` checked exactly against this expectation through `staging`: the elements of its
    /// matrix, the padding after each row excluded, in the order of the unpadded matrix. Each
    /// kind of expectation is its own closure, so the per-element comparison inlines and the
    /// copies' can be vectorized (a `dyn Fn` call per element cannot).
    pub(super) fn check(&self, gpu: &Gpu, staging: &mut Staging<f32>, output: &DeviceBuffer<f32>) -> Result<Check> {
        let passed = self.passed.borrow().clone();
        fn run(
            gpu: &Gpu,
            staging: &mut Staging<f32>,
            (output, stored): (&DeviceBuffer<f32>, Stored),
            passed: Option<Check>,
            want: impl Fn(usize) -> f32 + Sync,
        ) -> Result<Check> {
            match passed {
                Some(passed) if stored.pitch == stored.cols && stored.elements() == output.len() => {
                    recheck_exact_staged(gpu, staging, output, want, &passed)
                }
                _ => {
                    let mut check = Streamed::new();
                    staging.download_pitched(gpu, output, stored.dims(), |_, run| check.chunk_f32(run, &want))?;
                    Ok(check.finish())
                }
            }
        }
        let out = (output, self.stored);
        let check = match self.want {
            Want::Input(input) => run(gpu, staging, out, passed, |i| input[i])?,
            Want::Transposed { seed, rows, cols } => run(gpu, staging, out, passed, |i| {
                reference::input_f32(seed, reference::transposed_from(i, rows, cols))
            })?,
        };
        if check.passed() {
            self.passed.borrow_mut().get_or_insert_with(|| check.clone());
        }
        Ok(check)
    }
}
