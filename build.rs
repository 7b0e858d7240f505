//! Build script: lays out the release binary's code so that what a run executes sits together.
//!
//! Why: a run touches about 1.6 MB of hakaru's 6 MB of code, spread over nearly all of it, and the kernel maps 64 kB
//! around every page touched (fault-around). Peak RSS of a `kv` run was 9 MB, 4.7 MB of it code pages. Listing the
//! functions a run executes first (`assets/link-order.txt`, made by `scripts/link-order.sh`) brings the resident
//! code to 1.8 MB and peak RSS to about 6.2 MB, at the same speed (alternating pairs: wall ratio 1.00).
//!
//! The list is handed to the linker as `--symbol-ordering-file`, which only LLD understands. LLD is Rust's default
//! linker on x86_64-unknown-linux-gnu since 1.90; anywhere else (another target, an older compiler, a linker chosen
//! by hand) the list is left out and the binary is the same except for the order of its functions. Names the
//! binary does not have (the list is stale after a compiler or dependency update) are ignored: the order is then
//! only less good, and `scripts/link-order.sh` makes a fresh one. `HAKARU_LINK_ORDER=0` leaves it out.

use std::env;
use std::process::Command;

const ORDER_FILE: &str = "assets/link-order.txt";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={ORDER_FILE}");
    for var in ["HAKARU_LINK_ORDER", "RUSTC_LINKER", "CARGO_ENCODED_RUSTFLAGS"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let file = std::path::Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join(ORDER_FILE);
    if linker_is_default_lld() && env::var("HAKARU_LINK_ORDER").as_deref() != Ok("0") && file.is_file() {
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}", file.display());
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// True when the binary will be linked by the LLD that rustc brings: a release build for x86_64-unknown-linux-gnu
/// by rustc 1.90 or later, with no linker or linker flags chosen by hand.
fn linker_is_default_lld() -> bool {
    let var = |name: &str| env::var(name).unwrap_or_default();
    if var("TARGET") != "x86_64-unknown-linux-gnu" || var("PROFILE") != "release" {
        return false;
    }
    // Cargo sets RUSTC_LINKER when a linker is configured for the target.
    if !var("RUSTC_LINKER").is_empty() {
        return false;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if ["linker", "fuse-ld", "link-self-contained"].iter().any(|f| flags.contains(f)) {
        return false;
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("-V").output() else { return false };
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let version = String::from_utf8_lossy(&out.stdout);
    let mut parts = version.split_whitespace().nth(1).unwrap_or("").split('.');
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor) >= (1, 90)
}
