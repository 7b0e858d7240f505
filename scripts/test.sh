#!/usr/bin/env bash
# Runs every test of hakaru. Installs what the tests need when it is missing (Debian packages: nginx-light for
# the real-server tests, openssl for their self-signed certificate, redis-server and memcached for `kv`, chromium
# for the report's browser test), then runs cargo test.
# Extra arguments go to cargo test (e.g. scripts/test.sh --test run_nginx).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v memcached >/dev/null 2>&1 || need+=(memcached)
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "scripts/test.sh: installing ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

cargo test --all-targets "$@"
