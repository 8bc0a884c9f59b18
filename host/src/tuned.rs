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
use memlab_contracts::sgemm::{TUNED, Tuned};
use serde::{Deserialize, Serialize};

use crate::refuse;

/// The committed file, embedded at build time.
pub const EMBEDDED: &str = include_str!("../tuned/sgemm.json");

/// Where `memlab autotune` writes by default, relative to the repository root.
pub const DEFAULT_PATH: &str = "host/tuned/sgemm.json";

/// The environment variable that names a file to read instead of the embedded one.
pub const ENV: &str = "MEMLAB_TUNED";

/// A class of SGEMM shapes by the size of `C`: the tuned rung may choose another tile for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShapeClass {
    /// `m n <= 1024^2`: at a `128 x 128` tile, 64 blocks or fewer, under half of an H200's 132
    /// SMs.
    Small,
    /// `m n <= 2048^2`: up to 256 blocks of `128 x 128`, under 2 waves of 2 blocks per SM.
    Medium,
    /// Larger.
    Large,
}

impl ShapeClass {
    /// Every class, smallest first.
    pub const ALL: [ShapeClass; 3] = [ShapeClass::Small, ShapeClass::Medium, ShapeClass::Large];

    /// The class of an `m x n` result.
    pub fn of(m: usize, n: usize) -> ShapeClass {
        match m.saturating_mul(n) {
            x if x <= 1024 * 1024 => ShapeClass::Small,
            x if x <= 2048 * 2048 => ShapeClass::Medium,
            _ => ShapeClass::Large,
        }
    }

    /// The shape `memlab autotune` times the class at.
    pub fn representative(self) -> (usize, usize, usize) {
        match self {
            ShapeClass::Small => (1024, 1024, 1024),
            ShapeClass::Medium => (2048, 2048, 2048),
            ShapeClass::Large => (4096, 4096, 4096),
        }
    }

    /// The name the file uses.
    pub fn name(self) -> &'static str {
        match self {
            ShapeClass::Small => "small",
            ShapeClass::Medium => "medium",
            ShapeClass::Large => "large",
        }
    }

    /// The configuration run where the file has no choice for the device: rung 6's own
    /// configuration for medium and large products (rung 6 measured 42.7 and 43.7 TFLOP/s at
    /// 2048^3 and 4096^3 on the H200, above every `AsyncCopy` configuration), the `64 x 64` one
    /// that was fastest at 1024^3 there (30.0 TFLOP/s), where 128-tiles would leave SMs idle.
    pub fn fallback(self) -> &'static Tuned {
        let name = match self {
            ShapeClass::Small => "sgemm_8_64x64x32_w32x32_t4x8_s2",
            ShapeClass::Medium | ShapeClass::Large => "sgemm_8_128x128x8_w32x64_t8x8_regs",
        };
        config(name).expect("the fallbacks are compiled configurations")
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
    /// The configuration's entry name (`memlab_contracts::sgemm::TUNED`).
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
            if config(&c.config).is_none() {
                let known: Vec<&str> = TUNED.iter().map(|t| t.name).collect();
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

    /// The configuration for a device of capability `cc` and a shape of `class`, and the choice
    /// that named it (`None`: the class's fallback, the file having no choice for `cc`).
    pub fn choose(&self, cc: (u32, u32), class: ShapeClass) -> (&'static Tuned, Option<&Choice>) {
        let found = self.choices.iter().find(|c| parse_cc(&c.cc) == Some(cc) && c.class == class);
        match found {
            // Checked by `parse`.
            Some(c) => (config(&c.config).unwrap_or(class.fallback()), Some(c)),
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
            let (cfg, choice) = file.choose((9, 0), class);
            assert!(cfg.valid(), "{}", cfg.name);
            assert_eq!(choice.map(|c| c.config.as_str()), Some(cfg.name), "{class:?}");
        }
        // A capability the file does not name gets the class's fallback.
        assert_eq!(file.choose((7, 5), ShapeClass::Small), (ShapeClass::Small.fallback(), None));
    }

    #[test]
    fn classes_follow_the_size_of_c() {
        assert_eq!(ShapeClass::of(1024, 1024), ShapeClass::Small);
        assert_eq!(ShapeClass::of(517, 389), ShapeClass::Small);
        assert_eq!(ShapeClass::of(1025, 1024), ShapeClass::Medium);
        assert_eq!(ShapeClass::of(2048, 2048), ShapeClass::Medium);
        assert_eq!(ShapeClass::of(4096, 4096), ShapeClass::Large);
        assert_eq!(ShapeClass::of(64, 1 << 20), ShapeClass::Large);
        for class in ShapeClass::ALL {
            let (m, n, _) = class.representative();
            assert_eq!(ShapeClass::of(m, n), class);
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
        assert_eq!(file.choose((9, 0), ShapeClass::Large).0.name, TUNED[3].name);
        assert_eq!(TunedFile::parse(&file.to_text(), "t").unwrap(), file);
    }
}
