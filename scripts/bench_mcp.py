#!/usr/bin/env python3
"""Benchmark `ctx mcp` over stdio (newline-delimited JSON-RPC, as an MCP host
speaks it): the resident memory of the server after the handshake (the
baseline), after a burst of N tool calls (search, context_list, context_get
of the ids the list returned, in turn), and again SETTLE seconds later, with
the p50/p99 latency of the calls. Linux (/proc) only; standard library only.

    scripts/bench_mcp.py --repo DIR [--ctx target/release/ctx] [--agent support-agent]
                         [--calls 800] [--settle 30]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


class Client:
    def __init__(self, argv, env):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
        self.next_id = 0

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def call(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError(f"ctx mcp closed its output (exit {self.p.wait()})")
            msg = json.loads(line)
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def tool(self, name, args):
        return self.call("tools/call", {"name": name, "arguments": args})

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def ids_in(result):
    """The object ids a context_list answer names (structured content, else none)."""
    sc = result.get("structuredContent") or {}
    for key in ("objects", "items", "context"):
        if isinstance(sc.get(key), list):
            return [o["id"] for o in sc[key] if isinstance(o, dict) and "id" in o]
    return []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", default="target/release/ctx")
    ap.add_argument("--repo", required=True)
    ap.add_argument("--agent", default="support-agent")
    ap.add_argument("--calls", type=int, default=800)
    ap.add_argument("--settle", type=float, default=30)
    ap.add_argument("--task", default="refund for a customer invoice")
    a = ap.parse_args()
    env = dict(os.environ)
    env.pop("CTX_NO_CACHE", None)
    c = Client([os.path.abspath(a.ctx), "-C", a.repo, "mcp", "--agent", a.agent], env)
    try:
        c.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "ctx-bench", "version": "1"}})
        c.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        c.call("tools/list", {})
        base = rss_mib(c.p.pid)
        ids = ids_in(c.tool("context_list", {})) or ["mission"]
        first = rss_mib(c.p.pid)
        lat, n = [], 0
        start = time.perf_counter()
        while n < a.calls:
            kind = n % 3
            t = time.perf_counter()
            if kind == 0:
                c.tool("search", {"query": a.task})
            elif kind == 1:
                c.tool("context_list", {})
            else:
                c.tool("context_get", {"id": ids[(n // 3) % len(ids)]})
            lat.append(time.perf_counter() - t)
            n += 1
        wall = time.perf_counter() - start
        burst = rss_mib(c.p.pid)
        time.sleep(a.settle)
        settled = rss_mib(c.p.pid)
    finally:
        c.close()
    load = os.getloadavg()
    print(f"`ctx mcp --agent {a.agent}` on {a.repo} ({len(ids)} objects listed), load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}:")
    print()
    print("| ctx mcp | RSS MiB |")
    print("|---|---:|")
    print(f"| baseline: after the handshake | {base:.1f} |")
    print(f"| after the first context_list (repository loaded) | {first:.1f} |")
    print(f"| after {a.calls} calls (search, context_list, context_get in turn) | {burst:.1f} |")
    print(f"| {a.settle:.0f} s later | {settled:.1f} |")
    print()
    print(f"calls: p50 {statistics.median(lat) * 1000:.2f} ms, p99 {pct(lat, 99) * 1000:.2f} ms, "
          f"{a.calls / wall:.0f} calls/s")


if __name__ == "__main__":
    sys.exit(main())
