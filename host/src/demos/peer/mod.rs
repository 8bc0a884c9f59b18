//! Peer GPU memory: the level past a device's own HBM. For every ordered pair of devices (an
//! N x N matrix, any N):
//! - **Copy engines.** `cuMemcpyPeerAsync` of one buffer one way, and both ways at once (two
//!   streams, one per device, timed from one start to the later end); the diagonal is the
//!   device's own device-to-device copy, the local anchor.
//! - **Kernels over the link.** With peer access enabled (`cuCtxEnablePeerAccess`), the
//!   `copy` kernel on one GPU reads the other's memory (peer -> local) and writes it
//!   (local -> peer); `strided_read` sweeps strides 1..64 over the peer's memory, next to the
//!   same sweep over local HBM and the sector model.
//! - **Latency.** `chase_global` follows a random chain laid out in the peer's memory, next to
//!   the same chain in local HBM: the cost of one dependent load across the link.
//!
//! Every copy is checked on both sides (the receiver holds the sender's data, the sender's
//! buffer is unchanged), every kernel's output against the CPU. Where the driver reports no
//! peer access, the pair's data is copied through pinned host memory and timed as such; the
//! kernel measurements need peer access and are listed as not possible for that pair.
//!
//! Bytes: copy bandwidths count the bytes that crossed (once); the diagonal counts the bytes
//! copied (the `memcpy` demo counts read + write, twice that).

pub mod collectives;
pub mod matrix;
pub mod topology;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::gpu::Gpu;
use crate::gpu::host_memory::PinnedHost;
use crate::gpu::memory::Owned;
use crate::gpu::peer::{self, DeviceMemory};
use crate::gpu::timing::{self, Repeats};
use crate::lab::{KernelRow, KernelRun, Lab, Section, Settings, Work, measure};
use crate::launches;
use crate::probes::latency::{CHAIN_WARM, Latency, chain_at};
use crate::probes::strided;
use crate::verify::{self, Check};
use crate::{reference, refuse};
use matrix::{PairMatrix, ordered_pairs, unordered_pairs};
use topology::Topology;

/// Columns of the `copy` kernel's matrix (16 KiB rows); rows follow from the buffer size.
pub const COPY_COLS: usize = 4096;
/// Sizes of one peer run.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Bytes of each copy (a multiple of 16 KiB, the `copy` kernel's row).
    pub copy_bytes: usize,
    /// Bytes of the strided-read buffer.
    pub strided_bytes: usize,
    /// Bytes of the latency chain (a multiple of 128).
    pub chain_bytes: usize,
    /// Timed dependent loads of the latency chain.
    pub steps: u32,
    /// Warm-up and timed runs.
    pub repeats: Repeats,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            copy_bytes: 512 << 20,
            strided_bytes: 256 << 20,
            chain_bytes: 64 << 20,
            steps: 4096,
            repeats: Repeats { warmup: 3, runs: 20 },
        }
    }
}

/// Refuses sizes the lesson cannot use, naming the allowed range.
pub fn check_options(o: &Options) -> Result<()> {
    let row = 4 * COPY_COLS;
    if o.copy_bytes < row || !o.copy_bytes.is_multiple_of(row) || o.copy_bytes / row > u32::MAX as usize {
        refuse!(
            "--copy-bytes {} must be a multiple of {row} bytes (the copy kernel's 16 KiB row), at least {row}",
            o.copy_bytes
        );
    }
    if let Err(e) = strided::check_bytes(o.strided_bytes) {
        refuse!("--strided-bytes: {e}");
    }
    if o.chain_bytes < 128 || !o.chain_bytes.is_multiple_of(128) || o.chain_bytes / 128 > u32::MAX as usize {
        refuse!(
            "--chain-bytes {} must be a multiple of 128 bytes (one chain slot per cache line), at least 128",
            o.chain_bytes
        );
    }
    Ok(())
}

/// One strided-read curve: useful GB/s per stride on `accessor`, over `owner`'s memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// The device running the kernel (position in the run's device list).
    pub accessor: usize,
    /// The device whose memory is read (the accessor itself for the local curve).
    pub owner: usize,
    /// `(stride, useful GB/s)`.
    pub points: Vec<(usize, f64)>,
}

/// Everything one peer run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
// Sections name kernels with `&'static str`, so they deserialize from `'static` text only.
#[serde(bound(deserialize = "'de: 'static"))]
pub struct PeerRecord {
    /// `GPU <ordinal>` per device, in matrix order.
    pub labels: Vec<String>,
    /// Device names.
    pub names: Vec<String>,
    /// Links between the devices.
    pub topology: Topology,
    /// Copy-engine GB/s one way (row -> column); the diagonal: each device's own D2D copy.
    pub copy_gbs: PairMatrix<f64>,
    /// GB/s of both ways at once (both copies' bytes over the span), stored in both cells.
    pub both_gbs: PairMatrix<f64>,
    /// Dependent-load latency, ns: row's kernel, chain in column's memory (diagonal: local).
    pub latency_ns: PairMatrix<f64>,
    /// Strided-read curves: local and over each link.
    pub curves: Vec<Curve>,
    /// The report sections (tables, kernel rows, checks, notes).
    pub sections: Vec<Section>,
}

impl PeerRecord {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.sections.iter().all(Section::passed)
    }
}

/// The words of device `d`'s source buffer: distinct per device, so a copy from the wrong
/// sender fails its check.
fn pattern(d: usize, words: usize) -> Vec<u32> {
    (0..words).map(|i| reference::strided_word(i) ^ (d as u32).wrapping_mul(0x9E37_79B9)).collect()
}

/// Compares a buffer read back with its expected words.
fn same(got: &[u32], want: &[u32]) -> Check {
    verify::exact_u32(got, |i| want[i])
}

/// The buffers of the copy measurements, one source and one destination per device.
struct Buffers {
    src: Vec<DeviceMemory>,
    dst: Vec<DeviceMemory>,
    patterns: Vec<Vec<u32>>,
}

/// Runs the lesson on `ordinals` (two or more devices).
///
/// # Errors
/// A refusal for fewer than two devices, a size the devices have no memory for, or a driver
/// error.
pub fn run(ordinals: &[u32], opts: &Options) -> Result<PeerRecord> {
    check_options(opts)?;
    let n = ordinals.len();
    if n < 2 {
        refuse!("the peer lesson needs 2 or more devices, got {n}");
    }
    let topology = Topology::query(ordinals)?;
    let settings = Settings { repeats: opts.repeats, sanitizer: false };
    let labs = ordinals.iter().map(|&o| Ok(Lab::new(Gpu::open(o, None)?, settings))).collect::<Result<Vec<_>>>()?;
    let gpus: Vec<&Gpu> = labs.iter().map(|l| &l.gpu).collect();
    for (i, j) in ordered_pairs(n) {
        if topology.paths.get(i, j).is_some_and(|p| p.peer_access()) {
            peer::enable(gpus[i], gpus[j])?;
        }
    }
    let labels: Vec<String> = ordinals.iter().map(|o| format!("GPU {o}")).collect();
    let words = opts.copy_bytes / 4;
    let patterns: Vec<Vec<u32>> = (0..n).map(|d| pattern(d, words)).collect();
    let buffers = Buffers {
        src: (0..n).map(|d| DeviceMemory::from_words(gpus[d], &patterns[d])).collect::<Result<_>>()?,
        dst: (0..n).map(|d| DeviceMemory::poisoned(gpus[d], opts.copy_bytes)).collect::<Result<_>>()?,
        patterns,
    };
    let access = |i: usize, j: usize| topology.paths.get(i, j).is_some_and(|p| p.peer_access());

    let (copy_gbs, copy_section) = copies(&gpus, &labels, &buffers, &topology, opts)?;
    let (both_gbs, both_section) = both_ways(&gpus, &labels, &buffers, &access, opts)?;
    let kernel_section = kernels_over_link(&labs, &labels, &buffers, &access, &copy_gbs, &topology, opts)?;
    drop(buffers);
    let (curves, strided_sections) = strided(&labs, &labels, &access, opts)?;
    let (latency_ns, latency_section) = latency(&labs, &labels, &access, opts)?;

    let mut sections = vec![copy_section, both_section, kernel_section];
    sections.extend(strided_sections);
    sections.push(latency_section);
    Ok(PeerRecord {
        names: labs.iter().map(|l| l.gpu.info.name.clone()).collect(),
        labels,
        topology,
        copy_gbs,
        both_gbs,
        latency_ns,
        curves,
        sections,
    })
}

/// One-way copies for every ordered pair (copy engines, or staged through the host), and each
/// device's own copy on the diagonal.
fn copies(
    gpus: &[&Gpu],
    labels: &[String],
    b: &Buffers,
    topology: &Topology,
    opts: &Options,
) -> Result<(PairMatrix<f64>, Section)> {
    let n = gpus.len();
    let bytes = opts.copy_bytes;
    let mut gbs = PairMatrix::new(n);
    let mut checks = Vec::new();
    let mut notes = Vec::new();
    let mut staging = None;
    let pairs = (0..n).map(|d| (d, d)).chain(ordered_pairs(n));
    for (i, j) in pairs {
        let path = topology.paths.get(i, j);
        b.dst[j].poison()?;
        let timing = if path.is_some_and(|p| !p.peer_access()) {
            if staging.is_none() {
                staging = Some(PinnedHost::new(bytes)?);
            }
            let host = staging.as_ref().expect("allocated above");
            peer::time_host(opts.repeats, || peer::copy_staged(&b.dst[j], gpus[j], &b.src[i], gpus[i], host, bytes))?
        } else {
            gpus[i].make_current()?;
            timing::time(gpus[i], opts.repeats, || {
                peer::copy_peer(&b.dst[j], gpus[j], &b.src[i], gpus[i], bytes, &gpus[i].stream)
            })?
        };
        let received = same(&b.dst[j].read()?, &b.patterns[i]);
        let kept = same(&b.src[i].read()?, &b.patterns[i]);
        let g = timing.gbs(bytes as f64);
        gbs.set(i, j, g);
        if let Some(p) = path {
            let anchor = p
                .theoretical_gbs()
                .map_or(String::new(), |t| format!(", {:.0}% of the link's {t:.0} GB/s", 100.0 * g / t));
            notes.push(format!("{} -> {}: {g:.1} GB/s over {}{anchor}", labels[i], labels[j], p.describe()));
        }
        checks.push(received);
        checks.push(kept);
    }
    for (d, label) in labels.iter().enumerate() {
        if let Some(local) = gbs.get(d, d) {
            notes.push(format!(
                "anchor: {label} copies within its own HBM at {local:.0} GB/s of bytes copied ({:.0} GB/s read + write, as the memcpy demo counts)",
                2.0 * local
            ));
        }
    }
    let (header, rows) = gbs.table(labels, "GB/s, one way", |v| format!("{v:.1}"));
    let section = Section {
        name: "peer".into(),
        title: format!("Copy engines: cuMemcpyPeerAsync of {} MiB, every ordered pair", bytes >> 20),
        lesson: "A copy between GPUs runs on the copy engines over the link between them; the diagonal is each GPU copying within its own HBM.".into(),
        sweep: Some((header, rows)),
        checks,
        notes,
        ..Section::default()
    };
    Ok((gbs, section))
}

/// Both directions at once for every pair with peer access.
fn both_ways(
    gpus: &[&Gpu],
    labels: &[String],
    b: &Buffers,
    access: &dyn Fn(usize, usize) -> bool,
    opts: &Options,
) -> Result<(PairMatrix<f64>, Section)> {
    let n = gpus.len();
    let bytes = opts.copy_bytes;
    let mut gbs = PairMatrix::new(n);
    let (mut checks, mut notes) = (Vec::new(), Vec::new());
    for (i, j) in unordered_pairs(n) {
        if !(access(i, j) && access(j, i)) {
            notes.push(format!("{} <-> {}: no peer access both ways, not measured at once", labels[i], labels[j]));
            continue;
        }
        b.dst[i].poison()?;
        b.dst[j].poison()?;
        let timing = peer::time_pair(
            gpus[i],
            gpus[j],
            opts.repeats,
            || peer::copy_peer(&b.dst[j], gpus[j], &b.src[i], gpus[i], bytes, &gpus[i].stream),
            || peer::copy_peer(&b.dst[i], gpus[i], &b.src[j], gpus[j], bytes, &gpus[j].stream),
        )?;
        checks.push(same(&b.dst[j].read()?, &b.patterns[i]));
        checks.push(same(&b.dst[i].read()?, &b.patterns[j]));
        let g = timing.gbs(2.0 * bytes as f64);
        gbs.set(i, j, g);
        gbs.set(j, i, g);
        notes.push(format!(
            "{} <-> {}: {g:.1} GB/s both ways together ({:.1} GB/s each way)",
            labels[i],
            labels[j],
            g / 2.0
        ));
    }
    let (header, rows) = gbs.table(labels, "GB/s, both ways", |v| format!("{v:.1}"));
    let section = Section {
        name: "peer".into(),
        title: "Copy engines both ways at once".into(),
        lesson: "NVLink carries each direction on its own lanes: two copies the opposite ways should each keep the one-way rate.".into(),
        sweep: Some((header, rows)),
        checks,
        notes,
        ..Section::default()
    };
    Ok((gbs, section))
}

/// The `copy` kernel reading the peer's memory and writing it, for every ordered pair with
/// peer access.
#[allow(clippy::too_many_arguments)]
fn kernels_over_link(
    labs: &[Lab],
    labels: &[String],
    b: &Buffers,
    access: &dyn Fn(usize, usize) -> bool,
    copy_gbs: &PairMatrix<f64>,
    topology: &Topology,
    opts: &Options,
) -> Result<Section> {
    let bytes = opts.copy_bytes;
    let rows = bytes / (4 * COPY_COLS);
    let mut kernels: Vec<KernelRow> = Vec::new();
    let mut table = Vec::new();
    let mut notes = Vec::new();
    for (i, j) in ordered_pairs(labs.len()) {
        if !access(i, j) {
            notes.push(format!(
                "{} cannot load {}'s memory (no peer access): no kernel over this pair",
                labels[i], labels[j]
            ));
            continue;
        }
        let mut one = |input: &DeviceMemory, output: &DeviceMemory, want: &[u32], lesson: &'static str| {
            output.poison()?;
            labs[i].gpu.make_current()?;
            // The LSU copy, the ceiling the transposes are held to, with its launch contract.
            let n = rows * COPY_COLS;
            let launch = launches::copy(
                crate::probes::baselines::shapes::copy(rows as u32, COPY_COLS as u32),
                &input.view(n),
                &mut output.view(n),
                rows as u32,
                COPY_COLS as u32,
            );
            let run = KernelRun {
                launch,
                lesson,
                prediction: format!("{} -> {}: at most the link's rate", labels[i], labels[j]),
                work: Work::global_bytes(bytes as f64),
                size: format!("{rows}x{COPY_COLS}"),
                reset: &|| output.poison(),
            };
            let row =
                measure(&labs[i], run, || Ok((same(&output.read()?, want), "exact, read back on the receiving GPU")))?;
            kernels.push(row.clone());
            Ok::<_, anyhow::Error>(row.rate.value())
        };
        let read = one(&b.src[j], &b.dst[i], &b.patterns[j], "reads the peer's memory, writes local HBM")?;
        let write = one(&b.src[i], &b.dst[j], &b.patterns[i], "reads local HBM, writes the peer's memory")?;
        let theory = topology.paths.get(i, j).and_then(|p| p.theoretical_gbs());
        let pct = |g: f64| theory.map_or("-".into(), |t| format!("{:.0}%", 100.0 * g / t));
        table.push(vec![
            labels[i].clone(),
            labels[j].clone(),
            format!("{read:.1}"),
            pct(read),
            format!("{write:.1}"),
            pct(write),
            copy_gbs.get(i, j).map_or("-".into(), |g| format!("{g:.1}")),
            theory.map_or("-".into(), |t| format!("{t:.0}")),
        ]);
    }
    let header =
        ["kernel on", "memory of", "read GB/s", "of link", "write GB/s", "of link", "engine GB/s", "link GB/s"];
    Ok(Section {
        name: "peer".into(),
        title: format!("Kernels over the link: `copy` of {} MiB through peer access", bytes >> 20),
        lesson:
            "With peer access a kernel loads and stores the other GPU's memory directly, at the link's rate, not HBM's."
                .into(),
        kernels,
        sweep: Some((header.map(String::from).to_vec(), table)),
        notes,
        ..Section::default()
    })
}

/// The stride sweep over each device's own HBM and over every peer's memory.
fn strided(
    labs: &[Lab],
    labels: &[String],
    access: &dyn Fn(usize, usize) -> bool,
    opts: &Options,
) -> Result<(Vec<Curve>, Vec<Section>)> {
    let n = labs.len();
    let words = opts.strided_bytes / 4;
    let data: Vec<u32> = (0..words).map(reference::strided_word).collect();
    let inputs = labs.iter().map(|l| DeviceMemory::from_words(&l.gpu, &data)).collect::<Result<Vec<_>>>()?;
    let (mut curves, mut sections) = (Vec::new(), Vec::new());
    let pairs = (0..n).map(|d| (d, d)).chain(ordered_pairs(n).filter(|&(i, j)| access(i, j)));
    for (i, j) in pairs {
        labs[i].gpu.make_current()?;
        let lesson = if i == j { "strided reads of local HBM" } else { "strided reads of the peer's memory" };
        let points = strided::sweep(&labs[i], &inputs[j].view(words), words, lesson)?;
        curves.push(Curve {
            accessor: i,
            owner: j,
            points: points.iter().map(|(s, r)| (*s, r.rate.value())).collect(),
        });
        let (sweep, mut notes, series) = strided::table(&points);
        if i != j
            && let Some(local) = curves.iter().find(|c| c.accessor == i && c.owner == i)
        {
            notes.push(format!(
                "stride 1 over the link: {:.0} GB/s against {:.0} GB/s from {}'s own HBM",
                points[0].1.rate.value(),
                local.points[0].1,
                labels[i]
            ));
        }
        let mut kernels: Vec<KernelRow> = points.into_iter().map(|(_, r)| r).collect();
        let checks = kernels.drain(1..).map(|r| r.check).collect();
        sections.push(Section {
            name: "peer".into(),
            title: format!("strided_read on {} over {}'s memory ({} MiB)", labels[i], labels[j], opts.strided_bytes >> 20),
            lesson: "The link moves whole sectors too: the coalescing fall-off of local HBM repeats over the link, at the link's rate.".into(),
            kernels,
            sweep: Some(sweep),
            checks,
            notes,
            series,
        });
    }
    Ok((curves, sections))
}

/// Dependent-load latency of a chain in every peer's memory and in local HBM.
fn latency(
    labs: &[Lab],
    labels: &[String],
    access: &dyn Fn(usize, usize) -> bool,
    opts: &Options,
) -> Result<(PairMatrix<f64>, Section)> {
    let n = labs.len();
    let mut ns = PairMatrix::new(n);
    let (mut rows, mut checks) = (Vec::new(), Vec::new());
    let mut local: Vec<Option<Latency>> = vec![None; n];
    let pairs = (0..n).map(|d| (d, d)).chain(ordered_pairs(n).filter(|&(i, j)| access(i, j)));
    for (i, j) in pairs {
        let mem = DeviceMemory::poisoned(&labs[j].gpu, opts.chain_bytes)?;
        labs[i].gpu.make_current()?;
        let (lat, check) = chain_at(&labs[i], mem.ptr, opts.chain_bytes, CHAIN_WARM, opts.steps, |image| {
            mem.write(bytemuck::cast_slice(image))
        })?;
        if i == j {
            local[i] = Some(lat);
        }
        let vs = local[i].map_or("-".into(), |l| format!("{:.1}x", lat.ns / l.ns));
        ns.set(i, j, lat.ns);
        rows.push(vec![
            labels[i].clone(),
            if i == j { "its own HBM".to_string() } else { format!("{}'s HBM", labels[j]) },
            format!("{:.0}", lat.cycles),
            format!("{:.0}", lat.ns),
            vs,
            check.summary("exact"),
        ]);
        checks.push(check);
    }
    let header = ["kernel on", "chain in", "cycles per load", "ns per load", "vs local HBM", "check"];
    let section = Section {
        name: "peer".into(),
        title: format!("Dependent-load latency: chase_global over a {} MiB chain", opts.chain_bytes >> 20),
        lesson: "One thread's dependent loads pay the full round trip: across the link each load waits for the peer's memory and the link both ways.".into(),
        sweep: Some((header.map(String::from).to_vec(), rows)),
        checks,
        notes: vec![format!(
            "{CHAIN_WARM} links walked untimed, {} timed; slots 128 bytes apart in a random cycle",
            opts.steps
        )],
        ..Section::default()
    };
    Ok((ns, section))
}

/// The nearest peer as a row of the hierarchy table: a chain's dependent-load latency in the
/// next device's memory and the one-way copy-engine rate to it, with the link.
#[derive(Debug, Clone)]
pub struct PeerLevel {
    /// The other device's ordinal.
    pub ordinal: u32,
    /// The path between the two.
    pub path: topology::Path,
    /// Latency of a dependent load in the peer's memory (`None` without peer access).
    pub latency: Option<Latency>,
    /// Copy-engine GB/s one way to the peer (staged through the host without peer access).
    pub copy_gbs: f64,
    /// Checks: the chain's end and the copied data.
    pub checks: Vec<Check>,
}

impl PeerLevel {
    /// The row in the hierarchy table's six columns.
    pub fn hierarchy_row(&self) -> Vec<String> {
        vec![
            format!("peer GPU {} ({})", self.ordinal, self.path.describe()),
            "-".into(),
            self.latency.map_or("- (no peer access)".into(), |l| format!("{:.0} cycles ({:.0} ns)", l.cycles, l.ns)),
            "-".into(),
            format!(
                "copy {:.1} GB/s one way{}",
                self.copy_gbs,
                self.path.theoretical_gbs().map_or(String::new(), |t| format!(", link {t:.0} GB/s"))
            ),
            "chase_global in the peer's HBM; cuMemcpyPeerAsync".into(),
        ]
    }
}

/// Measures [`PeerLevel`] from `lab`'s device to the next device (ordinal + 1, wrapping);
/// `None` on a machine with one device. Leaves `lab`'s context current.
///
/// # Errors
/// A driver error as one line.
pub fn nearest_level(lab: &Lab, chain_bytes: usize, steps: u32) -> Result<Option<PeerLevel>> {
    let count = crate::gpu::context::device_count()?;
    if count < 2 {
        return Ok(None);
    }
    let me = lab.gpu.ordinal;
    let other = (me + 1) % count;
    let topology = Topology::query(&[me, other])?;
    let path = topology.paths.get(0, 1).cloned().unwrap_or(topology::Path::StagedThroughHost);
    let peer_gpu = Gpu::open(other, None)?;
    let bytes = 256 << 20;
    let words = pattern(0, bytes / 4);
    let src = DeviceMemory::from_words(&lab.gpu, &words)?;
    let dst = DeviceMemory::poisoned(&peer_gpu, bytes)?;
    let repeats = Repeats { warmup: 2, runs: 10 };
    let mut checks = Vec::new();
    let (timing, latency) = if path.peer_access() {
        peer::enable(&lab.gpu, &peer_gpu)?;
        lab.gpu.make_current()?;
        let t = timing::time(&lab.gpu, repeats, || {
            peer::copy_peer(&dst, &peer_gpu, &src, &lab.gpu, bytes, &lab.gpu.stream)
        })?;
        let chain = DeviceMemory::poisoned(&peer_gpu, chain_bytes)?;
        lab.gpu.make_current()?;
        let (lat, check) =
            chain_at(lab, chain.ptr, chain_bytes, CHAIN_WARM, steps, |image| chain.write(bytemuck::cast_slice(image)))?;
        checks.push(check);
        (t, Some(lat))
    } else {
        let staging = PinnedHost::new(bytes)?;
        let t = peer::time_host(repeats, || peer::copy_staged(&dst, &peer_gpu, &src, &lab.gpu, &staging, bytes))?;
        (t, None)
    };
    checks.push(same(&dst.read()?, &words));
    drop((src, dst));
    lab.gpu.make_current()?;
    Ok(Some(PeerLevel { ordinal: other, path, latency, copy_gbs: timing.gbs(bytes as f64), checks }))
}
