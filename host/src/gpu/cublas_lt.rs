//! cuBLASLt's FP8 GEMM (`cublasLtMatmul`) as the yardstick of the tensor ladder's FP8 rung,
//! loaded at run time like [`super::cublas`]: where no `libcublasLt.so*` is found, the caller
//! skips the comparison with a note. `cublasGemmEx` has no FP8 types; `cublasLtMatmul` has.
//!
//! Search order: `$MEMLAB_CUBLASLT` (a file), then the folders of [`super::libs`] with the
//! wheels' [`super::cublas::WHEEL_DIRS`].
//!
//! The product is the ladder's row-major `C = alpha A B^T`: `A` is `m x pitch` and `B` is
//! `n x pitch` e4m3 bytes (`k <= pitch`, `pitch` a multiple of 16 bytes), `C` is `m x n` BF16.
//! cuBLASLt is column-major and its FP8 kernels take only the "TN" form (cuBLAS documentation,
//! `cublasLtMatmul`, FP8 requirements: its `A` transposed, its `B` not), so it computes the
//! column-major `C^T = op(B) op(A)`, `n x m` with leading dimension `n`, which has the bytes of
//! row-major `C`: its `A` is the lab's `B` read as `k x n` (leading dimension `pitch`) with
//! `CUBLAS_OP_T`, its `B` the lab's `A` read as `k x m` (`pitch`) with `CUBLAS_OP_N`, its `C`
//! and `D` the lab's `C` in BF16. FP32 compute and scale (`CUBLAS_COMPUTE_32F`, `CUDA_R_32F`),
//! `beta = 0`, and fast accumulation (`CUBLASLT_MATMUL_DESC_FAST_ACCUM = 1`): the sums stay in
//! the tensor cores' accumulator over the whole `k`, as the lab's rung keeps them, rather than
//! being promoted to FP32 every few steps. Signatures and enum values: cublasLt.h and
//! library_types.h.

use std::ffi::{c_int, c_void};
use std::path::{Path, PathBuf};

use anyhow::Result;
use cust::memory::{DeviceBuffer, DeviceCopy};

use super::context::Gpu;
// The cublas_api.h and library_types.h values cuBLAS's calls share.
use super::cublas::{COMPUTE_32F, OP_N, OP_T, R_16BF, R_32F};
use super::libs::Library;
use crate::refuse;

/// `cudaDataType_t::CUDA_R_8F_E4M3`.
const R_8F_E4M3: c_int = 28;
/// `cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA` (`int32_t`).
const DESC_TRANSA: c_int = 3;
/// `cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB` (`int32_t`).
const DESC_TRANSB: c_int = 4;
/// `cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_FAST_ACCUM` (`int8_t`).
const DESC_FAST_ACCUM: c_int = 25;
/// `cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES` (`uint64_t`).
const PREF_MAX_WORKSPACE_BYTES: c_int = 1;
/// The device workspace cuBLASLt's algorithms may use, bytes.
const WORKSPACE_BYTES: usize = 32 << 20;

type Handle = *mut c_void;
type Desc = *mut c_void;
type Layout = *mut c_void;
type Pref = *mut c_void;
type Status = c_int;

/// `cublasLtMatmulAlgo_t`: an opaque algorithm, filled by the heuristic.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Algo {
    data: [u64; 8],
}

/// `cublasLtMatmulHeuristicResult_t` (cublasLt.h): 96 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct HeuristicResult {
    algo: Algo,
    workspace_size: usize,
    state: Status,
    waves_count: f32,
    reserved: [c_int; 4],
}

/// The entry points the lab calls, with cublasLt.h's signatures.
struct Api {
    create: unsafe extern "C" fn(*mut Handle) -> Status,
    destroy: unsafe extern "C" fn(Handle) -> Status,
    desc_create: unsafe extern "C" fn(*mut Desc, c_int, c_int) -> Status,
    desc_set: unsafe extern "C" fn(Desc, c_int, *const c_void, usize) -> Status,
    desc_destroy: unsafe extern "C" fn(Desc) -> Status,
    layout_create: unsafe extern "C" fn(*mut Layout, c_int, u64, u64, i64) -> Status,
    layout_destroy: unsafe extern "C" fn(Layout) -> Status,
    pref_create: unsafe extern "C" fn(*mut Pref) -> Status,
    pref_set: unsafe extern "C" fn(Pref, c_int, *const c_void, usize) -> Status,
    pref_destroy: unsafe extern "C" fn(Pref) -> Status,
    #[allow(clippy::type_complexity)]
    heuristic: unsafe extern "C" fn(
        Handle,
        Desc,
        Layout,
        Layout,
        Layout,
        Layout,
        Pref,
        c_int,
        *mut HeuristicResult,
        *mut c_int,
    ) -> Status,
    #[allow(clippy::type_complexity)]
    matmul: unsafe extern "C" fn(
        Handle,
        Desc,
        *const c_void,
        *const c_void,
        Layout,
        *const c_void,
        Layout,
        *const c_void,
        *const c_void,
        Layout,
        *mut c_void,
        Layout,
        *const Algo,
        *mut c_void,
        usize,
        *mut c_void,
    ) -> Status,
}

impl Api {
    /// The entry points of `lib`.
    ///
    /// # Safety
    /// `lib` is cuBLASLt (the types are cublasLt.h's), and the pointers are called only while
    /// it is loaded.
    unsafe fn of(lib: &Library) -> Result<Api> {
        // SAFETY: the caller's word.
        unsafe {
            Ok(Api {
                create: lib.symbol("cublasLtCreate")?,
                destroy: lib.symbol("cublasLtDestroy")?,
                desc_create: lib.symbol("cublasLtMatmulDescCreate")?,
                desc_set: lib.symbol("cublasLtMatmulDescSetAttribute")?,
                desc_destroy: lib.symbol("cublasLtMatmulDescDestroy")?,
                layout_create: lib.symbol("cublasLtMatrixLayoutCreate")?,
                layout_destroy: lib.symbol("cublasLtMatrixLayoutDestroy")?,
                pref_create: lib.symbol("cublasLtMatmulPreferenceCreate")?,
                pref_set: lib.symbol("cublasLtMatmulPreferenceSetAttribute")?,
                pref_destroy: lib.symbol("cublasLtMatmulPreferenceDestroy")?,
                heuristic: lib.symbol("cublasLtMatmulAlgoGetHeuristic")?,
                matmul: lib.symbol("cublasLtMatmul")?,
            })
        }
    }
}

/// [`super::libs::status`] of a cuBLASLt call.
fn status(what: &str, code: Status) -> Result<()> {
    super::libs::status("cuBLASLt", what, code)
}

/// One column-major matrix as `cublasLtMatrixLayoutCreate` takes it: data type, rows, columns
/// and leading dimension (elements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutArgs {
    pub data: c_int,
    pub rows: u64,
    pub cols: u64,
    pub ld: i64,
}

/// cuBLASLt's arguments for the ladder's `m x n x k` FP8 product (see the module's layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fp8Args {
    /// `CUBLASLT_MATMUL_DESC_TRANSA`: the operation on cuBLASLt's `A`, the lab's `B`.
    pub transa: c_int,
    /// `CUBLASLT_MATMUL_DESC_TRANSB`: the operation on cuBLASLt's `B`, the lab's `A`.
    pub transb: c_int,
    /// The lab's `B` as cuBLASLt's `A`: `k x n` e4m3, leading dimension `pitch`.
    pub b: LayoutArgs,
    /// The lab's `A` as cuBLASLt's `B`: `k x m` e4m3, leading dimension `pitch`.
    pub a: LayoutArgs,
    /// The lab's `C` as cuBLASLt's `C` and `D`: `n x m` BF16, leading dimension `n`.
    pub c: LayoutArgs,
}

/// The arguments of an `m x n x k` product whose `A` and `B` rows are `pitch` bytes apart.
///
/// # Errors
/// One line: a dimension or `pitch` above `i32::MAX`, a `pitch` that is not a multiple of 16
/// (FP8 rows must be 16-byte aligned) or below `k`.
pub fn fp8_args((m, n, k): (usize, usize, usize), pitch: usize) -> Result<Fp8Args> {
    if let Some(v) = [m, n, k, pitch].into_iter().find(|&v| i32::try_from(v).is_err()) {
        refuse!("cuBLASLt FP8: dimension {v} above i32::MAX");
    }
    if !pitch.is_multiple_of(16) {
        refuse!("cuBLASLt FP8: rows {pitch} bytes apart, not a multiple of 16 (FP8 rows must be 16-byte aligned)");
    }
    if pitch < k {
        refuse!("cuBLASLt FP8: rows {pitch} bytes apart cannot hold k = {k} elements");
    }
    let (m, n, k, ld) = (m as u64, n as u64, k as u64, pitch as i64);
    Ok(Fp8Args {
        transa: OP_T,
        transb: OP_N,
        b: LayoutArgs { data: R_8F_E4M3, rows: k, cols: n, ld },
        a: LayoutArgs { data: R_8F_E4M3, rows: k, cols: m, ld },
        c: LayoutArgs { data: R_16BF, rows: n, cols: m, ld: n as i64 },
    })
}

/// Refuses buffers of `(a, b, c)` elements too small for an `m x n x k` product with rows
/// `pitch` apart (`A` `m x pitch`, `B` `n x pitch`, `C` `m x n`).
///
/// # Errors
/// One line naming the sizes.
pub fn check_buffers((m, n, k): (usize, usize, usize), pitch: usize, (a, b, c): (usize, usize, usize)) -> Result<()> {
    let short = |len: usize, rows: usize, cols: usize| rows.checked_mul(cols).is_none_or(|need| len < need);
    if short(a, m, pitch) || short(b, n, pitch) || short(c, m, n) {
        refuse!("cuBLASLt FP8: buffers of {a}, {b}, {c} elements for a {m}x{n}x{k} product with rows {pitch} apart");
    }
    Ok(())
}

/// The first `libcublasLt.so*` found by [`super::libs::find`], with `$MEMLAB_CUBLASLT` and the
/// wheels' [`super::cublas::WHEEL_DIRS`].
pub fn find() -> Option<PathBuf> {
    super::libs::find("MEMLAB_CUBLASLT", "libcublasLt.so", &super::cublas::WHEEL_DIRS)
}

/// The note for a run without cuBLASLt (where [`find`] finds none).
pub const NO_CUBLASLT: &str =
    "cuBLASLt not found: the FP8 reference skipped (set MEMLAB_CUBLASLT=/path/to/libcublasLt.so to point at one)";

/// A cuBLASLt handle with its workspace, enqueuing on `gpu`'s stream.
pub struct CublasLt<'g> {
    gpu: &'g Gpu,
    handle: Handle,
    workspace: DeviceBuffer<u8>,
    api: Api,
    // Dropped after the handle (see Drop): the function pointers point into it.
    lib: Library,
}

impl<'g> CublasLt<'g> {
    /// Loads cuBLASLt, creates a handle and a 32 MiB workspace; `Ok(None)` when no library is
    /// found.
    ///
    /// # Errors
    /// A library that is found but cannot be loaded or initialised, or no room for the
    /// workspace.
    pub fn open(gpu: &'g Gpu) -> Result<Option<CublasLt<'g>>> {
        let Some(path) = find() else { return Ok(None) };
        // SAFETY: loading cuBLASLt runs its initialisers, which have no preconditions.
        let lib = unsafe { Library::load(path) }?;
        // SAFETY: `lib` is cuBLASLt and lives in the handle as long as the pointers.
        let api = unsafe { Api::of(&lib) }?;
        let workspace = DeviceBuffer::zeroed(WORKSPACE_BYTES)
            .map_err(|e| anyhow::anyhow!("cuBLASLt workspace: {}", super::describe(e)))?;
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: cublasLtCreate writes one handle.
        status("cublasLtCreate", unsafe { (api.create)(&mut handle) })?;
        Ok(Some(CublasLt { gpu, handle, workspace, api, lib }))
    }

    /// The library file that was loaded.
    pub fn path(&self) -> &Path {
        &self.lib.path
    }

    /// Plans the ladder's FP8 product of `size` (`m, n, k`) with rows `pitch` bytes apart and
    /// the scale `alpha`: descriptors, layouts and the heuristic's first algorithm.
    ///
    /// # Errors
    /// The refusals of [`fp8_args`], a cuBLASLt error status, or no algorithm for the shape.
    pub fn plan_fp8(&self, size: (usize, usize, usize), pitch: usize, alpha: f32) -> Result<Fp8Plan<'_>> {
        let args = fp8_args(size, pitch)?;
        let api = &self.api;
        let null = std::ptr::null_mut();
        let mut plan = Fp8Plan { lt: self, desc: null, layouts: [null; 3], algo: Algo::default(), size, pitch, alpha };
        // SAFETY: each call writes one descriptor into the plan, whose Drop destroys it.
        unsafe {
            status("cublasLtMatmulDescCreate", (api.desc_create)(&mut plan.desc, COMPUTE_32F, R_32F))?;
            for (slot, l) in plan.layouts.iter_mut().zip([args.b, args.a, args.c]) {
                status("cublasLtMatrixLayoutCreate", (api.layout_create)(slot, l.data, l.rows, l.cols, l.ld))?;
            }
        }
        plan.set("TRANSA", DESC_TRANSA, &args.transa)?;
        plan.set("TRANSB", DESC_TRANSB, &args.transb)?;
        plan.set("FAST_ACCUM", DESC_FAST_ACCUM, &1i8)?;
        plan.algo = self.first_algo(&plan)?;
        Ok(plan)
    }

    /// The heuristic's first algorithm for `plan` within the workspace.
    fn first_algo(&self, plan: &Fp8Plan) -> Result<Algo> {
        let (api, [b, a, c]) = (&self.api, plan.layouts);
        let max = WORKSPACE_BYTES as u64;
        let (mut pref, mut result, mut returned) = (std::ptr::null_mut(), HeuristicResult::default(), 0);
        // SAFETY: the preference is created, set with a u64 (the attribute's type) and
        // destroyed here; the descriptors are the plan's, live; the heuristic writes at most
        // one result (requested: 1) and its count.
        let (set, found) = unsafe {
            status("cublasLtMatmulPreferenceCreate", (api.pref_create)(&mut pref))?;
            let set = (api.pref_set)(pref, PREF_MAX_WORKSPACE_BYTES, (&raw const max).cast(), size_of::<u64>());
            let found = if set == 0 {
                (api.heuristic)(self.handle, plan.desc, b, a, c, c, pref, 1, &mut result, &mut returned)
            } else {
                0
            };
            (api.pref_destroy)(pref);
            (set, found)
        };
        status("cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)", set)?;
        status("cublasLtMatmulAlgoGetHeuristic", found)?;
        let (m, n, k) = plan.size;
        if returned < 1 {
            refuse!("cuBLASLt FP8: cublasLtMatmulAlgoGetHeuristic found no algorithm for {m}x{n}x{k}");
        }
        status("cublasLtMatmulAlgoGetHeuristic's result", result.state)?;
        Ok(result.algo)
    }
}

impl Drop for CublasLt<'_> {
    fn drop(&mut self) {
        // SAFETY: the handle was created by cublasLtCreate and is destroyed once; the plans
        // that use it borrow `self`, so none is left.
        unsafe { (self.api.destroy)(self.handle) };
    }
}

/// The descriptors and algorithm of one FP8 product shape ([`CublasLt::plan_fp8`]).
pub struct Fp8Plan<'a> {
    lt: &'a CublasLt<'a>,
    desc: Desc,
    /// The lab's `B`, `A` and `C` (cuBLASLt's `A`, `B` and `C`/`D`).
    layouts: [Layout; 3],
    algo: Algo,
    size: (usize, usize, usize),
    pitch: usize,
    alpha: f32,
}

impl Fp8Plan<'_> {
    /// Sets the operation descriptor's attribute `attr` (`CUBLASLT_MATMUL_DESC_{name}`) to
    /// `value`, whose type is the attribute's (cublasLt.h).
    fn set<V: Copy>(&self, name: &str, attr: c_int, value: &V) -> Result<()> {
        // SAFETY: a live descriptor; cuBLASLt reads size_of::<V>() bytes of `value`.
        let code = unsafe { (self.lt.api.desc_set)(self.desc, attr, (value as *const V).cast(), size_of::<V>()) };
        status(&format!("cublasLtMatmulDescSetAttribute({name})"), code)
    }

    /// Enqueues `C = alpha A B^T` on the lab's stream (see the module's layout): `a` and `b`
    /// e4m3 bytes, `c` BF16 bit patterns, as planned.
    ///
    /// # Errors
    /// Elements of other sizes than 1 and 2 bytes, buffers smaller than the plan's shape
    /// ([`check_buffers`]), or a cuBLASLt error status.
    pub fn enqueue<T: DeviceCopy, C: DeviceCopy>(
        &self,
        (a, b, c): (&DeviceBuffer<T>, &DeviceBuffer<T>, &DeviceBuffer<C>),
    ) -> Result<()> {
        if size_of::<T>() != 1 || size_of::<C>() != 2 {
            refuse!("cuBLASLt FP8: elements of {} and {} bytes, not 1 and 2", size_of::<T>(), size_of::<C>());
        }
        check_buffers(self.size, self.pitch, (a.len(), b.len(), c.len()))?;
        let (lt, [bl, al, cl], beta) = (self.lt, self.layouts, 0.0f32);
        let ptr = |raw: u64| raw as *mut c_void;
        let (a, b, c) = (a.as_device_ptr().as_raw(), b.as_device_ptr().as_raw(), c.as_device_ptr().as_raw());
        let (workspace, stream) = (ptr(lt.workspace.as_device_ptr().as_raw()), lt.gpu.stream.as_inner() as *mut c_void);
        // SAFETY: the buffers hold at least the bytes read and written (checked above) and
        // outlive the stream's work (callers synchronise before dropping them); alpha and beta
        // are FP32 (the scale type) read before the call returns; the descriptors and the
        // algorithm are this plan's, the workspace WORKSPACE_BYTES long, the stream `gpu`'s.
        let code = unsafe {
            (lt.api.matmul)(
                lt.handle,
                self.desc,
                (&raw const self.alpha).cast(),
                ptr(b),
                bl,
                ptr(a),
                al,
                (&raw const beta).cast(),
                ptr(c),
                cl,
                ptr(c),
                cl,
                &self.algo,
                workspace,
                WORKSPACE_BYTES,
                stream,
            )
        };
        status("cublasLtMatmul", code)
    }
}

impl Drop for Fp8Plan<'_> {
    fn drop(&mut self) {
        let api = &self.lt.api;
        // SAFETY: each descriptor was created by this plan (or is still null) and is
        // destroyed once.
        unsafe {
            if !self.desc.is_null() {
                (api.desc_destroy)(self.desc);
            }
            for layout in self.layouts.into_iter().filter(|l| !l.is_null()) {
                (api.layout_destroy)(layout);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heuristic_result_is_cublaslt_h_s_96_bytes() {
        assert_eq!(size_of::<Algo>(), 64);
        assert_eq!(size_of::<HeuristicResult>(), 96);
        assert_eq!(align_of::<HeuristicResult>(), 8);
    }

    #[test]
    fn the_row_major_product_is_cublaslt_s_tn_form() {
        let args = fp8_args((517, 389, 263), 272).unwrap();
        let e4m3 = |rows, cols| LayoutArgs { data: R_8F_E4M3, rows, cols, ld: 272 };
        assert_eq!((args.transa, args.transb), (OP_T, OP_N));
        assert_eq!(args.b, e4m3(263, 389));
        assert_eq!(args.a, e4m3(263, 517));
        assert_eq!(args.c, LayoutArgs { data: R_16BF, rows: 389, cols: 517, ld: 389 });
        // A pitch of exactly k is enough.
        assert_eq!(fp8_args((64, 64, 256), 256).unwrap().a.ld, 256);
    }

    #[test]
    fn shapes_cublaslt_cannot_take_are_refused_in_one_line() {
        let refusal = |r: Result<Fp8Args>| r.unwrap_err().to_string();
        assert_eq!(
            refusal(fp8_args((517, 389, 263), 268)),
            "cuBLASLt FP8: rows 268 bytes apart, not a multiple of 16 (FP8 rows must be 16-byte aligned)"
        );
        assert_eq!(
            refusal(fp8_args((517, 389, 263), 256)),
            "cuBLASLt FP8: rows 256 bytes apart cannot hold k = 263 elements"
        );
        assert_eq!(refusal(fp8_args((1 << 31, 16, 16), 16)), "cuBLASLt FP8: dimension 2147483648 above i32::MAX");
    }

    #[test]
    fn buffers_too_small_for_the_shape_are_refused_in_one_line() {
        let (size, pitch) = ((517, 389, 263), 272);
        assert!(check_buffers(size, pitch, (517 * 272, 389 * 272, 517 * 389)).is_ok());
        let e = check_buffers(size, pitch, (517 * 272, 389 * 272 - 1, 517 * 389)).unwrap_err().to_string();
        assert_eq!(
            e,
            "cuBLASLt FP8: buffers of 140624, 105807, 201113 elements for a 517x389x263 product with rows 272 apart"
        );
        // A product too large to count is too large for any buffer.
        assert!(check_buffers((usize::MAX, 1, 1), 16, (usize::MAX, 16, usize::MAX)).is_err());
    }
}
