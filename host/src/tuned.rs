//! The autotune file (`host/tuned/sgemm.json`): which configuration of rung 8 (the tuned SGEMM,
//! `memlab_contracts::sgemm::TUNED`) runs, per compute capability and shape class. `memlab
//! autotune` measures every configuration and writes it; the binary embeds the committed file
//! at build time, and `MEMLAB_TUNED=FILE` reads another at run time (the file autotune just
//! wrote, before a rebuild).
//!
//! Format (JSON): `{"about": "...", "choices": [{"cc": "9.0", "class": "large", "config":
//! "sgemm_8_...", "source": "...", "size": "4096x4096x4096", "tflops": 47.0, "cublas_tflops":
//! 51.3}]}`; `size`, `tflops` and `cublas_tflops` are what the choice was measured at (absent
//! for a default that was not measured). A file naming a configuration the PTX was not built
//! with, an unknown class, a malformed capability or two choices for one capability and class
//! is refused in one line.

use std::path::Path;

use anyhow::Result;
use memlab_contracts::sgemm::{SPLIT_K, TUNED, Tuned};
use serde::{Deserialize, Serialize};

use crate::refuse;

/// The committed file, embedded at build time.
pub const EMBEDDED: &str = include_str!("../tuned/sgemm.json");

/// Where `memlab autotune` writes by default, relative to the repository root.
pub const DEFAULT_PATH: &str = "host/tuned/sgemm.json";

/// The environment variable that names a file to read instead of the embedded one.
pub const ENV: &str = "MEMLAB_TUNED";

/// A class of SGEMM shapes: the tuned rung may choose another tile, or the split-K rung, for
/// each. [`ShapeClass::of`] tests them in this order: short `k`, thin `M`, thin `N`, then by the
/// size of `C` (up to 1024^2 split by the depth of `k`), a size above 1024^2 whose sides are not
/// multiples of 256 being `Odd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShapeClass {
    /// `m n <= 1024^2` and `k < 512`: at a `128 x 128` tile, 64 blocks or fewer, under half of
    /// an H200's 132 SMs, each with a short `k` loop that a split would cut into a few steps
    /// (517x389x263 ran at 0.65x cuBLAS split 11 ways, at 0.98x on 64 x 64 tiles, measured on
    /// the H200).
    Small,
    /// `m n <= 1024^2` and `k >= 512`: as few blocks, each with a `k` loop deep enough to share
    /// out (1000^3 ran at 0.91x cuBLAS split 4 ways, at 0.89x on 64 x 64 tiles, measured on
    /// the H200).
    SmallDeep,
    /// `m n <= 2048^2`: up to 256 blocks of `128 x 128`, under 2 waves of 2 blocks per SM.
    Medium,
    /// Larger, both sides multiples of 256.
    Large,
    /// `m <= 256 < n`, `n >= 8 m`: a few block rows, each with a long `k` loop.
    ThinM,
    /// `n <= 256 < m`, `m >= 8 n`: a few block columns.
    ThinN,
    /// `k <= 128` under a large `C`: a short loop per block, the result's stores dominate.
    ShortK,
    /// Above 1024^2 with a side that is not a multiple of 256, the largest tile side of rung 8:
    /// edge tiles run the guarded path and the last wave is partly empty (3000^3 is 2.2 waves
    /// of rung 6's tiles).
    Odd,
}

impl ShapeClass {
    /// Every class, by size first, then the shaped ones.
    pub const ALL: [ShapeClass; 8] = [
        ShapeClass::Small,
        ShapeClass::SmallDeep,
        ShapeClass::Medium,
        ShapeClass::Large,
        ShapeClass::ThinM,
        ShapeClass::ThinN,
        ShapeClass::ShortK,
        ShapeClass::Odd,
    ];

    /// The class of an `m x n x k` product.
    pub fn of(m: usize, n: usize, k: usize) -> ShapeClass {
        let c = m.saturating_mul(n);
        match () {
            _ if k <= 128 && c > 1024 * 1024 => ShapeClass::ShortK,
            _ if m <= 256 && n > 256 && n >= 8 * m => ShapeClass::ThinM,
            _ if n <= 256 && m > 256 && m >= 8 * n => ShapeClass::ThinN,
            _ if c <= 1024 * 1024 && k >= 512 => ShapeClass::SmallDeep,
            _ if c <= 1024 * 1024 => ShapeClass::Small,
            _ if !m.is_multiple_of(256) || !n.is_multiple_of(256) => ShapeClass::Odd,
            _ if c <= 2048 * 2048 => ShapeClass::Medium,
            _ => ShapeClass::Large,
        }
    }

    /// The shape `memlab autotune` times the class at.
    pub fn representative(self) -> (usize, usize, usize) {
        match self {
            ShapeClass::Small => (1024, 1024, 256),
            ShapeClass::SmallDeep => (1000, 1000, 1000),
            ShapeClass::Medium => (2048, 2048, 2048),
            ShapeClass::Large => (4096, 4096, 4096),
            ShapeClass::ThinM => (128, 4096, 4096),
            ShapeClass::ThinN => (4096, 128, 4096),
            ShapeClass::ShortK => (4096, 4096, 64),
            ShapeClass::Odd => (3000, 3000, 3000),
        }
    }

    /// The name the file uses.
    pub fn name(self) -> &'static str {
        match self {
            ShapeClass::Small => "small",
            ShapeClass::SmallDeep => "small_deep",
            ShapeClass::Medium => "medium",
            ShapeClass::Large => "large",
            ShapeClass::ThinM => "thin_m",
            ShapeClass::ThinN => "thin_n",
            ShapeClass::ShortK => "short_k",
            ShapeClass::Odd => "odd",
        }
    }

    /// What runs where the file has no choice for the device: rung 6's own configuration for
    /// medium and large products and short `k` (rung 6 measured 42.7 and 43.7 TFLOP/s at
    /// 2048^3 and 4096^3 on the H200, above every `AsyncCopy` configuration, and 32.2 at
    /// 4096x4096x64, above cuBLAS's 26.2), the 64 x 64 tile for small products with a short `k`
    /// (autotune's choice on the H200), the split-K rung for the classes where one split leaves
    /// SMs idle (thin, odd, small and deep: the model of `model::split_k` picks the split).
    pub fn fallback(self) -> Pick {
        match self {
            ShapeClass::Medium | ShapeClass::Large | ShapeClass::ShortK => {
                Pick::Plain(config("sgemm_8_128x128x8_w32x64_t8x8_regs").expect("a compiled configuration"))
            }
            // A split of a short `k` loop leaves a few steps per block (see `Small`).
            ShapeClass::Small => {
                Pick::Plain(config("sgemm_8_64x64x16_w32x32_t4x8_s3").expect("a compiled configuration"))
            }
            ShapeClass::SmallDeep | ShapeClass::ThinM | ShapeClass::ThinN | ShapeClass::Odd => Pick::SplitK,
        }
    }
}

/// What the tuned rung runs for a class: one configuration of rung 8, or the split-K rung
/// (`memlab_contracts::sgemm::SPLIT_K`, rung 6's tile) at the split the model chooses per shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// A configuration of `TUNED`.
    Plain(&'static Tuned),
    /// The split-K rung.
    SplitK,
}

impl Pick {
    /// The entry name the file records: the configuration's, or `SPLIT_K`.
    pub fn name(self) -> &'static str {
        match self {
            Pick::Plain(c) => c.name,
            Pick::SplitK => SPLIT_K,
        }
    }

    /// The pick named `name`, if this build has it.
    pub fn named(name: &str) -> Option<Pick> {
        if name == SPLIT_K { Some(Pick::SplitK) } else { config(name).map(Pick::Plain) }
    }

    /// The configuration whose tile runs: the split-K rung's is `SPLIT_K_CONFIG`.
    pub fn tile(self) -> &'static Tuned {
        match self {
            Pick::Plain(c) => c,
            Pick::SplitK => memlab_contracts::sgemm::split_k_config(),
        }
    }
}

/// One choice of the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    /// Compute capability, `major.minor`.
    pub cc: String,
    /// Shape class.
    pub class: ShapeClass,
    /// The configuration's entry name (`memlab_contracts::sgemm::TUNED`), or the split-K
    /// rung's (`memlab_contracts::sgemm::SPLIT_K`).
    pub config: String,
    /// Where the choice comes from (the autotune run, or a default).
    pub source: String,
    /// The shape it was measured at, `MxNxK`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    /// Its rate there, TFLOP/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tflops: Option<f64>,
    /// cuBLAS SGEMM's rate there, TFLOP/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cublas_tflops: Option<f64>,
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunedFile {
    /// What the file is.
    pub about: String,
    /// The choices.
    pub choices: Vec<Choice>,
}

/// The configuration named `name`, if the PTX is built with it.
pub fn config(name: &str) -> Option<&'static Tuned> {
    TUNED.iter().find(|c| c.name == name)
}

/// Parses `major.minor`.
fn parse_cc(s: &str) -> Option<(u32, u32)> {
    let (major, minor) = s.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

impl TunedFile {
    /// Parses and checks a file's text; `origin` names it in refusals.
    ///
    /// # Errors
    /// Malformed JSON, an unknown configuration, a malformed capability, or two choices for one
    /// capability and class.
    pub fn parse(text: &str, origin: &str) -> Result<TunedFile> {
        let file: TunedFile = match serde_json::from_str(text) {
            Ok(f) => f,
            Err(e) => refuse!("{origin}: not an autotune file: {e}"),
        };
        for (i, c) in file.choices.iter().enumerate() {
            if Pick::named(&c.config).is_none() {
                let known: Vec<&str> = TUNED.iter().map(|t| t.name).chain([SPLIT_K]).collect();
                refuse!("{origin}: unknown configuration `{}` (this build has: {})", c.config, known.join(", "));
            }
            if parse_cc(&c.cc).is_none() {
                refuse!("{origin}: compute capability `{}` is not of the form major.minor (e.g. 9.0)", c.cc);
            }
            if file.choices[..i].iter().any(|d| d.cc == c.cc && d.class == c.class) {
                refuse!("{origin}: two choices for compute capability {} and class {}", c.cc, c.class.name());
            }
        }
        Ok(file)
    }

    /// The file in force: `$MEMLAB_TUNED` when set, else the embedded one.
    ///
    /// # Errors
    /// An unreadable or invalid file.
    pub fn load() -> Result<TunedFile> {
        match std::env::var_os(ENV) {
            Some(path) => Self::read(Path::new(&path)),
            None => Self::parse(EMBEDDED, DEFAULT_PATH),
        }
    }

    /// Reads and checks the file at `path`.
    ///
    /// # Errors
    /// As for [`TunedFile::parse`], or the file cannot be read.
    pub fn read(path: &Path) -> Result<TunedFile> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text, &path.display().to_string()),
            Err(e) => refuse!("cannot read the autotune file {}: {e}", path.display()),
        }
    }

    /// What runs for a device of capability `cc` and a shape of `class`, and the choice that
    /// named it (`None`: the class's fallback, the file having no choice for `cc` and `class`).
    pub fn choose(&self, cc: (u32, u32), class: ShapeClass) -> (Pick, Option<&Choice>) {
        let found = self.choices.iter().find(|c| parse_cc(&c.cc) == Some(cc) && c.class == class);
        match found {
            // Checked by `parse`.
            Some(c) => (Pick::named(&c.config).unwrap_or(class.fallback()), Some(c)),
            None => (class.fallback(), None),
        }
    }

    /// Sets the choice for `cc` and its class (replacing one there), keeping the file ordered by
    /// capability then class.
    pub fn set(&mut self, choice: Choice) {
        self.choices.retain(|c| !(c.cc == choice.cc && c.class == choice.class));
        self.choices.push(choice);
        self.choices.sort_by_key(|c| (parse_cc(&c.cc), ShapeClass::ALL.iter().position(|k| *k == c.class)));
    }

    /// The file's text, as written.
    pub fn to_text(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data serialises") + "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_file_parses_and_names_compiled_configurations() {
        let file = TunedFile::parse(EMBEDDED, DEFAULT_PATH).unwrap();
        assert!(!file.choices.is_empty());
        for class in ShapeClass::ALL {
            let (pick, choice) = file.choose((9, 0), class);
            assert!(pick.tile().valid(), "{}", pick.name());
            assert_eq!(choice.map(|c| c.config.as_str()), Some(pick.name()), "{class:?}");
        }
        // The thin and odd classes run the split-K rung; 3000^3 is odd, not large, so it no
        // longer runs the large class's 256 x 128 tile, which lost to rung 6 there.
        for class in [ShapeClass::ThinM, ShapeClass::ThinN, ShapeClass::Odd] {
            assert_eq!(file.choose((9, 0), class).0, Pick::SplitK, "{class:?}");
        }
        assert_eq!(ShapeClass::of(3000, 3000, 3000), ShapeClass::Odd);
        // A capability the file does not name gets the class's fallback.
        assert_eq!(file.choose((7, 5), ShapeClass::Small), (ShapeClass::Small.fallback(), None));
        assert_eq!(Pick::named(SPLIT_K), Some(Pick::SplitK));
        assert_eq!(Pick::SplitK.tile().name, memlab_contracts::sgemm::SPLIT_K_CONFIG);
        assert_eq!(Pick::named("sgemm_8_1x1x1"), None);
    }

    #[test]
    fn classes_follow_the_size_of_c() {
        let of = |m, n, k| ShapeClass::of(m, n, k);
        assert_eq!(of(1024, 1024, 1024), ShapeClass::SmallDeep);
        assert_eq!(of(517, 389, 263), ShapeClass::Small);
        assert_eq!(of(1000, 1000, 1000), ShapeClass::SmallDeep);
        assert_eq!(of(1000, 1000, 511), ShapeClass::Small);
        assert_eq!(of(1280, 1024, 1024), ShapeClass::Medium);
        assert_eq!(of(1025, 1024, 1024), ShapeClass::Odd);
        assert_eq!(of(2048, 2048, 2048), ShapeClass::Medium);
        assert_eq!(of(4096, 4096, 4096), ShapeClass::Large);
        assert_eq!(of(4096, 4096, 64), ShapeClass::ShortK);
        assert_eq!(of(4096, 4096, 129), ShapeClass::Large);
        assert_eq!(of(4096, 128, 4096), ShapeClass::ThinN);
        assert_eq!(of(128, 4096, 4096), ShapeClass::ThinM);
        assert_eq!(of(64, 1 << 20, 64), ShapeClass::ShortK);
        assert_eq!(of(64, 1 << 20, 1024), ShapeClass::ThinM);
        // Not thin: the short side above 256, or the long one under 8 times it.
        assert_eq!(of(512, 4096, 4096), ShapeClass::Medium);
        assert_eq!(of(200, 1000, 1000), ShapeClass::SmallDeep);
        assert_eq!(of(200, 1000, 256), ShapeClass::Small);
        for class in ShapeClass::ALL {
            let (m, n, k) = class.representative();
            assert_eq!(of(m, n, k), class);
        }
    }

    fn choice(cc: &str, class: ShapeClass, config: &str) -> Choice {
        Choice {
            cc: cc.into(),
            class,
            config: config.into(),
            source: "test".into(),
            size: None,
            tflops: None,
            cublas_tflops: None,
        }
    }

    #[test]
    fn bad_files_are_refused_in_one_line_naming_the_problem() {
        let refusal = |text: &str| TunedFile::parse(text, "t.json").unwrap_err().to_string();
        assert!(refusal("{").starts_with("t.json: not an autotune file: "));
        assert!(refusal(r#"{"about": "", "choices": [], "extra": 1}"#).contains("unknown field `extra`"));
        let file = |c: Vec<Choice>| TunedFile { about: "x".into(), choices: c }.to_text();
        let unknown = refusal(&file(vec![choice("9.0", ShapeClass::Large, "sgemm_8_1x1x1")]));
        assert!(unknown.starts_with("t.json: unknown configuration `sgemm_8_1x1x1` (this build has: sgemm_8_"));
        let name = TUNED[0].name;
        assert_eq!(
            refusal(&file(vec![choice("9", ShapeClass::Large, name)])),
            "t.json: compute capability `9` is not of the form major.minor (e.g. 9.0)"
        );
        assert_eq!(
            refusal(&file(vec![choice("9.0", ShapeClass::Large, name), choice("9.0", ShapeClass::Large, name)])),
            "t.json: two choices for compute capability 9.0 and class large"
        );
        assert!(
            refusal(&file(vec![]).replace(
                "\"choices\": []",
                "\"choices\": [{\"cc\": \"9.0\", \"class\": \"huge\", \"config\": \"x\", \"source\": \"\"}]"
            ))
            .contains("unknown variant `huge`")
        );
        assert!(
            TunedFile::read(Path::new("/nonexistent/t.json"))
                .unwrap_err()
                .to_string()
                .starts_with("cannot read the autotune file /nonexistent/t.json: ")
        );
    }

    #[test]
    fn set_replaces_and_orders_and_the_text_reads_back() {
        let mut file = TunedFile { about: "x".into(), choices: vec![] };
        file.set(choice("9.0", ShapeClass::Large, TUNED[0].name));
        file.set(choice("8.0", ShapeClass::Small, TUNED[1].name));
        file.set(choice("9.0", ShapeClass::Small, TUNED[2].name));
        file.set(choice("9.0", ShapeClass::Large, TUNED[3].name));
        let order: Vec<(&str, ShapeClass)> = file.choices.iter().map(|c| (c.cc.as_str(), c.class)).collect();
        assert_eq!(order, [("8.0", ShapeClass::Small), ("9.0", ShapeClass::Small), ("9.0", ShapeClass::Large)]);
        assert_eq!(file.choose((9, 0), ShapeClass::Large).0.name(), TUNED[3].name);
        assert_eq!(TunedFile::parse(&file.to_text(), "t").unwrap(), file);
    }
}
