#!/usr/bin/env bash
# Runs every test of hakaru. Installs what the tests need when it is missing (Debian packages: nginx-light for
# the real-server tests and libnginx-mod-http-echo for its streamed answers, nghttp2-server for the second HTTP/2
# server (nghttpd), openssl for their self-signed certificate, redis-server and memcached for `kv`, wrk for the
# script tests, tinyproxy for --proxy, caddy for HTTP/3, chromium for the report's browser test, tmux for the dashboard's, time for peak memory,
# prometheus for the remote-write push, iproute2 for the agents' network namespaces, python3-grpcio and
# python3-websockets for the gRPC and WebSocket servers, python3-aiohttp for a token stream; the PyPI packages kubernetes-validate for the manifests of
# `k8s job`, aioquic for the hostile HTTP/3 server, hdrhistogram for the HDR log and grpcio-reflection for the reflective gRPC server; docker.io for the
# Swarm test, as root only), then runs cargo test.
# Extra arguments go to cargo test (e.g. scripts/test.sh --test suite run_nginx::).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
# libnginx-mod-http-echo: tests/events.rs's streams from a server no one here wrote (echo, echo_flush, echo_sleep).
[ -f /usr/lib/nginx/modules/ngx_http_echo_module.so ] || need+=(libnginx-mod-http-echo)
command -v nghttpd >/dev/null 2>&1 || need+=(nghttp2-server)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v memcached >/dev/null 2>&1 || need+=(memcached)
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need+=(chromium)
# wrk: the script tests send wrk's scripts through wrk and hakaru against one nginx and compare what it logged.
command -v wrk >/dev/null 2>&1 || need+=(wrk)
# tinyproxy: the --proxy tests go through a real forward proxy (CONNECT and absolute-form requests, its log counting).
command -v tinyproxy >/dev/null 2>&1 || need+=(tinyproxy)
# caddy: tests/http3.rs's HTTP/3 server (QUIC on its HTTPS port, HTTP/2 on the same port), counted by its access log.
command -v caddy >/dev/null 2>&1 || need+=(caddy)
# tmux: the dashboard's tests read hakaru's screen in a terminal of a known size; prometheus: the remote-write test
# pushes to a real one (started on a loopback port by the test).
command -v tmux >/dev/null 2>&1 || need+=(tmux)
# time (GNU time): the bounded-memory tests read hakaru's own peak RSS through it (tests/common/peak.rs says why).
[ -x /usr/bin/time ] || need+=(time)
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
# ip (iproute2): the scale-out test creates network namespaces for its agents (when run as root).
# python3-grpcio: tests/grpc.rs's gRPC server (tests/grpc_server.py), a real gRPC implementation no one here wrote.
python3 -c 'import grpc' >/dev/null 2>&1 || need+=(python3-grpcio)
# python3-websockets: tests/websocket.rs's WebSocket server (tests/ws_server.py), an implementation no one here wrote.
/usr/bin/python3 -c 'import websockets' >/dev/null 2>&1 || need+=(python3-websockets)
# python3-aiohttp: tests/events.rs's and tests/llm.rs's token stream (tests/sse_server.py), ended as aiohttp ends every stream: [DONE],
# then the last chunk in a write of its own.
/usr/bin/python3 -c 'import aiohttp' >/dev/null 2>&1 || need+=(python3-aiohttp)
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || need+=(iproute2)
# docker.io: tests/swarm.rs starts a Docker daemon of its own (data under a temporary directory, its own socket)
# and a one-node Swarm on 127.0.0.1; that needs root, so elsewhere the test is skipped, and said so here.
if [ "$(id -u)" -eq 0 ]; then
  { command -v dockerd >/dev/null 2>&1 || [ -x /usr/sbin/dockerd ]; } && command -v docker >/dev/null 2>&1 ||
    need+=(docker.io)
else
  echo "scripts/test.sh: tests/swarm.rs's Docker Swarm test will be skipped: it needs root (dockerd)" >&2
fi
. scripts/lib.sh
apt_install scripts/test.sh ${need[@]+"${need[@]}"}

# kubernetes-validate (PyPI) checks the manifests of `hakaru k8s job` against the Kubernetes API schemas.
if ! python3 -c 'import kubernetes_validate' >/dev/null 2>&1; then
  echo "scripts/test.sh: installing kubernetes-validate" >&2
  # A Debian python3 refuses to install into the system (PEP 668) unless told; pyenv's and venvs do not ask.
  python3 -m pip install --quiet kubernetes-validate ||
    python3 -m pip install --quiet --break-system-packages kubernetes-validate
fi

# hdrhistogram (PyPI): an HdrHistogram implementation independent of hakaru's reads the --hdr-log file back.
if ! python3 -c 'import hdrh' >/dev/null 2>&1; then
  echo "scripts/test.sh: installing hdrhistogram" >&2
  python3 -m pip install --quiet hdrhistogram ||
    python3 -m pip install --quiet --break-system-packages hdrhistogram
fi

# aioquic (PyPI; Debian has none): tests/h3_server.py, the hostile HTTP/3 server of tests/http3.rs (stream resets,
# a malformed answer, a server without h3 in its ALPN), on a QUIC and HTTP/3 implementation no one here wrote.
if ! python3 -c 'import aioquic' >/dev/null 2>&1; then
  echo "scripts/test.sh: installing aioquic" >&2
  python3 -m pip install --quiet aioquic || python3 -m pip install --quiet --break-system-packages aioquic
fi

# grpcio-reflection (PyPI; Debian has none): tests/grpc_sources.rs's server answers reflection with it. Installed
# for the python3 that has grpcio (Debian's), at grpcio's own version (each release wants its grpcio), without
# dependencies so Debian's grpcio and protobuf stay.
for py in python3 /usr/bin/python3; do
  "$py" -c 'import grpc' >/dev/null 2>&1 || continue
  if ! "$py" -c 'import grpc_reflection' >/dev/null 2>&1; then
    version=$("$py" -c 'import grpc; print(grpc.__version__)')
    echo "scripts/test.sh: installing grpcio-reflection $version" >&2
    "$py" -m pip install --quiet --no-deps "grpcio-reflection==$version" ||
      "$py" -m pip install --quiet --no-deps --break-system-packages "grpcio-reflection==$version"
  fi
  break
done

# Each test that cannot run here (tests/common's `skip`) adds a line to this file; the suite's last line counts them.
export HAKARU_SKIPPED="$PWD/target/skipped-tests.txt"
mkdir -p target
: > "$HAKARU_SKIPPED"
# --no-fail-fast: a failing test file does not hide the results of the files after it.
status=0
cargo test --all-targets --no-fail-fast "$@" || status=$?
skipped=$(grep -c '^skipped: ' "$HAKARU_SKIPPED" || true)
unchecked=$(grep -c '^unchecked: ' "$HAKARU_SKIPPED" || true)
if [ -s "$HAKARU_SKIPPED" ]; then
  echo "scripts/test.sh: tests skipped, or with checks left out on a busy machine:" >&2
  sed 's/^/  /' "$HAKARU_SKIPPED" >&2
fi
echo "scripts/test.sh: $( [ "$status" -eq 0 ] && echo passed || echo FAILED ), $skipped test(s) skipped, $unchecked with checks left out under load"
exit "$status"
