//! The CUDA driver library, loaded at run time, so the binary starts on a machine without one.
//!
//! cust's bindings (`cust_raw`) call `cuInit`, `cuLaunchKernel`, ... as C functions of
//! `libcuda.so`. This module defines every driver function the lab uses under the same name, as
//! a forwarder to that function in `libcuda.so.1`, which is opened with `dlopen` on first use.
//! Since nothing then resolves from the `libcuda.so` the build links against, the linker's
//! `--as-needed` (rustc's default on Linux) leaves it out of the binary's needed libraries:
//! `--help`, `occupancy`, `inspect`, `report` run anywhere, and a GPU command on a machine
//! without a driver ends with [`library`]'s one-line refusal.
//!
//! Other means, and why not: removing the needed entry after the link (patchelf) and relying on
//! lazy binding breaks under `LD_BIND_NOW`, full RELRO and any address-taken driver function,
//! and needs a post-link step, so the binary cargo tests would differ from the bundled one; a
//! launcher that runs a second, driver-linked binary makes the bundle two files.
//!
//! A driver function cust starts calling, that is missing from [`forward!`]'s list below, is
//! resolved from `libcuda.so` again, and the binary needs the driver to start:
//! `host/tests/no_driver.rs` catches that.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::path::PathBuf;
use std::sync::OnceLock;

use cust::sys::{
    CUcontext, CUdevice, CUdevice_P2PAttribute, CUdevice_attribute, CUdeviceptr, CUevent, CUfunction,
    CUfunction_attribute, CUjit_option, CUlimit, CUmodule, CUresult, CUstream, CUstreamAttrID, CUstreamAttrValue,
};

/// The driver library's name, as the NVIDIA driver installs it.
pub const LIBCUDA: &str = "libcuda.so.1";

/// Environment variable naming another driver library to load instead of [`LIBCUDA`] (a path,
/// e.g. the CUDA forward-compatibility package's `libcuda.so.1`).
pub const LIBCUDA_VAR: &str = "MEMLAB_LIBCUDA";

/// The driver library, opened on first use and kept open.
///
/// # Errors
/// The loader's reason when it cannot be opened (see [`refusal`]).
pub fn library() -> Result<&'static libloading::Library, &'static str> {
    static DRIVER: OnceLock<Result<libloading::Library, String>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            let name = std::env::var_os(LIBCUDA_VAR).unwrap_or_else(|| LIBCUDA.into());
            // SAFETY: the driver library's initialisers have no preconditions.
            unsafe { libloading::Library::new(name) }.map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(String::as_str)
}

/// The one-line refusal of a GPU command when [`library`] failed with `why`.
pub fn refusal(why: &str) -> String {
    // The loader's message starts with the file name this line has already given.
    let why = why.strip_prefix(&format!("{LIBCUDA}: ")).unwrap_or(why);
    format!("no NVIDIA driver: {LIBCUDA} not found ({why}); `memlab doctor` says what this machine has")
}

/// Where a shared library loaded into this process lives, by the start of its file name
/// (`"libcuda.so"`), from `/proc/self/maps`; `None` when none is loaded.
pub fn loaded_library(file_prefix: &str) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.rsplit('/').next().is_some_and(|f| f.starts_with(file_prefix)))
        .map(PathBuf::from)
}

/// The driver's function `name` (NUL-terminated), `None` without a driver or without the function.
fn symbol<F: Copy>(name: &[u8]) -> Option<F> {
    let lib = library().ok()?;
    // SAFETY: `F` is the function's signature as cust declares it (checked in `forward!`).
    unsafe { lib.get::<F>(name).ok().map(|f| *f) }
}

/// The body of a forwarder: the driver's function `$symbol`, looked up once, called with the
/// arguments.
macro_rules! forwarder_body {
    ($symbol:expr, ($($arg:ident: $ty:ty),*)) => {{
        type Signature = unsafe extern "C" fn($($ty),*) -> CUresult;
        static FUNCTION: OnceLock<Option<Signature>> = OnceLock::new();
        match FUNCTION.get_or_init(|| symbol($symbol)) {
            // SAFETY: the caller keeps the driver's contract for this function.
            Some(function) => unsafe { function($($arg),*) },
            None if library().is_err() => CUresult::CUDA_ERROR_STUB_LIBRARY,
            None => CUresult::CUDA_ERROR_NOT_FOUND,
        }
    }};
}

/// Defines each listed driver function as a forwarder to the driver's own. The signature must
/// be the one `cust::sys` declares: each forwarder coerces cust's declaration to it, so a
/// mismatch does not compile.
macro_rules! forward {
    ($($name:ident($($arg:ident: $ty:ty),* $(,)?);)*) => {$(
        #[doc = concat!("Forwards to the driver's `", stringify!($name), "` (CUDA Driver API).")]
        ///
        /// # Safety
        /// The driver API's contract for this function.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> CUresult {
            const _: unsafe extern "C" fn($($ty),*) -> CUresult = cust::sys::$name;
            forwarder_body!(concat!(stringify!($name), "\0").as_bytes(), ($($arg: $ty),*))
        }
    )*};
}

/// Defines forwarders for driver functions that `cust::sys` (CUDA 11's headers) lacks, or
/// whose CUDA 12 enum values its enums lack, with the signature of CUDA 12's `cuda.h`
/// (integers for enums). Not exported under the driver's name (cust never calls them), so
/// they live in [`raw`] and may share a name with an exported forwarder.
macro_rules! forward_raw {
    ($($name:ident($($arg:ident: $ty:ty),* $(,)?);)*) => {$(
        #[doc = concat!("Forwards to the driver's `", stringify!($name), "` (CUDA Driver API, CUDA 12).")]
        ///
        /// # Safety
        /// The driver API's contract for this function.
        #[allow(clippy::too_many_arguments)] // the driver's own signature
        pub unsafe fn $name($($arg: $ty),*) -> CUresult {
            forwarder_body!(concat!(stringify!($name), "\0").as_bytes(), ($($arg: $ty),*))
        }
    )*};
}

forward! {
    cuInit(flags: c_uint);
    cuDriverGetVersion(version: *mut c_int);
    cuGetErrorString(error: CUresult, text: *mut *const c_char);
    cuGetErrorName(error: CUresult, text: *mut *const c_char);
    cuDeviceGet(device: *mut CUdevice, ordinal: c_int);
    cuDeviceGetCount(count: *mut c_int);
    cuDeviceGetName(name: *mut c_char, len: c_int, device: CUdevice);
    cuDeviceGetAttribute(value: *mut c_int, attribute: CUdevice_attribute, device: CUdevice);
    cuDeviceGetPCIBusId(bus_id: *mut c_char, len: c_int, device: CUdevice);
    cuDeviceTotalMem_v2(bytes: *mut usize, device: CUdevice);
    cuDevicePrimaryCtxRetain(context: *mut CUcontext, device: CUdevice);
    cuDevicePrimaryCtxRelease_v2(device: CUdevice);
    cuCtxSetCurrent(context: CUcontext);
    cuCtxGetCurrent(context: *mut CUcontext);
    cuCtxSynchronize();
    cuProfilerStart();
    cuProfilerStop();
    cuCtxEnablePeerAccess(peer: CUcontext, flags: c_uint);
    cuDeviceCanAccessPeer(can_access: *mut c_int, device: CUdevice, peer: CUdevice);
    cuDeviceGetP2PAttribute(value: *mut c_int, attribute: CUdevice_P2PAttribute, src: CUdevice, dst: CUdevice);
    cuMemAllocManaged(pointer: *mut CUdeviceptr, bytes: usize, flags: c_uint);
    cuMemPrefetchAsync(pointer: CUdeviceptr, bytes: usize, device: CUdevice, stream: CUstream);
    cuMemHostAlloc(pointer: *mut *mut c_void, bytes: usize, flags: c_uint);
    cuMemHostGetDevicePointer_v2(device_pointer: *mut CUdeviceptr, host: *mut c_void, flags: c_uint);
    cuMemcpyPeerAsync(
        dst: CUdeviceptr,
        dst_context: CUcontext,
        src: CUdeviceptr,
        src_context: CUcontext,
        bytes: usize,
        stream: CUstream,
    );
    cuMemGetInfo_v2(free: *mut usize, total: *mut usize);
    cuMemAlloc_v2(pointer: *mut CUdeviceptr, bytes: usize);
    cuMemFree_v2(pointer: CUdeviceptr);
    cuMemAllocHost_v2(pointer: *mut *mut c_void, bytes: usize);
    cuMemFreeHost(pointer: *mut c_void);
    cuMemcpyHtoD_v2(dst: CUdeviceptr, src: *const c_void, bytes: usize);
    cuMemcpyDtoH_v2(dst: *mut c_void, src: CUdeviceptr, bytes: usize);
    cuMemcpyHtoDAsync_v2(dst: CUdeviceptr, src: *const c_void, bytes: usize, stream: CUstream);
    cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: CUdeviceptr, bytes: usize, stream: CUstream);
    cuMemcpyDtoDAsync_v2(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize, stream: CUstream);
    cuMemsetD32_v2(dst: CUdeviceptr, value: c_uint, count: usize);
    cuMemsetD8_v2(dst: CUdeviceptr, value: std::ffi::c_uchar, count: usize);
    cuModuleLoad(module: *mut CUmodule, path: *const c_char);
    cuModuleLoadDataEx(
        module: *mut CUmodule,
        image: *const c_void,
        option_count: c_uint,
        options: *mut CUjit_option,
        values: *mut *mut c_void,
    );
    cuModuleUnload(module: CUmodule);
    cuModuleGetFunction(function: *mut CUfunction, module: CUmodule, name: *const c_char);
    cuModuleGetGlobal_v2(pointer: *mut CUdeviceptr, bytes: *mut usize, module: CUmodule, name: *const c_char);
    cuFuncGetAttribute(value: *mut c_int, attribute: CUfunction_attribute, function: CUfunction);
    cuFuncSetAttribute(function: CUfunction, attribute: CUfunction_attribute, value: c_int);
    cuOccupancyMaxActiveBlocksPerMultiprocessor(
        blocks: *mut c_int,
        function: CUfunction,
        block_size: c_int,
        dynamic_smem_bytes: usize,
    );
    cuLaunchKernel(
        function: CUfunction,
        grid_x: c_uint,
        grid_y: c_uint,
        grid_z: c_uint,
        block_x: c_uint,
        block_y: c_uint,
        block_z: c_uint,
        smem_bytes: c_uint,
        stream: CUstream,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    );
    cuStreamCreateWithPriority(stream: *mut CUstream, flags: c_uint, priority: c_int);
    cuStreamSynchronize(stream: CUstream);
    cuStreamWaitEvent(stream: CUstream, event: CUevent, flags: c_uint);
    cuStreamDestroy_v2(stream: CUstream);
    cuEventCreate(event: *mut CUevent, flags: c_uint);
    cuEventRecord(event: CUevent, stream: CUstream);
    cuEventSynchronize(event: CUevent);
    cuEventElapsedTime(milliseconds: *mut f32, start: CUevent, end: CUevent);
    cuEventDestroy_v2(event: CUevent);
    cuCtxGetLimit(value: *mut usize, limit: CUlimit);
    cuCtxSetLimit(limit: CUlimit, value: usize);
    cuCtxResetPersistingL2Cache();
    cuStreamSetAttribute(stream: CUstream, attribute: CUstreamAttrID, value: *const CUstreamAttrValue);
}

/// Driver functions of CUDA 12 that cust does not declare: thread-block clusters and tensor
/// maps (their types in [`super::super::cuda_h`]).
#[allow(non_snake_case)]
pub mod raw {
    use std::ffi::{c_int, c_uint, c_void};
    use std::sync::OnceLock;

    use cust::sys::{CUfunction, CUresult};

    use super::super::cuda_h::{CUlaunchConfig, TensorMap};
    use super::{library, symbol};

    forward_raw! {
        cuTensorMapEncodeTiled(
            map: *mut TensorMap,
            data_type: c_uint,
            rank: c_uint,
            address: *mut c_void,
            dims: *const u64,
            strides: *const u64,
            box_dims: *const u32,
            element_strides: *const u32,
            interleave: c_uint,
            swizzle: c_uint,
            l2_promotion: c_uint,
            oob_fill: c_uint,
        );
        cuLaunchKernelEx(config: *const CUlaunchConfig, function: CUfunction, params: *mut *mut c_void, extra: *mut *mut c_void);
        cuOccupancyMaxActiveClusters(clusters: *mut c_int, function: CUfunction, config: *const CUlaunchConfig);
        cuOccupancyMaxPotentialClusterSize(size: *mut c_int, function: CUfunction, config: *const CUlaunchConfig);
        cuFuncSetAttribute(function: CUfunction, attribute: c_int, value: c_int);
    }
}
