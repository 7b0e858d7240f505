#!/usr/bin/env bash
# Builds hakaru's image with no network beyond the package registries: a fully static binary in a FROM scratch
# image (Dockerfile.scratch), so `docker build` pulls no base image. The binary links glibc's static libraries
# from Debian's libc6-dev (-C target-feature=+crt-static): Rust's musl target would need `rustup target add`
# (the Rust distribution server, not a package registry), and Debian ships no musl standard library for this
# Rust. Usage: scripts/image.sh [TAG] (default hakaru:VERSION, also tagged hakaru:latest); DOCKER_HOST as docker
# reads it. Prints the tag and the image's size. For a registry build, see the Dockerfile (multi-stage, musl).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

# libc.a and friends (crt-static links them); binutils for strip.
need=()
[ -f "/usr/lib/$(uname -m)-linux-gnu/libc.a" ] || need+=(libc6-dev)
command -v strip >/dev/null 2>&1 || need+=(binutils)
apt_install scripts/image.sh ${need[@]+"${need[@]}"}
command -v docker >/dev/null 2>&1 || { echo "scripts/image.sh: no docker command; install docker.io (apt-get install docker.io)" >&2; exit 2; }

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
tag=${1:-hakaru:$version}
target=$(rustc -vV | sed -n 's/^host: //p')
# An explicit --target: RUSTFLAGS then apply to hakaru and its libraries only, not to build scripts and proc
# macros (which must stay dynamic to be loaded by rustc). A target directory of its own, so the ordinary build's
# artifacts are kept.
# HAKARU_IMAGE_PROFILE: a Cargo profile other than release (tests/swarm.rs uses image-test, a quicker build).
profile=${HAKARU_IMAGE_PROFILE:-release}
RUSTFLAGS="-C target-feature=+crt-static" cargo build --profile "$profile" --locked --target "$target"
# Where cargo put it: CARGO_TARGET_DIR, build.target-dir or ./target, as cargo itself decides.
bin="$(cargo_target_dir)/$target/$profile/hakaru"
static_binary scripts/image.sh "$bin" || exit 1

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
# Debug line tables stay in target/ for backtraces there; the image gets the symbols only.
strip --strip-debug -o "$context/hakaru" "$bin"
cp Dockerfile.scratch "$context/Dockerfile"
docker build --quiet -t "$tag" -t "${tag%%:*}:latest" "$context" >/dev/null
size=$(docker image inspect --format '{{.Size}}' "$tag")
echo "scripts/image.sh: built $tag ($(awk "BEGIN { printf \"%.1f\", $size / 1e6 }") MB, $size bytes) from $bin"
