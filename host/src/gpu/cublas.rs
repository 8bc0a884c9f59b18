//! cuBLAS SGEMM as the yardstick of the SGEMM ladder, loaded at run time (`dlopen` through
//! `libloading`), so the binary still needs only the driver: where no `libcublas.so*` is found,
//! the callers skip the comparison with a note.
//!
//! Search order: `$MEMLAB_CUBLAS` (a file), then the folders of [`super::libs`], with the
//! [`WHEEL_DIRS`] of the Python packages (where PyPI's cuBLAS wheels, and so PyTorch, keep it).

use std::ffi::{c_int, c_void};
use std::path::{Path, PathBuf};

use anyhow::Result;
use cust::memory::DeviceBuffer;

use super::context::Gpu;
use super::libs::Library;
use crate::refuse;

/// `cublasOperation_t::CUBLAS_OP_N`.
pub(super) const OP_N: c_int = 0;
/// `cublasOperation_t::CUBLAS_OP_T`.
pub(super) const OP_T: c_int = 1;
/// `cudaDataType_t::CUDA_R_16BF`.
pub(super) const R_16BF: c_int = 14;
/// `cublasComputeType_t::CUBLAS_COMPUTE_32F`: FP32 accumulation.
pub(super) const COMPUTE_32F: c_int = 68;
/// `cudaDataType_t::CUDA_R_32F`.
pub(super) const R_32F: c_int = 0;
/// `cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32`: FP32 in and out, products in TF32 on
/// the tensor cores.
const COMPUTE_32F_FAST_TF32: c_int = 77;

/// The input types of [`Cublas::gemm_nt`]: element, cuBLAS data and compute types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmKind {
    /// BF16 `A`, `B` and `C` (`CUDA_R_16BF`), FP32 accumulation (`CUBLAS_COMPUTE_32F`).
    Bf16,
    /// FP32 `A`, `B` and `C` (`CUDA_R_32F`), multiplied in TF32 (`CUBLAS_COMPUTE_32F_FAST_TF32`).
    Tf32,
}

impl GemmKind {
    /// Bytes of one element, cuBLAS's data type and compute type.
    fn types(self) -> (usize, c_int, c_int) {
        match self {
            GemmKind::Bf16 => (2, R_16BF, COMPUTE_32F),
            GemmKind::Tf32 => (4, R_32F, COMPUTE_32F_FAST_TF32),
        }
    }
}
/// `cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT`.
const GEMM_DEFAULT: c_int = -1;
/// `cublasMath_t::CUBLAS_DEFAULT_MATH`: FP32 math, no TF32 tensor cores (cuBLAS documentation,
/// `cublasSetMathMode`).
const DEFAULT_MATH: c_int = 0;
/// `cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH`: FP32 GEMMs may run on tensor cores in TF32
/// (cuBLAS documentation, `cublasSetMathMode`).
const TF32_MATH: c_int = 3;

type Handle = *mut c_void;
type Create = unsafe extern "C" fn(*mut Handle) -> c_int;
type Destroy = unsafe extern "C" fn(Handle) -> c_int;
type SetStream = unsafe extern "C" fn(Handle, *mut c_void) -> c_int;
type SetMathMode = unsafe extern "C" fn(Handle, c_int) -> c_int;
#[allow(clippy::type_complexity)]
type Sgemm = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const f32,
    *const f32,
    c_int,
    *const f32,
    c_int,
    *const f32,
    *mut f32,
    c_int,
) -> c_int;

#[allow(clippy::type_complexity)]
type GemmEx = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    *mut c_void,
    c_int,
    c_int,
    c_int,
    c_int,
) -> c_int;

/// A cuBLAS handle bound to the lab's stream.
pub struct Cublas {
    handle: Handle,
    sgemm: Sgemm,
    gemm_ex: GemmEx,
    set_math: SetMathMode,
    destroy: Destroy,
    // Dropped after the handle (see Drop): the function pointers point into it.
    lib: Library,
}

/// The folders of the Python packages where PyPI's cuBLAS wheels (and so PyTorch) keep
/// `libcublas.so*` and `libcublasLt.so*`.
pub const WHEEL_DIRS: [&str; 3] = ["nvidia/cublas/lib", "nvidia/cu13/lib", "nvidia/cu12/lib"];

/// The first `libcublas.so*` (not `libcublasLt`) found by [`super::libs::find`], with
/// `$MEMLAB_CUBLAS` and the wheels' [`WHEEL_DIRS`].
pub fn find() -> Option<PathBuf> {
    super::libs::find("MEMLAB_CUBLAS", "libcublas.so", &WHEEL_DIRS)
}

/// The note for a run without cuBLAS (where [`find`] finds none).
pub const NO_CUBLAS: &str = "cuBLAS not found: skipped (set MEMLAB_CUBLAS=/path/to/libcublas.so to point at one)";

/// [`super::libs::status`] of a cuBLAS call.
fn status(what: &str, code: c_int) -> Result<()> {
    super::libs::status("cuBLAS", what, code)
}

impl Cublas {
    /// Loads cuBLAS and creates a handle on the lab's stream with the default (FP32, no TF32)
    /// math mode; `Ok(None)` when no library is found.
    ///
    /// # Errors
    /// A library that is found but cannot be loaded or initialised.
    pub fn open(gpu: &Gpu) -> Result<Option<Cublas>> {
        let Some(path) = find() else { return Ok(None) };
        // SAFETY: loading cuBLAS runs its initialisers, which have no preconditions.
        let lib = unsafe { Library::load(path) }?;
        // SAFETY: the symbol types are cuBLAS's v2 API signatures (cublas_api.h), called only
        // while `lib` lives in the handle.
        unsafe {
            let create: Create = lib.symbol("cublasCreate_v2")?;
            let set_stream: SetStream = lib.symbol("cublasSetStream_v2")?;
            let (sgemm, gemm_ex) = (lib.symbol("cublasSgemm_v2")?, lib.symbol("cublasGemmEx")?);
            let (set_math, destroy) = (lib.symbol("cublasSetMathMode")?, lib.symbol("cublasDestroy_v2")?);
            let mut handle: Handle = std::ptr::null_mut();
            status("cublasCreate", create(&mut handle))?;
            // Built before the calls that may fail, so that Drop destroys the handle.
            let cublas = Cublas { handle, sgemm, gemm_ex, set_math, destroy, lib };
            status("cublasSetStream", set_stream(handle, gpu.stream.as_inner() as *mut c_void))?;
            status("cublasSetMathMode(CUBLAS_DEFAULT_MATH)", (cublas.set_math)(handle, DEFAULT_MATH))?;
            Ok(Some(cublas))
        }
    }

    /// The library file that was loaded.
    pub fn path(&self) -> &Path {
        &self.lib.path
    }

    /// Lets the following SGEMMs use TF32 tensor cores (`CUBLAS_TF32_TENSOR_OP_MATH`) or not
    /// (`CUBLAS_DEFAULT_MATH`, the mode [`Cublas::open`] sets).
    ///
    /// # Errors
    /// A cuBLAS error status.
    pub fn allow_tf32(&self, allow: bool) -> Result<()> {
        let (mode, name) = if allow { (TF32_MATH, "TF32_TENSOR_OP_MATH") } else { (DEFAULT_MATH, "DEFAULT_MATH") };
        // SAFETY: a live handle and a valid mode.
        status(&format!("cublasSetMathMode(CUBLAS_{name})"), unsafe { (self.set_math)(self.handle, mode) })
    }

    /// Enqueues row-major `C = A * B` (`A` is `m x k`, `B` is `k x n`): cuBLAS is column-major,
    /// so it computes `C^T = B^T A^T`, which has the same bytes as row-major `C`.
    ///
    /// # Errors
    /// A cuBLAS error status, or sizes above `i32::MAX`.
    pub fn sgemm(
        &self,
        a: &DeviceBuffer<f32>,
        b: &DeviceBuffer<f32>,
        c: &DeviceBuffer<f32>,
        (m, n, k): (usize, usize, usize),
    ) -> Result<()> {
        let dim = |v: usize| c_int::try_from(v).map_err(|_| anyhow::anyhow!("cuBLAS: dimension {v} above i32::MAX"));
        let (m, n, k) = (dim(m)?, dim(n)?, dim(k)?);
        let (alpha, beta) = (1.0f32, 0.0f32);
        let ptr = |buf: &DeviceBuffer<f32>| buf.as_device_ptr().as_raw() as *mut f32;
        // SAFETY: the buffers hold m k, k n, m n floats and outlive the stream's work (callers
        // synchronise before dropping them); alpha and beta are read before the call returns.
        let code =
            unsafe { (self.sgemm)(self.handle, OP_N, OP_N, n, m, k, &alpha, ptr(b), n, ptr(a), k, &beta, ptr(c), n) };
        status("cublasSgemm", code)
    }
}

impl Cublas {
    /// Enqueues row-major `C = A * B^T` of `kind` with FP32 accumulation (`cublasGemmEx`): `A`
    /// is `m x k`, `B` is `n x k` (the layout of the tensor ladder, `memlab_contracts::tensor`),
    /// `C` is `m x n`, each buffer of `kind`'s elements (BF16 bit patterns or FP32).
    /// Column-major, that is `C^T = B A^T`: `B` read transposed (`OP_T`, leading dimension
    /// `pitch`), `A^T` as it lies (`OP_N`, `pitch`), `C^T` with leading dimension `n`; `pitch`
    /// (`>= k`) is the elements from one row of `A` or `B` to the next.
    ///
    /// # Errors
    /// A cuBLAS error status, sizes above `i32::MAX`, buffers smaller than the sizes, or an
    /// element type that is not `kind`'s.
    pub fn gemm_nt<T: cust::memory::DeviceCopy, C: cust::memory::DeviceCopy>(
        &self,
        kind: GemmKind,
        (a, b, c): (&DeviceBuffer<T>, &DeviceBuffer<T>, &DeviceBuffer<C>),
        (m, n, k): (usize, usize, usize),
        pitch: usize,
    ) -> Result<()> {
        let (bytes, data, compute) = kind.types();
        if std::mem::size_of::<T>() != bytes || std::mem::size_of::<C>() != bytes {
            refuse!(
                "cuBLAS GemmEx {kind:?}: elements of {} and {} bytes, not {bytes}",
                std::mem::size_of::<T>(),
                std::mem::size_of::<C>()
            );
        }
        if pitch < k || a.len() < m * pitch || b.len() < n * pitch || c.len() < m * n {
            refuse!(
                "cuBLAS GemmEx: buffers of {}, {}, {} elements for a {m}x{n}x{k} product",
                a.len(),
                b.len(),
                c.len()
            );
        }
        let dim = |v: usize| c_int::try_from(v).map_err(|_| anyhow::anyhow!("cuBLAS: dimension {v} above i32::MAX"));
        let (m, n, k, ld) = (dim(m)?, dim(n)?, dim(k)?, dim(pitch)?);
        let (alpha, beta) = (1.0f32, 0.0f32);
        let ptr = |buf: &DeviceBuffer<T>| buf.as_device_ptr().as_raw() as *mut c_void;
        let c = c.as_device_ptr().as_raw() as *mut c_void;
        let alpha = (&alpha as *const f32).cast();
        let beta = (&beta as *const f32).cast();
        // SAFETY: the buffers hold at least the elements read and written, of the data type's
        // size (checked above), and outlive the stream's work (callers synchronise before
        // dropping them); alpha and beta are FP32, as both compute types read them, and read
        // before the call returns.
        let code = unsafe {
            (self.gemm_ex)(
                self.handle,
                OP_T,
                OP_N,
                n,
                m,
                k,
                alpha,
                ptr(b),
                data,
                ld,
                ptr(a),
                data,
                ld,
                beta,
                c,
                data,
                n,
                compute,
                GEMM_DEFAULT,
            )
        };
        status("cublasGemmEx", code)
    }
}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: the handle was created by cublasCreate_v2 and is destroyed once.
        unsafe { (self.destroy)(self.handle) };
    }
}
