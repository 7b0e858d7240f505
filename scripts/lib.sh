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
