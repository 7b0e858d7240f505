#!/usr/bin/env python3
"""The wide benchmark (run by hand by bench/wide.sh, never by a test): the server gets its cores, every generator
the same others, and each runs alone on them, rounds alternating the tools. Where the generator cores are the limit
(their busy figure near 100 %, the server's well below), what is measured is the generator's own efficiency:
requests/s, requests per CPU-second and peak RSS. A run whose server cores were near 100 % measured the server.

Usage: wide.py OUT [--server-cores 0-11] [--gen-cores 12-15] [--seconds 6] [--rounds 2] [--only case,case]
               [--rates 25000,100000,200000] [--bin DIR]
Cases: h1-keepalive, h1-close, h2, tls-keepalive, redis-get, and rate (the open loop at each of --rates: CPU
microseconds per request, hakaru with the default threads and with -t equal to the generator cores, beside oha).
The tools come from PATH (or --bin DIR first); a missing peer's rows are left out and said so. Writes
OUT/results.json and prints a line per run, then a table of medians and ratios (hakaru / peer).
"""
import argparse, json, os, re, shutil, signal, socket, statistics, subprocess, sys, tempfile, threading, time

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("out")
ap.add_argument("--server-cores", default="0")
ap.add_argument("--gen-cores", default="1")
ap.add_argument("--seconds", type=int, default=6)
ap.add_argument("--rounds", type=int, default=2)
ap.add_argument("--only", default="")
ap.add_argument("--rates", default="25000,100000,200000")
ap.add_argument("--bin", default="")
A = ap.parse_args()


def cpus(spec):
    """'0-3,8' -> {0, 1, 2, 3, 8}"""
    out = set()
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


SRV, GEN = cpus(A.server_cores), cpus(A.gen_cores)
if SRV & GEN:
    sys.exit(f"wide.py: --server-cores {A.server_cores} and --gen-cores {A.gen_cores} overlap: give each its own cores")
missing = (SRV | GEN) - os.sched_getaffinity(0)
if missing:
    sys.exit(f"wide.py: cores {sorted(missing)} are not on this machine (or not ours): see nproc")
GT = len(GEN)
SECS = A.seconds
OUT = os.path.abspath(A.out)
os.makedirs(OUT, exist_ok=True)
T = tempfile.mkdtemp(prefix="hakaru-wide-")
env = dict(os.environ)
if A.bin:
    env["PATH"] = os.path.abspath(A.bin) + os.pathsep + env["PATH"]


def tool(name):
    return shutil.which(name, path=env["PATH"]) or (f"/usr/sbin/{name}" if os.path.exists(f"/usr/sbin/{name}") else None)


def pin(cores):
    return lambda: os.sched_setaffinity(0, cores)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, secs=20):
    end = time.time() + secs
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def cpu_times():
    t = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                f_ = line.split()
                vals = list(map(int, f_[1:]))
                t[int(f_[0][3:])] = (sum(vals) - vals[3] - vals[4], sum(vals))
    return t


def busy(before, after, cores):
    b = sum(after[c][0] - before[c][0] for c in cores if c in after)
    a = sum(after[c][1] - before[c][1] for c in cores if c in after)
    return 100.0 * b / a if a else 0.0


def timed(cmd, timeout):
    """cmd on the generator cores: (output, user+system CPU seconds, peak RSS MiB, exit code)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, preexec_fn=pin(GEN))
    buf = []
    reader = threading.Thread(target=lambda: buf.append(p.stdout.read()))
    reader.start()
    killer = threading.Timer(timeout, p.kill)
    killer.start()
    hwm = [0]

    def watch():  # VmHWM after exec (ru_maxrss would count the forked interpreter's pages)
        while p.returncode is None:
            try:
                with open(f"/proc/{p.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            hwm[0] = max(hwm[0], int(line.split()[1]))
            except OSError:
                return
            time.sleep(0.1)

    threading.Thread(target=watch, daemon=True).start()
    _, status, ru = os.wait4(p.pid, 0)
    killer.cancel()
    reader.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    return buf[0].decode(errors="replace"), ru.ru_utime + ru.ru_stime, hwm[0] / 1024, p.returncode


def num(pattern, text):
    m = re.search(pattern, text, re.M)
    return float(m.group(1)) if m else 0.0


def hakaru_rps(path):
    try:
        with open(path) as f:
            return float(json.load(f)["steps"][0]["throughput"]["requests_per_s"])
    except (OSError, ValueError, KeyError, IndexError):
        return 0.0


# ---- servers, on the server cores, on free ports
NGINX, REDIS = tool("nginx"), tool("redis-server")
if not NGINX:
    sys.exit("wide.py: nginx not found (bench/wide.sh installs it)")
P1, P2, PS, PR = free_port(), free_port(), free_port(), free_port()
subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{T}/k.pem", "-out",
                f"{T}/c.pem", "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True)
with open(f"{T}/nginx.conf", "w") as f:
    f.write(f"""worker_processes {len(SRV)}; daemon on; pid {T}/nginx.pid; error_log {T}/nginx.err;
worker_rlimit_nofile 65536;
events {{ worker_connections 16384; }}
http {{ access_log off; client_body_temp_path {T}/b; proxy_temp_path {T}/p; fastcgi_temp_path {T}/f;
  uwsgi_temp_path {T}/u; scgi_temp_path {T}/s; keepalive_requests 100000000;
  server {{ listen 127.0.0.1:{P1} reuseport backlog=4096; location / {{ return 200 "hello\\n"; }} }}
  server {{ listen 127.0.0.1:{P2} http2 reuseport backlog=4096; http2_max_concurrent_streams 256;
    location / {{ return 200 "hello\\n"; }} }}
  server {{ listen 127.0.0.1:{PS} ssl reuseport backlog=4096; ssl_certificate {T}/c.pem;
    ssl_certificate_key {T}/k.pem; location / {{ return 200 "hello\\n"; }} }}
}}
""")
r = subprocess.run([NGINX, "-e", f"{T}/nginx.err", "-c", f"{T}/nginx.conf"], env=env, capture_output=True,
                   text=True, preexec_fn=pin(SRV))
if r.returncode != 0:
    sys.exit(f"wide.py: nginx did not start: {r.stderr.strip()[:300]}")
redis = None
if REDIS:
    redis = subprocess.Popen([REDIS, "--port", str(PR), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                              "--io-threads", str(max(1, min(4, len(SRV)))), "--protected-mode", "no"], env=env,
                             stdout=open(f"{T}/redis.log", "w"), stderr=subprocess.STDOUT, preexec_fn=pin(SRV))


def stop_servers():
    if redis:
        redis.terminate()
    try:
        with open(f"{T}/nginx.pid") as f:
            os.kill(int(f.read()), signal.SIGTERM)
    except (OSError, ValueError):
        pass


if not (wait_port(P1) and wait_port(P2) and wait_port(PS) and (not redis or wait_port(PR))):
    stop_servers()
    sys.exit("wide.py: the servers did not listen within 20 s")
try:
    import resource
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
except (ImportError, ValueError, OSError):
    pass

HK = tool("hakaru")
if not HK:
    stop_servers()
    sys.exit("wide.py: hakaru not found on PATH or in --bin")
U, U2, US = f"http://127.0.0.1:{P1}/", f"http://127.0.0.1:{P2}/", f"https://127.0.0.1:{PS}/"
D = str(SECS)
C = 32 * GT  # HTTP/1.1 closed-loop connections: 32 a generator core
# redis-benchmark runs a request count, not a time: about SECS seconds of a fast peer on these cores.
RB_N = int(os.environ.get("RB_N", str(40000 * SECS * GT)))


def hk(args, name, secs=SECS):
    path = f"{T}/{name}.json"
    out, cpu, rss, rc = timed([HK] + args + ["-q", "--no-history", "--no-monitor", "--json", path], secs * 3 + 30)
    return hakaru_rps(path), cpu, rss, out


def peer(cmd, pattern, secs=SECS):
    out, cpu, rss, rc = timed(cmd, secs + 60)
    return num(pattern, out), cpu, rss, out


WRK, OHA, H2LOAD, RB = (r"Requests/sec:\s+([\d.]+)", r"Requests/sec:\s+([\d.]+)",
                        r"finished in [\d.]+\w+, ([\d.]+) req/s", r'"GET","([\d.]+)"')
CASES = {
    "h1-keepalive": {
        "hakaru": lambda: hk(["run", "-t", str(GT), "-c", str(C), "-d", D + "s", U], "h1"),
        "wrk": lambda: peer(["wrk", "-t", str(GT), "-c", str(C), "-d", D + "s", U], WRK),
        "oha": lambda: peer(["oha", "--no-tui", "-c", str(C), "-z", D + "s", U], OHA),
        "h2load": lambda: peer(["h2load", "--h1", "-t", str(GT), "-c", str(C), "-D", D, U], H2LOAD),
    },
    "h1-close": {
        "hakaru": lambda: hk(["run", "--no-keepalive", "-t", str(GT), "-c", str(C), "-d", D + "s", U], "h1c"),
        "wrk": lambda: peer(["wrk", "-H", "Connection: close", "-t", str(GT), "-c", str(C), "-d", D + "s", U], WRK),
        "oha": lambda: peer(["oha", "--no-tui", "--disable-keepalive", "-c", str(C), "-z", D + "s", U], OHA),
    },
    "h2": {
        "hakaru": lambda: hk(["run", "--http2", "-t", str(GT), "-c", "16", "--streams", "32", "-d", D + "s", U2],
                             "h2"),
        "h2load": lambda: peer(["h2load", "-t", str(GT), "-c", "16", "-m", "32", "-D", D, U2], H2LOAD),
        "oha": lambda: peer(["oha", "--no-tui", "--http2", "-c", "16", "-p", "32", "-z", D + "s", U2], OHA),
    },
    "tls-keepalive": {
        "hakaru": lambda: hk(["run", "-k", "-t", str(GT), "-c", str(C), "-d", D + "s", US], "tls"),
        "wrk": lambda: peer(["wrk", "-t", str(GT), "-c", str(C), "-d", D + "s", US], WRK),
        "oha": lambda: peer(["oha", "--no-tui", "--insecure", "-c", str(C), "-z", D + "s", US], OHA),
    },
    "redis-get": {
        "hakaru": lambda: hk(["kv", "-t", str(GT), "-c", "128", "-d", D + "s", "--mix", "get:1", "--keys", "1000",
                              f"redis://127.0.0.1:{PR}"], "kv"),
        "redis-benchmark": lambda: peer(["redis-benchmark", "-p", str(PR), "--threads", str(GT), "-c", "128", "-n",
                                         str(RB_N), "-r", "1000", "-t", "get", "--csv"], RB, 90),
    },
}
if not redis:
    del CASES["redis-get"]
for rate in (int(x) for x in A.rates.split(",") if x):
    CASES[f"rate-{rate // 1000}k"] = {  # hakaru's default threads, then as many as the generator cores
        "hakaru": lambda rate=rate: hk(["run", "--rate", str(rate), "-c", "256", "-d", D + "s", U], "rate"),
        f"hakaru-t{GT}": lambda rate=rate: hk(["run", "--rate", str(rate), "-t", str(GT), "-c", "256", "-d", D + "s", U],
                                              "rate"),
        "oha": lambda rate=rate: peer(["oha", "--no-tui", "-q", str(rate), "-c", "256", "-z", D + "s", U], OHA),
    }
wanted = set(A.only.split(",")) - {""}
unknown = wanted - set(CASES) - {"rate"}
if unknown:
    stop_servers()
    sys.exit(f"wide.py: --only {','.join(sorted(unknown))}: no such case; the cases are {', '.join(CASES)}")
absent = sorted({t for tools in CASES.values() for t in tools if not t.startswith("hakaru") and not tool(t)})
if absent:
    print(f"not installed, left out: {', '.join(absent)}", flush=True)

results = []
try:
    for rnd in range(A.rounds):
        for case, tools in CASES.items():
            if wanted and case not in wanted and not ("rate" in wanted and case.startswith("rate-")):
                continue
            names = [t for t in tools if t.startswith("hakaru") or tool(t)]
            if rnd % 2:
                names.reverse()
            for name in names:
                time.sleep(1)
                c0 = cpu_times()
                try:
                    rps, cpu, rss, out = tools[name]()
                except OSError as e:
                    rps, cpu, rss, out = 0.0, 0.0, 0.0, f"error: {e}"
                c1 = cpu_times()
                done = RB_N if name == "redis-benchmark" else rps * SECS
                rec = {"round": rnd, "case": case, "tool": name, "rps": rps, "cpu_s": cpu,
                       "req_per_cpu_s": done / cpu if cpu else 0.0, "cpu_us_per_req": cpu * 1e6 / done if done else 0.0,
                       "rss_mib": rss, "server_cores_busy": busy(c0, c1, SRV), "gen_cores_busy": busy(c0, c1, GEN)}
                results.append(rec)
                print(f"r{rnd} {case:14s} {name:16s} {rps:10.0f} req/s  cpu {cpu:6.2f} s  {rec['cpu_us_per_req']:6.2f} "
                      f"us/req  rss {rss:6.1f} MiB  busy: server {rec['server_cores_busy']:3.0f}% "
                      f"generator {rec['gen_cores_busy']:3.0f}%", flush=True)
                if rps == 0:
                    print("   output:", out[-600:].replace("\n", " | "), flush=True)
finally:
    stop_servers()
    with open(f"{OUT}/results.json", "w") as f:
        json.dump(results, f, indent=1)

print(f"\nmedians over {A.rounds} rounds; server cores {A.server_cores}, generator cores {A.gen_cores}, {SECS} s runs;"
      " ratio = hakaru / peer")
print(f"{'case':14s} {'tool':16s} {'req/s':>10s} {'ratio':>6s} {'req/cpu-s':>10s} {'ratio':>6s} {'us/req':>7s}"
      f" {'rss MiB':>8s} {'srv busy':>8s} {'gen busy':>8s}")
for case in CASES:
    rows = [r for r in results if r["case"] == case]
    if not rows:
        continue
    med = {}
    for name in dict.fromkeys(r["tool"] for r in rows):
        xs = [r for r in rows if r["tool"] == name]
        med[name] = {k: statistics.median(x[k] for x in xs) for k in
                     ("rps", "req_per_cpu_s", "cpu_us_per_req", "rss_mib", "server_cores_busy", "gen_cores_busy")}
    h = med.get("hakaru")
    for name, m in med.items():
        r1 = f"{h['rps'] / m['rps']:6.2f}" if h and m["rps"] and not name.startswith("hakaru") else "      "
        r2 = (f"{h['req_per_cpu_s'] / m['req_per_cpu_s']:6.2f}" if h and m["req_per_cpu_s"]
              and not name.startswith("hakaru") else "      ")
        print(f"{case:14s} {name:16s} {m['rps']:10.0f} {r1} {m['req_per_cpu_s']:10.0f} {r2} {m['cpu_us_per_req']:7.2f}"
              f" {m['rss_mib']:8.1f} {m['server_cores_busy']:7.0f}% {m['gen_cores_busy']:7.0f}%")
shutil.rmtree(T, ignore_errors=True)
