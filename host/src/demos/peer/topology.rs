//! Which devices reach which, over what: the driver's peer figures (`cuDeviceCanAccessPeer`,
//! the P2P attributes) joined with NVML's NVLinks (their far ends and common speed), and the
//! link's theoretical bandwidth, links x per-link speed per direction.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::matrix::{PairMatrix, ordered_pairs};
use crate::gpu::nvml::{Links, Nvml, Remote, normalise_bus_id};
use crate::gpu::peer::{self, PeerCaps};
use crate::refuse;

/// How data goes from one device to another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Path {
    /// NVLinks straight to the other GPU.
    NvLink {
        /// Links between the two.
        links: u32,
        /// NVLink version.
        version: Option<u32>,
        /// Per-link speed, GB/s per direction, as NVML reports it.
        gbs_per_link: Option<f64>,
    },
    /// NVLinks into NVSwitches that join the two GPUs: the narrower side's links carry it.
    NvSwitch {
        /// Links of the device with fewer.
        links: u32,
        /// NVLink version.
        version: Option<u32>,
        /// Per-link speed, GB/s per direction.
        gbs_per_link: Option<f64>,
    },
    /// Peer access without NVLink, so over PCIe (the driver reports access; NVML no link).
    Pcie,
    /// Peer access with the link unknown: NVML could not be loaded.
    Unknown,
    /// No peer access: data is staged through host memory.
    StagedThroughHost,
}

impl Path {
    /// Whether kernels can load and store the other device's memory.
    pub fn peer_access(&self) -> bool {
        !matches!(self, Path::StagedThroughHost)
    }

    /// The theoretical bandwidth per direction, GB/s: links x per-link speed, where known.
    pub fn theoretical_gbs(&self) -> Option<f64> {
        match self {
            Path::NvLink { links, gbs_per_link, .. } | Path::NvSwitch { links, gbs_per_link, .. } => {
                gbs_per_link.map(|g| g * *links as f64)
            }
            _ => None,
        }
    }

    /// One phrase, e.g. `NVLink 4.0 via NVSwitch, 18 x 25.0 = 450 GB/s each way` (links x per-link
    /// GB/s per direction).
    pub fn describe(&self) -> String {
        let nvlink = |how: &str, links: &u32, version: &Option<u32>, speed: &Option<f64>| {
            let v = version.map_or(String::new(), |v| {
                crate::gpu::nvml::nvlink_generation(v).map_or(format!(" (NVML version {v})"), |g| format!(" {}", g.0))
            });
            match speed {
                Some(s) => format!("NVLink{v}{how}, {links} x {s:.1} = {:.0} GB/s each way", s * *links as f64),
                None => format!("NVLink{v}{how}, {links} links (speed not reported)"),
            }
        };
        match self {
            Path::NvLink { links, version, gbs_per_link } => nvlink(" direct", links, version, gbs_per_link),
            Path::NvSwitch { links, version, gbs_per_link } => nvlink(" via NVSwitch", links, version, gbs_per_link),
            Path::Pcie => "PCIe (peer access, no NVLink between them)".into(),
            Path::Unknown => "peer access, link unknown (NVML not loaded)".into(),
            Path::StagedThroughHost => "no peer access: staged through host memory".into(),
        }
    }
}

/// The path from device `from` to device `to` given the driver's answer and NVML's links of
/// every device (`None` where NVML is missing) with their PCI bus ids.
pub fn path(caps: &PeerCaps, from: usize, to: usize, links: &[Option<Links>], bus_ids: &[String]) -> Path {
    if !caps.access {
        return Path::StagedThroughHost;
    }
    let (Some(a), Some(b)) = (&links[from], &links[to]) else { return Path::Unknown };
    let target = normalise_bus_id(&bus_ids[to]);
    let speed = match (a.gbs_per_link, b.gbs_per_link) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    let direct = a.remotes.iter().filter(|r| **r == Remote::Gpu(target.clone())).count() as u32;
    if direct > 0 {
        return Path::NvLink { links: direct, version: a.version, gbs_per_link: speed };
    }
    let switched = |l: &Links| l.remotes.iter().filter(|r| **r == Remote::Switch).count() as u32;
    match switched(a).min(switched(b)) {
        0 => Path::Pcie,
        links => Path::NvSwitch { links, version: a.version, gbs_per_link: speed },
    }
}

/// The machine's peer topology.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Device ordinals, in matrix order.
    pub ordinals: Vec<u32>,
    /// PCI bus ids, same order.
    pub bus_ids: Vec<String>,
    /// The driver's figures per ordered pair.
    pub caps: PairMatrix<PeerCaps>,
    /// The path per ordered pair.
    pub paths: PairMatrix<Path>,
    /// Whether NVML answered.
    pub nvml: bool,
}

impl Topology {
    /// Asks the driver and NVML about `ordinals` (each pair both ways).
    ///
    /// # Errors
    /// A driver error as one line.
    pub fn query(ordinals: &[u32]) -> Result<Topology> {
        let n = ordinals.len();
        let bus_ids = ordinals
            .iter()
            .map(|&o| match crate::gpu::device::pci_bus_id(o) {
                Some(id) => Ok(id.to_string_lossy().into_owned()),
                None => refuse!("the driver gives no PCI bus id for device {o}"),
            })
            .collect::<Result<Vec<_>>>()?;
        let nvml = Nvml::open().ok();
        let links: Vec<Option<Links>> =
            bus_ids.iter().map(|id| nvml.as_ref().and_then(|nv| nv.links(id).ok())).collect();
        let mut caps = PairMatrix::new(n);
        let mut paths = PairMatrix::new(n);
        for (i, j) in ordered_pairs(n) {
            let c = peer::caps(ordinals[i], ordinals[j])?;
            paths.set(i, j, path(&c, i, j, &links, &bus_ids));
            caps.set(i, j, c);
        }
        Ok(Topology { ordinals: ordinals.to_vec(), bus_ids, caps, paths, nvml: nvml.is_some() })
    }

    /// Each device's PCI bus id and what the columns mean, one line.
    pub fn bus_ids_text(&self) -> String {
        let ids: Vec<String> =
            self.ordinals.iter().zip(&self.bus_ids).map(|(o, b)| format!("GPU {o} at {b}")).collect();
        format!(
            "PCI: {}; access: cuDeviceCanAccessPeer; rank: the driver's performance rank (lower is faster); link: NVML",
            ids.join(", ")
        )
    }

    /// The topology as a table: one row per ordered pair.
    pub fn table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let header = ["pair", "access", "rank", "atomics", "link"];
        let rows = ordered_pairs(self.ordinals.len())
            .filter_map(|(i, j)| {
                let (c, p) = (self.caps.get(i, j)?, self.paths.get(i, j)?);
                Some(vec![
                    format!("GPU {} -> GPU {}", self.ordinals[i], self.ordinals[j]),
                    if c.access { "yes" } else { "no" }.into(),
                    c.rank.to_string(),
                    if c.atomics { "yes" } else { "no" }.into(),
                    p.describe(),
                ])
            })
            .collect();
        (header.map(String::from).to_vec(), rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACCESS: PeerCaps = PeerCaps { access: true, rank: 0, atomics: true };

    fn ids() -> Vec<String> {
        vec!["0000:1B:00.0".into(), "0000:43:00.0".into()]
    }

    #[test]
    fn eighteen_switch_links_give_the_h200_figure() {
        // What NVML said on the 2-GPU H200 machine: version 6 (NVLink 4.0) on 18 links to an
        // NVSwitch, no speed field, so the generation's 25 GB/s per link and direction.
        let links = Links { remotes: vec![Remote::Switch; 18], version: Some(6), gbs_per_link: Some(25.0) };
        let p = path(&ACCESS, 0, 1, &[Some(links.clone()), Some(links)], &ids());
        assert_eq!(p, Path::NvSwitch { links: 18, version: Some(6), gbs_per_link: Some(25.0) });
        assert!((p.theoretical_gbs().unwrap() - 450.0).abs() < 1e-9);
        assert_eq!(p.describe(), "NVLink 4.0 via NVSwitch, 18 x 25.0 = 450 GB/s each way");
    }

    #[test]
    fn direct_links_are_counted_by_the_far_ends_bus_id() {
        let a = Links {
            remotes: vec![Remote::Gpu("0000:43:00.0".into()), Remote::Gpu("0000:43:00.0".into()), Remote::Other],
            version: Some(3),
            gbs_per_link: Some(25.0),
        };
        let b =
            Links { remotes: vec![Remote::Gpu("0000:1b:00.0".into()); 2], version: Some(3), gbs_per_link: Some(25.0) };
        let p = path(&ACCESS, 0, 1, &[Some(a.clone()), Some(b.clone())], &ids());
        assert_eq!(p, Path::NvLink { links: 2, version: Some(3), gbs_per_link: Some(25.0) });
        assert_eq!(path(&ACCESS, 1, 0, &[Some(a), Some(b)], &ids()).theoretical_gbs(), Some(50.0));
    }

    #[test]
    fn no_access_is_staged_and_no_nvml_is_unknown_and_no_links_is_pcie() {
        let none = PeerCaps { access: false, rank: 0, atomics: false };
        let empty = Links { remotes: vec![], version: None, gbs_per_link: None };
        assert_eq!(path(&none, 0, 1, &[None, None], &ids()), Path::StagedThroughHost);
        assert!(!Path::StagedThroughHost.peer_access());
        assert_eq!(path(&ACCESS, 0, 1, &[None, None], &ids()), Path::Unknown);
        assert_eq!(path(&ACCESS, 0, 1, &[Some(empty.clone()), Some(empty)], &ids()), Path::Pcie);
        assert_eq!(Path::Pcie.theoretical_gbs(), None);
    }
}
