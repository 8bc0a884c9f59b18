//! The built book in headless Chromium (Debian's package, installed with apt-get when missing),
//! offline: each chapter loads, its first heading renders, and every image on it decodes
//! (`naturalWidth > 0`); two chapters are kept as screenshots.
//!
//! A chapter is checked through a copy of its page, in the same folder (so its relative paths
//! hold), with a script that records, at the `load` event, the heading and each image's width in
//! an attribute of `<html>`; `--dump-dom` prints the page after virtual time has run out.
//! Screenshots start at the chapter's "Measured on the H200" heading.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

const PROBE: &str = r#"<script>
window.addEventListener('load', function () {
  var h1 = document.querySelector('main h1');
  var images = Array.prototype.map.call(document.images, function (i) {
    return i.getAttribute('src') + '=' + i.naturalWidth;
  });
  document.documentElement.setAttribute('data-book-check',
    (h1 ? h1.textContent : '') + '|' + images.join(','));
});
</script>"#;

/// Removes what comes before the "Measured on the H200" heading (headless screenshots start
/// at the top of the page, whatever the scroll position).
const FROM_MEASUREMENTS: &str = r#"<script>
(function () {
  var h = document.getElementById('measured-on-the-h200');
  while (h && h.previousElementSibling) { h.previousElementSibling.remove(); }
})();
</script>"#;

/// What the browser saw on one page.
#[derive(Debug, PartialEq)]
pub struct PageCheck {
    pub heading: String,
    /// (src, naturalWidth)
    pub images: Vec<(String, u32)>,
}

/// Reads the probe's attribute out of a `--dump-dom` output.
pub fn parse_dump(dom: &str) -> Option<PageCheck> {
    let start = dom.find("data-book-check=\"")? + "data-book-check=\"".len();
    let value = &dom[start..start + dom[start..].find('"')?];
    let value = value.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">");
    let (heading, images) = value.split_once('|')?;
    let images = images
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let (src, width) = s.rsplit_once('=')?;
            Some((src.to_string(), width.parse().ok()?))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(PageCheck { heading: heading.trim().to_string(), images })
}

/// Chromium from the machine, else Debian's package installed now.
fn chromium() -> Result<PathBuf> {
    let find = || ["chromium", "chromium-browser"].iter().map(|n| Path::new("/usr/bin").join(n)).find(|p| p.is_file());
    if let Some(path) = find() {
        return Ok(path);
    }
    eprintln!("xtask: installing Debian's chromium for the book's browser check");
    super::super::run(Command::new("apt-get").args(["update", "-qq"])).context("apt-get update")?;
    super::super::run(
        Command::new("apt-get").args(["install", "-y", "-qq", "chromium"]).env("DEBIAN_FRONTEND", "noninteractive"),
    )
    .context("apt-get install chromium")?;
    find().context("apt-get installed chromium but /usr/bin/chromium is missing")
}

fn headless(chromium: &Path, profile: &Path) -> Command {
    // coreutils' timeout: a hung browser fails the check instead of the CI run.
    let mut cmd = Command::new("timeout");
    cmd.arg("120").arg(chromium).args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--run-all-compositor-stages-before-draw",
        "--virtual-time-budget=5000",
        "--window-size=1280,1600",
    ]);
    cmd.arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// Loads each page in `pages` (HTML files of the built book) and checks it; writes a PNG of
/// each page in `screenshots` to `shots/<stem>.png`. Returns the problems, one line each.
pub fn check_pages(pages: &[PathBuf], screenshots: &[&str], work: &Path, shots: &Path) -> Result<Vec<String>> {
    let chromium = chromium()?;
    let profile = work.join("chromium-profile");
    if profile.exists() {
        fs::remove_dir_all(&profile)?;
    }
    fs::create_dir_all(&profile)?;
    fs::create_dir_all(shots)?;
    let mut problems = Vec::new();
    for page in pages {
        let name = page.file_name().unwrap().to_string_lossy().to_string();
        let html = fs::read_to_string(page).with_context(|| format!("{} was not built", page.display()))?;
        let probe_page = page.with_file_name(format!("xtask-probe-{name}"));
        fs::write(&probe_page, html.replacen("</body>", &format!("{PROBE}</body>"), 1))?;
        let out =
            headless(&chromium, &profile).arg("--dump-dom").arg(format!("file://{}", probe_page.display())).output();
        fs::remove_file(&probe_page)?;
        let out = out.context("cannot start chromium")?;
        let dom = String::from_utf8_lossy(&out.stdout);
        match parse_dump(&dom) {
            None => problems.push(format!("{name}: did not finish loading in Chromium ({})", out.status)),
            Some(check) => {
                let expected = html.matches("<img ").count();
                if check.images.len() != expected {
                    problems.push(format!("{name}: {} images in the page, {expected} in its HTML", check.images.len()));
                }
                if check.heading.is_empty() {
                    problems.push(format!("{name}: no heading rendered"));
                }
                for (src, width) in &check.images {
                    if *width == 0 {
                        problems.push(format!("{name}: image {src} does not display (naturalWidth 0)"));
                    }
                }
            }
        }
        if screenshots.iter().any(|s| name == format!("{s}.html")) {
            let png = shots.join(name.replace(".html", ".png"));
            // From the chapter's measurements on, so the picture shows a table and a chart.
            fs::write(&probe_page, html.replacen("</body>", &format!("{FROM_MEASUREMENTS}</body>"), 1))?;
            let out = headless(&chromium, &profile)
                .arg(format!("--screenshot={}", png.display()))
                .arg(format!("file://{}", probe_page.display()))
                .output();
            fs::remove_file(&probe_page)?;
            let status = out.context("cannot start chromium")?.status;
            if !status.success() || fs::metadata(&png).map(|m| m.len()).unwrap_or(0) == 0 {
                bail!("chromium wrote no screenshot of {name} ({status})");
            }
        }
    }
    Ok(problems)
}
