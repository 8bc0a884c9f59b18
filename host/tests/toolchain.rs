//! The host toolchain that built these tests is the exact release pinned in
//! `rust-toolchain.toml` (what CI must run; `./x` installs it).

#[test]
fn the_pinned_host_toolchain_built_this() {
    let file = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../rust-toolchain.toml")).unwrap();
    let pinned = file
        .lines()
        .find_map(|l| l.trim().strip_prefix("channel").and_then(|rest| rest.split('"').nth(1)))
        .expect("a channel in rust-toolchain.toml");
    assert!(
        pinned.split('.').count() == 3 && pinned.split('.').all(|p| p.parse::<u32>().is_ok()),
        "rust-toolchain.toml pins `{pinned}`, not an exact release like 1.99.1"
    );
    let ran = env!("MEMLAB_HOST_RUSTC");
    assert!(
        ran.starts_with(&format!("rustc {pinned} ")),
        "built by `{ran}`, but rust-toolchain.toml pins {pinned}: run the tests through ./x"
    );
}
