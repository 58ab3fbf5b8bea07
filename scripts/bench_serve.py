#!/usr/bin/env python3
"""Benchmark `ctx serve` (seed 004): unlock time, and GET /context/context for a
scoped token with N fields unlocked — p50/p99 latency and requests per second on
one client and on 16 concurrent clients. Standard library only.

    scripts/bench_serve.py [--ctx target/release/ctx] [--fields 1000] [--requests 400]
"""

import argparse
import http.client
import json
import os
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", default="target/release/ctx")
    ap.add_argument("--fields", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=400)
    a = ap.parse_args()
    ctx = os.path.abspath(a.ctx)
    tmp = tempfile.mkdtemp(prefix="ctx-bench-serve-")
    env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(tmp, "cfg"), HOME=tmp)
    pw = "a long profile password"
    with open(os.path.join(tmp, "pw.txt"), "w") as f:
        f.write(pw + "\n")
    subprocess.run([ctx, "init", "--template", "personal", "--password-file", "pw.txt", "v"],
                   cwd=tmp, env=env, check=True, capture_output=True)
    keydir = os.path.join(tmp, "cfg", "ctx", "personal")
    key = next(l.split(": ", 1)[1].strip()
               for n in os.listdir(keydir) if n.endswith(".key")
               for l in open(os.path.join(keydir, n)) if l.startswith("secret_key: "))
    srv = subprocess.Popen([ctx, "-C", "v", "serve", "--listen", "127.0.0.1:0", "--no-prompt"],
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
        print("| clients | requests | p50 ms | p99 ms | req/s |")
        print("|---|---|---|---|---|")
        for clients in (1, 16):
            lat, rps = run_clients(host, port, token, clients, a.requests)
            print(f"| {clients} | {len(lat)} | {statistics.median(lat) * 1000:.2f} | {pct(lat, 99) * 1000:.2f} | {rps:.0f} |")
    finally:
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    sys.exit(main())
