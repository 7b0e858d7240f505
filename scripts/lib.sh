# Shell helpers the test, benchmark and build scripts share; sourced, not run.

# apt_install WHO PACKAGE...: installs Debian packages with apt-get (through sudo when not root), saying which and
# for whom on stderr. Does nothing without packages, so callers can pass the list of what they found missing.
apt_install() {
  local who=$1; shift
  [ $# -gt 0 ] || return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "$who: installing $*" >&2
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# install_missing WHO COMMAND:PACKAGE...: installs (apt_install) the package of each command not on the PATH (a
# command may be a path: /usr/bin/time:time).
install_missing() {
  local who=$1 need=() b
  shift
  for b in "$@"; do
    command -v "${b%%:*}" >/dev/null || need+=("${b#*:}")
  done
  apt_install "$who" ${need[@]+"${need[@]}"}
}

# cargo_target_dir: the directory cargo builds into for this workspace (CARGO_TARGET_DIR, build.target-dir in a
# .cargo/config, or ./target), as `cargo metadata` reports it; ./target if cargo cannot say.
cargo_target_dir() {
  local dir
  dir=$(cargo metadata --format-version 1 --no-deps 2>/dev/null | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
  echo "${dir:-target}"
}

# hakaru_release: the hakaru binary a benchmark measures: $HAKARU when given (a build made elsewhere), else a
# release build of this checkout, built now.
hakaru_release() {
  if [ -n "${HAKARU:-}" ]; then
    echo "$HAKARU"
  else
    cargo build --release -q
    echo "$(cargo_target_dir)/release/hakaru"
  fi
}

# static_binary WHO BIN: whether BIN exists and is statically linked; says which it is not on stderr.
static_binary() {
  local who=$1 bin=$2
  if [ ! -f "$bin" ]; then
    echo "$who: $bin not found (the build put no binary there; is CARGO_TARGET_DIR or build.target-dir set to another place?)" >&2
    return 1
  fi
  if ! ldd "$bin" 2>&1 | grep -qE 'statically linked|not a dynamic executable'; then
    echo "$who: $bin is not static (ldd lists libraries); it would not run in an empty image" >&2
    return 1
  fi
}
