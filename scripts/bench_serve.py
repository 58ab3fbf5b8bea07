#!/usr/bin/env python3
"""Benchmark `ctx serve` (seed 004): unlock time, and GET /context/context for a
scoped token with N fields unlocked — p50/p99 latency and requests per second on
one client and on 16 concurrent clients, beside a baseline measured the same way
in the same run: a trivial server of the standard library answering the same
bytes (what this load generator and loopback get at best). With --cl N, also the Context Layer
binding (seed 000 §10) on a `ctx init` repository: N rounds of
POST /context/v1/requests (validate, evaluate, issue a signed bundle, receipts)
then GET /context/v1/bundles/{id} (verify, record bundle.consume), one client.
Prints the process's CPU time and the load average next to the figures: the
machine may be shared. Standard library only.

    scripts/bench_serve.py [--ctx target/release/ctx] [--fields 1000] [--requests 400] [--cl 50]
"""

import argparse
import http.client
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def request(conn, method, path, token=None, body=None):
    headers = {}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=headers)
    r = conn.getresponse()
    text = r.read()
    return r.status, (json.loads(text) if text else None)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def run_clients(host, port, token, clients, total):
    lat = []
    lock = threading.Lock()
    per = total // clients

    def worker():
        c = http.client.HTTPConnection(host, port)
        mine = []
        for _ in range(per):
            t = time.perf_counter()
            s, _ = request(c, "GET", "/context/context", token)
            mine.append(time.perf_counter() - t)
            assert s == 200, s
        with lock:
            lat.extend(mine)

    ts = [threading.Thread(target=worker) for _ in range(clients)]
    start = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - start
    return lat, len(lat) / wall


def baseline_server(body):
    """A keep-alive HTTP/1.1 server answering `body` to every GET, on a thread."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


CL_MEDIA = "application/vnd.context-layer+json"

CL_POLICY = """
extensions:
  ctx.exchange:
    issuer_key: bench-bundle
    keys:
      bench-bundle: { ed25519: "%s", purpose: bundle }
      bench-anchor: { ed25519: "%s", purpose: anchor }
    receipts:
      anchor_key: bench-anchor
    predicates:
      refund-rules: { ids: ["policies.refunds", "procedures.*"] }
    requesters:
      support-agent:
        purpose_codes: [draft.response]
        tasks: [draft_only]
        selectors: [refund-rules]
        actions: [model.generate_text]
        max_retention_seconds: 900
"""


def cpu_seconds(pid):
    """User + system CPU seconds of a process (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


def conditions(label, pid):
    cpu = cpu_seconds(pid)
    load = os.getloadavg()
    print(f"{label}: server CPU {cpu:.2f} s so far; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} CPUs")


def bench_cl(ctx, rounds):
    tmp = tempfile.mkdtemp(prefix="ctx-bench-cl-")
    env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(tmp, "cfg"), HOME=tmp)
    repo = os.path.join(tmp, "r")
    os.makedirs(repo)
    run = lambda *a: subprocess.run([ctx, *a], cwd=repo, env=env, check=True, capture_output=True, text=True)
    run("init")
    keys = [run("keys", "generate", "--id", k).stdout.splitlines()[0].strip() for k in ("bench-bundle", "bench-anchor")]
    with open(os.path.join(repo, "opencontext.yaml")) as f:
        text = f.read()
    assert "\nextensions:" not in text, "the init manifest grew an extensions block; merge by hand"
    with open(os.path.join(repo, "opencontext.yaml"), "a") as f:
        f.write(CL_POLICY % tuple(keys))
    req_path = os.path.join(tmp, "req.json")
    run("request", "new", "--as", "support-agent", "--purpose-code", "draft.response", "--task", "draft_only",
        "--select", "refund-rules", "--expires-in", "1h", "-o", req_path)
    with open(req_path, "rb") as f:
        req = f.read()
    # The rounds are the load: no per-caller rate limit in the way.
    srv = subprocess.Popen([ctx, "serve", "--listen", "127.0.0.1:0", "--no-prompt", "--cl-rate-limit", "1000000"],
                           cwd=repo, env=env, stderr=subprocess.PIPE, text=True)
    try:
        first = srv.stderr.readline().strip()
        host, port = first.split("http://", 1)[1].rsplit(":", 1)
        creds = srv.stderr.readline().strip().rsplit(" in ", 1)[1]
        with open(creds) as f:
            token = json.load(f)["requesters"]["urn:ctx:agent:support-agent"]
        c = http.client.HTTPConnection(host, int(port))
        hdr = {"Authorization": "Bearer " + token, "Content-Type": CL_MEDIA}
        lat_req, lat_bundle = [], []
        start = time.perf_counter()
        for _ in range(rounds):
            t = time.perf_counter()
            c.request("POST", "/context/v1/requests", body=req, headers=hdr)
            r = c.getresponse()
            b = json.loads(r.read())
            assert r.status == 201 and b["bundle_ref"], (r.status, b)
            t2 = time.perf_counter()
            c.request("GET", "/context/v1/bundles/" + b["bundle_ref"], headers={"Authorization": hdr["Authorization"]})
            r = c.getresponse()
            r.read()
            assert r.status == 200, r.status
            lat_req.append(t2 - t)
            lat_bundle.append(time.perf_counter() - t2)
        wall = time.perf_counter() - start
        print(f"Context Layer over HTTP, {rounds} rounds, 1 client (receipt log grows by 4 entries a round):")
        print("| step | p50 ms | p99 ms |")
        print("|---|---|---|")
        print(f"| POST /context/v1/requests (validate, decide, issue) | {statistics.median(lat_req) * 1000:.1f} | {pct(lat_req, 99) * 1000:.1f} |")
        print(f"| GET /context/v1/bundles/{{id}} (verify, consume) | {statistics.median(lat_bundle) * 1000:.1f} | {pct(lat_bundle, 99) * 1000:.1f} |")
        print(f"rounds/s: {rounds / wall:.1f}")
        conditions("after the Context Layer rounds", srv.pid)
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", default="target/release/ctx")
    ap.add_argument("--fields", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--cl", type=int, default=0, help="Context Layer rounds (0: skip)")
    a = ap.parse_args()
    ctx = os.path.abspath(a.ctx)
    tmp = tempfile.mkdtemp(prefix="ctx-bench-serve-")
    env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(tmp, "cfg"), HOME=tmp)
    pw = "a long profile password"
    # ctx refuses a password file others may read.
    with open(os.open(os.path.join(tmp, "pw.txt"), os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(pw + "\n")
    subprocess.run([ctx, "init", "--template", "personal", "--password-file", "pw.txt", "v"],
                   cwd=tmp, env=env, check=True, capture_output=True)
    keydir = os.path.join(tmp, "cfg", "ctx", "personal")
    key = next(l.split(": ", 1)[1].strip()
               for n in os.listdir(keydir) if n.endswith(".key")
               for l in open(os.path.join(keydir, n)) if l.startswith("secret_key: "))
    # The setup writes every field with the session token: lift its rate limit.
    srv = subprocess.Popen([ctx, "-C", "v", "serve", "--listen", "127.0.0.1:0", "--no-prompt",
                            "--session-rate-limit", "1000000/1000000"],
                           cwd=tmp, env=env, stderr=subprocess.PIPE, text=True)
    try:
        first = srv.stderr.readline().strip()
        host, port = first.split("http://", 1)[1].rsplit(":", 1)
        port = int(port)
        c = http.client.HTTPConnection(host, port)
        t = time.perf_counter()
        s, b = request(c, "POST", "/context/unlock", body={"password": pw, "secret_key": key})
        unlock = time.perf_counter() - t
        assert s == 200, b
        user = b["token"]
        cats = ["identity", "addresses", "employment", "education", "preferences"]
        for i in range(a.fields):
            s, b = request(c, "PUT", f"/context/fields/{cats[i % 5]}.f{i:04d}", user, {"value": f"value {i}"})
            assert s in (200, 201), b
        request(c, "POST", "/context/consumers/register", user, {"name": "bench", "secret": "a long consumer secret"})
        s, b = request(c, "POST", "/context/tokens/service", None,
                       {"consumer": "bench", "secret": "a long consumer secret",
                        "scope": "identity.*, addresses.*, employment.*", "ttl": "1h",
                        "rate_limit": {"reads": 1000000, "writes": 10}})
        assert s == 201, b
        token = b["token"]
        s, b = request(c, "GET", "/context/context", token)
        served = sum(len(v) for v in b["categories"].values())
        c.request("GET", "/context/context", headers={"Authorization": "Bearer " + token})
        body = c.getresponse().read()
        # Relock to measure a cold unlock with the fields on disk.
        request(c, "POST", "/context/lock", user)
        t = time.perf_counter()
        s, b = request(c, "POST", "/context/unlock", body={"password": pw, "secret_key": key})
        unlock_full = time.perf_counter() - t
        user = b["token"]
        s, b = request(c, "POST", "/context/tokens/service", None,
                       {"consumer": "bench", "secret": "a long consumer secret",
                        "scope": "identity.*, addresses.*, employment.*", "ttl": "1h",
                        "rate_limit": {"reads": 1000000, "writes": 10}})
        token = b["token"]
        print(f"fields: {a.fields} unlocked, {served} in the token's scope")
        print(f"unlock (empty vault): {unlock * 1000:.0f} ms; unlock ({a.fields} fields): {unlock_full * 1000:.0f} ms")
        conditions("before the reads", srv.pid)
        print("| clients | requests | p50 ms | p99 ms | req/s | server CPU s |")
        print("|---|---|---|---|---|---|")
        for clients in (1, 16):
            before = cpu_seconds(srv.pid)
            lat, rps = run_clients(host, port, token, clients, a.requests)
            used = cpu_seconds(srv.pid) - before
            print(f"| {clients} | {len(lat)} | {statistics.median(lat) * 1000:.2f} | {pct(lat, 99) * 1000:.2f} | {rps:.0f} | {used:.2f} |")
        base = baseline_server(body)
        try:
            for clients in (1, 16):
                lat, rps = run_clients("127.0.0.1", base.server_address[1], token, clients, a.requests)
                print(f"| baseline: http.server, the same {len(body)} bytes, {clients} client(s) | {len(lat)} | "
                      f"{statistics.median(lat) * 1000:.2f} | {pct(lat, 99) * 1000:.2f} | {rps:.0f} | |")
        finally:
            base.shutdown()
        conditions("after the reads", srv.pid)
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    if a.cl:
        bench_cl(ctx, a.cl)


if __name__ == "__main__":
    sys.exit(main())
