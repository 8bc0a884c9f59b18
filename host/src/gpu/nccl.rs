//! NVIDIA's NCCL, loaded at run time (`dlopen` of `libnccl.so.2`): one communicator per
//! device in this one process (`ncclCommInitAll`), and all-reduce / all-gather of `f32`
//! grouped over the devices (`ncclGroupStart` / `ncclGroupEnd`). Where no NCCL is found the
//! collectives lesson is skipped with one line.
//!
//! Search order: `$MEMLAB_NCCL` (a file; when set, nothing else), the dynamic loader's usual
//! places (`$LD_LIBRARY_PATH`, the `ld.so` cache, the system folders), then the folders of
//! [`super::libs`] with the Python packages' `nvidia/nccl/lib` (PyPI's `nvidia-nccl-cu12`
//! wheel, which PyTorch installs).
//!
//! NVLink SHARP (NVLS, multicast objects on NVSwitch systems) stays off: `main` sets
//! `NCCL_NVLS_ENABLE=0` in the process environment before any thread starts and before NCCL
//! is loaded ([`NVLS_ENV`]), and the lab never calls a multicast API. Signatures: NCCL's
//! `nccl.h` (API "Communicator Creation", "Collective Communication Operations", "Group
//! Calls").

use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::PathBuf;

use anyhow::Result;

use super::context::Gpu;
use super::libs::Library;
use crate::refuse;

/// The environment variable and value that keep NCCL off NVLink SHARP / multicast, set by
/// `main` for the whole process.
pub const NVLS_ENV: (&str, &str) = ("NCCL_NVLS_ENABLE", "0");
/// `ncclFloat32` (`ncclDataType_t`).
const FLOAT32: c_int = 7;
/// `ncclSum` (`ncclRedOp_t`).
const SUM: c_int = 0;

type Comm = *mut c_void;
type Status = c_int;

/// The library and the entry points the lab calls.
pub struct Nccl {
    /// `ncclGetVersion`, e.g. 22105 for 2.21.5.
    pub version: i32,
    init_all: unsafe extern "C" fn(*mut Comm, c_int, *const c_int) -> Status,
    destroy: unsafe extern "C" fn(Comm) -> Status,
    group_start: unsafe extern "C" fn() -> Status,
    group_end: unsafe extern "C" fn() -> Status,
    all_reduce: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, *mut c_void) -> Status,
    all_gather: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, Comm, *mut c_void) -> Status,
    error_string: unsafe extern "C" fn(Status) -> *const c_char,
    // Dropped last: the function pointers point into it.
    lib: Library,
}

/// The library to load: `$MEMLAB_NCCL` when set (if it is a file), else the soname the loader
/// knows, else a file found by [`super::libs::find`].
fn locate() -> Option<Library> {
    let env = "MEMLAB_NCCL";
    // SAFETY: loading NCCL runs its initialisers, which have no preconditions.
    let load = |p: PathBuf| unsafe { Library::load(p) }.ok();
    if std::env::var_os(env).is_some() {
        return super::libs::find(env, "", &[]).and_then(load);
    }
    load(PathBuf::from("libnccl.so.2"))
        .or_else(|| super::libs::find(env, "libnccl.so", &["nvidia/nccl/lib"]).and_then(load))
}

impl Nccl {
    /// Loads NCCL; `Ok(None)` when no library is found.
    ///
    /// # Errors
    /// A library found without the entry points the lab calls.
    pub fn load() -> Result<Option<Nccl>> {
        let Some(lib) = locate() else { return Ok(None) };
        // SAFETY: the types are nccl.h's signatures; the pointers live as long as `lib`.
        unsafe {
            let get_version: unsafe extern "C" fn(*mut c_int) -> Status = lib.symbol("ncclGetVersion")?;
            let mut version = 0;
            get_version(&mut version);
            Ok(Some(Nccl {
                version,
                init_all: lib.symbol("ncclCommInitAll")?,
                destroy: lib.symbol("ncclCommDestroy")?,
                group_start: lib.symbol("ncclGroupStart")?,
                group_end: lib.symbol("ncclGroupEnd")?,
                all_reduce: lib.symbol("ncclAllReduce")?,
                all_gather: lib.symbol("ncclAllGather")?,
                error_string: lib.symbol("ncclGetErrorString")?,
                lib,
            }))
        }
    }

    /// The file loaded (or the soname the loader resolved).
    pub fn path(&self) -> &std::path::Path {
        &self.lib.path
    }

    /// `22105` as `"2.21.5"` (NCCL_VERSION: major * 10000 + minor * 100 + patch since 2.9).
    pub fn version_text(&self) -> String {
        let v = self.version;
        if v >= 10000 { format!("{}.{}.{}", v / 10000, v / 100 % 100, v % 100) } else { format!("{v}") }
    }

    fn status(&self, what: &str, s: Status) -> Result<()> {
        if s != 0 {
            // SAFETY: ncclGetErrorString returns a static NUL-terminated string.
            let text = unsafe { CStr::from_ptr((self.error_string)(s)) }.to_string_lossy();
            refuse!("NCCL {what} failed: {text} (status {s})");
        }
        Ok(())
    }

    /// One communicator per device of `gpus` (rank `i` on `gpus[i]`), all in this process.
    ///
    /// # Errors
    /// NCCL's error as one line.
    pub fn communicators<'a>(&'a self, gpus: &[Gpu]) -> Result<Communicators<'a>> {
        let devices: Vec<c_int> = gpus.iter().map(|g| g.ordinal as c_int).collect();
        let mut comms = vec![std::ptr::null_mut(); devices.len()];
        // SAFETY: `comms` holds one slot per device.
        self.status("ncclCommInitAll", unsafe {
            (self.init_all)(comms.as_mut_ptr(), devices.len() as c_int, devices.as_ptr())
        })?;
        Ok(Communicators { nccl: self, comms })
    }
}

/// Which collective to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Collective {
    /// Every rank ends with the element-wise sum of all ranks' buffers.
    AllReduce,
    /// Every rank ends with all ranks' buffers, rank after rank.
    AllGather,
}

/// The communicators of one `ncclCommInitAll`.
pub struct Communicators<'a> {
    nccl: &'a Nccl,
    comms: Vec<Comm>,
}

impl Communicators<'_> {
    /// Enqueues one collective on every rank in one group: rank `i` sends `send[i]`, receives
    /// in `recv[i]` on `gpus[i]`'s stream; `count` is the per-rank element count of the
    /// result for all-reduce and of the contribution for all-gather (NCCL's `sendcount`).
    ///
    /// # Errors
    /// NCCL's error as one line.
    pub fn run(&self, which: Collective, gpus: &[Gpu], send: &[u64], recv: &[u64], count: usize) -> Result<()> {
        let n = self.nccl;
        // SAFETY: a group brackets the per-rank calls; each buffer holds what `count` needs
        // and lives until the caller synchronises the streams.
        unsafe {
            n.status("ncclGroupStart", (n.group_start)())?;
            for (i, gpu) in gpus.iter().enumerate() {
                let stream = gpu.stream.as_inner() as *mut c_void;
                let (s, r) = (send[i] as *const c_void, recv[i] as *mut c_void);
                let status = match which {
                    Collective::AllReduce => (n.all_reduce)(s, r, count, FLOAT32, SUM, self.comms[i], stream),
                    Collective::AllGather => (n.all_gather)(s, r, count, FLOAT32, self.comms[i], stream),
                };
                if status != 0 {
                    (n.group_end)();
                    n.status("enqueueing a collective", status)?;
                }
            }
            n.status("ncclGroupEnd", (n.group_end)())
        }
    }
}

impl Drop for Communicators<'_> {
    fn drop(&mut self) {
        for &c in &self.comms {
            // SAFETY: each communicator came from ncclCommInitAll and is destroyed once.
            unsafe { (self.nccl.destroy)(c) };
        }
    }
}
