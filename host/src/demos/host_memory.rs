//! Host memory as a level of the hierarchy, read by kernels themselves:
//! - **Mapped pinned memory (zero-copy).** `strided_read` sweeps strides 1..64 over pinned
//!   host memory mapped into the device's address space: every load crosses the bus, in
//!   sectors as from HBM. A dependent-load chain in it gives the bus's round trip.
//! - **Managed memory.** The host writes a `cuMemAllocManaged` buffer (its pages live on the
//!   host), then `strided_read` at stride 1 reads it on the device: each first touch faults
//!   and the driver migrates the pages. Against it, `cuMemPrefetchAsync` moves the same pages
//!   ahead of the kernel. Each is reported per GiB and per 4 KiB host page; before every timed
//!   run the pages are prefetched back to the host, untimed.
//!
//! The managed buffer stays small (1 GiB by default, at most 4 GiB and at most half of the
//! device's free memory): the GPU machines' rule is never to ask for more managed memory than
//! the card has free.

use anyhow::Result;

use crate::gpu::host_memory::{HOST_PAGE_BYTES, Managed, PinnedHost, free_bytes, on_demand_paging};
use crate::gpu::memory::Owned;
use crate::gpu::peer::DeviceMemory;
use crate::gpu::timing::{self, Repeats, Timing};
use crate::lab::{KernelRow, Lab, Section, download, ensure_free, poison, poisoned};
use crate::launches;
use crate::probes::latency::{CHAIN_WARM, Latency, chain_at};
use crate::probes::strided;
use crate::reference::{self, STRIDED_READS_PER_THREAD};
use crate::refuse;
use crate::verify::{self, Check};

/// Most managed memory the lesson asks for.
pub const MANAGED_MAX: usize = 4 << 30;

/// Sizes of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Bytes of the mapped buffer the stride sweep reads.
    pub mapped_bytes: usize,
    /// Bytes of the managed buffer (at most [`MANAGED_MAX`]).
    pub managed_bytes: usize,
    /// Bytes of the latency chain (a multiple of 128).
    pub chain_bytes: usize,
    /// Timed dependent loads.
    pub steps: u32,
    /// Timed runs of the managed-memory measurements.
    pub runs: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { mapped_bytes: 256 << 20, managed_bytes: 1 << 30, chain_bytes: 16 << 20, steps: 4096, runs: 5 }
    }
}

impl Options {
    /// The smaller sizes the hierarchy table measures these rows with.
    pub fn for_hierarchy(steps: u32) -> Options {
        Options { mapped_bytes: 64 << 20, managed_bytes: 256 << 20, chain_bytes: 16 << 20, steps, runs: 3 }
    }

    /// These options for a compute-sanitizer run when `sanitizer` ([`crate::lab::sanitizer`]):
    /// 1 MiB mapped, the smallest managed buffer, a 64 KiB chain, one run.
    pub fn for_sanitizer(self, sanitizer: bool) -> Options {
        use crate::gpu::host_memory::HOST_PAGE_BYTES;
        use crate::reference::STRIDED_READS_PER_THREAD;
        match sanitizer {
            true => Options {
                mapped_bytes: 1 << 20,
                managed_bytes: 4 * STRIDED_READS_PER_THREAD * HOST_PAGE_BYTES,
                chain_bytes: 64 << 10,
                runs: 1,
                ..self
            },
            false => self,
        }
    }
}

/// What the lesson measured, for the hierarchy table.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The stride sweep over mapped memory.
    pub mapped_sweep: Vec<(usize, KernelRow)>,
    /// Dependent-load latency over the bus and, for comparison, in local HBM.
    pub mapped_latency: (Latency, Latency),
    /// Managed memory.
    pub managed: ManagedFigures,
    /// Every check.
    pub checks: Vec<Check>,
}

/// The managed-memory figures, medians of the timed runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ManagedFigures {
    /// Bytes of the buffer.
    pub bytes: usize,
    /// The kernel's time on pages that start on the host (faults and migration included), ms.
    pub fault_ms: f64,
    /// `cuMemPrefetchAsync` of every page to the device, ms.
    pub prefetch_ms: f64,
    /// The same kernel once the pages are on the device, ms.
    pub resident_ms: f64,
    /// Whether the device pages on demand (`CONCURRENT_MANAGED_ACCESS`).
    pub on_demand: bool,
}

impl ManagedFigures {
    /// GB/s of the bytes moved in `ms`.
    pub fn gbs(&self, ms: f64) -> f64 {
        self.bytes as f64 / (ms * 1e-3) / 1e9
    }

    /// Milliseconds per GiB moved.
    pub fn ms_per_gib(&self, ms: f64) -> f64 {
        ms * (1u64 << 30) as f64 / self.bytes as f64
    }

    /// Microseconds per 4 KiB host page.
    pub fn us_per_page(&self, ms: f64) -> f64 {
        ms * 1e3 / (self.bytes / HOST_PAGE_BYTES) as f64
    }

    /// The migration the faults cost: the faulting kernel's time less the resident kernel's.
    pub fn fault_migration_ms(&self) -> f64 {
        (self.fault_ms - self.resident_ms).max(0.0)
    }
}

/// Refuses sizes the lesson cannot use.
pub fn check_options(o: &Options, free: usize) -> Result<()> {
    if let Err(e) = strided::check_bytes(o.mapped_bytes) {
        refuse!("--mapped-bytes: {e}");
    }
    let cap = MANAGED_MAX.min(free / 2);
    let min = 4 * STRIDED_READS_PER_THREAD * HOST_PAGE_BYTES;
    if o.managed_bytes < min || o.managed_bytes > cap || !o.managed_bytes.is_multiple_of(min) {
        refuse!(
            "--managed-bytes {} is out of range: a multiple of {min} bytes from {min} to {cap} (4 GiB, and at most half the device's free memory)",
            o.managed_bytes
        );
    }
    if o.chain_bytes < 128 || !o.chain_bytes.is_multiple_of(128) {
        refuse!("--chain-bytes {} must be a multiple of 128 bytes, at least 128", o.chain_bytes);
    }
    Ok(())
}

/// Measures every host level on `lab`'s device.
pub fn measure_all(lab: &Lab, opts: &Options) -> Result<Measured> {
    check_options(opts, free_bytes(&lab.gpu)?)?;
    let mut checks = Vec::new();

    let words = opts.mapped_bytes / 4;
    let mut mapped = PinnedHost::new(opts.mapped_bytes)?;
    for (i, w) in mapped.words_mut().iter_mut().enumerate() {
        *w = reference::strided_word(i);
    }
    let mapped_sweep = strided::sweep(lab, &mapped.view(words), words, "strided reads of mapped host memory")?;
    drop(mapped);

    let mut chain = PinnedHost::new(opts.chain_bytes)?;
    let base = chain.device_ptr;
    let (over_bus, c) = chain_at(lab, base, opts.chain_bytes, CHAIN_WARM, opts.steps, |image| {
        chain.words_mut().copy_from_slice(bytemuck::cast_slice(image));
        Ok(())
    })?;
    checks.push(c);
    let local_mem = DeviceMemory::poisoned(&lab.gpu, opts.chain_bytes)?;
    let (local, c) = chain_at(lab, local_mem.ptr, opts.chain_bytes, CHAIN_WARM, opts.steps, |image| {
        local_mem.write(bytemuck::cast_slice(image))
    })?;
    checks.push(c);

    let (managed, c) = managed(lab, opts)?;
    checks.push(c);
    Ok(Measured { mapped_sweep, mapped_latency: (over_bus, local), managed, checks })
}

/// The managed-memory measurements.
fn managed(lab: &Lab, opts: &Options) -> Result<(ManagedFigures, Check)> {
    let gpu = &lab.gpu;
    let bytes = opts.managed_bytes;
    let words = bytes / 4;
    let threads = words / STRIDED_READS_PER_THREAD;
    ensure_free("the managed-memory test", bytes + 4 * threads)?;
    let mut m = Managed::new(gpu, bytes)?;
    for (i, w) in m.words_mut().iter_mut().enumerate() {
        *w = reference::strided_word(i);
    }
    let mut partial = poisoned::<u32>(threads)?;
    let once = Repeats { warmup: 0, runs: 1 };
    let sync = || gpu.stream.synchronize().map_err(|e| anyhow::anyhow!("managed: {}", crate::gpu::describe(e)));
    let to_host = || -> Result<()> {
        m.prefetch(gpu, false)?;
        sync()
    };
    let (mut fault, mut prefetch, mut resident) = (Vec::new(), Vec::new(), Vec::new());
    let mut check = None;
    for run in 0..opts.runs.max(1) {
        if run > 0 {
            to_host()?;
        }
        poison(&partial)?;
        let read = launches::strided_read(
            strided::shapes::strided_read(threads as u32),
            &m.view(words),
            &mut partial,
            threads as u32,
            1,
        );
        fault.push(timing::time(gpu, once, || read.enqueue(gpu))?.median_ms);
        if check.is_none() {
            // The read that faulted every page in, checked before anything is reported.
            let got = download(&partial)?;
            check = Some(verify::exact_u32(&got[..threads], |g| reference::strided_partial(g, threads, 1)));
        }
        resident.push(timing::time(gpu, once, || read.enqueue(gpu))?.median_ms);
        to_host()?;
        prefetch.push(timing::time(gpu, once, || m.prefetch(gpu, true))?.median_ms);
    }
    let check = check.expect("at least one run");
    let median = |v: Vec<f64>| Timing::from_runs(v).map_or(f64::NAN, |t| t.median_ms);
    let figures = ManagedFigures {
        bytes,
        fault_ms: median(fault),
        prefetch_ms: median(prefetch),
        resident_ms: median(resident),
        on_demand: on_demand_paging(gpu)?,
    };
    Ok((figures, check))
}

impl Measured {
    /// The rows this lesson adds to the hierarchy table (`level, seed latency, measured latency,
    /// seed bandwidth, measured bandwidth, measured by`).
    pub fn hierarchy_rows(&self) -> Vec<Vec<String>> {
        let (bus, local) = &self.mapped_latency;
        let stride1 = self.mapped_sweep[0].1.rate.value();
        let m = &self.managed;
        let dash = || "-".to_string();
        vec![
            vec![
                "host mapped (zero-copy)".into(),
                dash(),
                format!("{:.0} cycles ({:.0} ns), {:.1}x local HBM", bus.cycles, bus.ns, bus.ns / local.ns),
                dash(),
                format!("{stride1:.1} GB/s (stride 1)"),
                "chase_global, strided_read on cuMemHostAlloc(DEVICEMAP)".into(),
            ],
            vec![
                "managed, first touch (fault)".into(),
                dash(),
                format!("{:.2} us per 4 KiB page", m.us_per_page(m.fault_migration_ms())),
                dash(),
                format!("{:.1} GB/s ({:.0} ms per GiB)", m.gbs(m.fault_ms), m.ms_per_gib(m.fault_ms)),
                "strided_read on cuMemAllocManaged, pages on the host".into(),
            ],
            vec![
                "managed, prefetched".into(),
                dash(),
                format!("{:.2} us per 4 KiB page", m.us_per_page(m.prefetch_ms)),
                dash(),
                format!("{:.1} GB/s ({:.0} ms per GiB)", m.gbs(m.prefetch_ms), m.ms_per_gib(m.prefetch_ms)),
                "cuMemPrefetchAsync to the device".into(),
            ],
        ]
    }

    /// The lesson's report sections: the host levels, then the sweep over mapped memory.
    pub fn sections(&self, mapped_bytes: usize) -> Vec<Section> {
        let (bus, local) = &self.mapped_latency;
        let m = &self.managed;
        let header = ["what", "time (ms)", "GB/s", "ms per GiB", "us per 4 KiB page", "measured by"];
        let row = |what: &str, ms: f64, by: &str| {
            vec![
                what.to_string(),
                format!("{ms:.2}"),
                format!("{:.1}", m.gbs(ms)),
                format!("{:.1}", m.ms_per_gib(ms)),
                format!("{:.3}", m.us_per_page(ms)),
                by.to_string(),
            ]
        };
        let rows = vec![
            row("kernel on host-resident pages (faults)", m.fault_ms, "strided_read, stride 1"),
            row("  of which migration", m.fault_migration_ms(), "faulting less resident"),
            row("cuMemPrefetchAsync to the device", m.prefetch_ms, "events around the prefetch"),
            row("kernel on device-resident pages", m.resident_ms, "strided_read, stride 1"),
        ];
        let notes = vec![
            format!(
                "a dependent load over the bus (mapped host memory): {:.0} ns ({:.0} cycles), {:.1}x local HBM's {:.0} ns",
                bus.ns,
                bus.cycles,
                bus.ns / local.ns,
                local.ns
            ),
            format!(
                "on-demand paging (CONCURRENT_MANAGED_ACCESS): {}; {} MiB managed, medians of the timed runs",
                if m.on_demand { "yes" } else { "no, a launch migrates the whole allocation first" },
                m.bytes >> 20
            ),
        ];
        let managed = Section {
            name: "host-memory".into(),
            title: "Host memory as a level: managed memory, fault against prefetch".into(),
            lesson: "Managed pages follow the processor that touches them: a fault moves them one small batch at a time, a prefetch moves them in bulk at the bus's rate.".into(),
            sweep: Some((header.map(String::from).to_vec(), rows)),
            checks: self.checks.clone(),
            notes,
            ..Section::default()
        };
        let (sweep, notes, series) = strided::table(&self.mapped_sweep);
        let mut kernels: Vec<KernelRow> = self.mapped_sweep.iter().map(|(_, r)| r.clone()).collect();
        let checks = kernels.drain(1..).map(|r| r.check).collect();
        let mapped = Section {
            name: "host-memory".into(),
            title: format!("Zero-copy: strided_read over {} MiB of mapped pinned host memory", mapped_bytes >> 20),
            lesson: "Every load of mapped memory crosses the bus; the bus moves sectors too, so strides waste it as they waste HBM.".into(),
            kernels,
            sweep: Some(sweep),
            checks,
            notes,
            series,
        };
        vec![managed, mapped]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sanitizer_rows_shrink_to_sizes_the_lesson_accepts() {
        let full = Options::for_hierarchy(64);
        assert_eq!(full.clone().for_sanitizer(false).managed_bytes, full.managed_bytes);
        let small = full.for_sanitizer(true);
        assert_eq!(
            (small.mapped_bytes, small.managed_bytes, small.chain_bytes, small.runs),
            (1 << 20, 128 << 10, 64 << 10, 1)
        );
        assert_eq!(small.steps, 64);
        check_options(&small, 1 << 30).unwrap();
    }

    #[test]
    fn managed_figures_per_gib_and_per_page() {
        let m =
            ManagedFigures { bytes: 1 << 30, fault_ms: 120.0, prefetch_ms: 20.0, resident_ms: 0.5, on_demand: true };
        assert!((m.gbs(20.0) - 53.687).abs() < 1e-3);
        assert_eq!(m.ms_per_gib(20.0), 20.0);
        // 262144 pages of 4 KiB in 1 GiB.
        assert!((m.us_per_page(20.0) - 20e3 / 262144.0).abs() < 1e-12);
        assert_eq!(m.fault_migration_ms(), 119.5);
        let half = ManagedFigures { bytes: 512 << 20, ..m };
        assert_eq!(half.ms_per_gib(20.0), 40.0);
    }

    #[test]
    fn managed_sizes_stay_below_4_gib_and_half_the_free_memory() {
        let o = Options::default();
        assert!(check_options(&o, 100 << 30).is_ok());
        let big = Options { managed_bytes: 8 << 30, ..Options::default() };
        let e = check_options(&big, 100 << 30).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "--managed-bytes 8589934592 is out of range: a multiple of 131072 bytes from 131072 to 4294967296"
            ),
            "{e}"
        );
        let e = check_options(&o, 1 << 30).unwrap_err().to_string();
        assert!(e.contains("from 131072 to 536870912"), "{e}");
        assert!(check_options(&Options { chain_bytes: 100, ..Options::default() }, 100 << 30).is_err());
    }
}
