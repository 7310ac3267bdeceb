#!/usr/bin/env python
"""Paired A/B of served searches: the same library served by two or more `jezero serve`
processes side by side, each started with its own environment, measured in alternation.

A benchmark script, not a test. On this shared 2-core machine the speed drifts from minute to
minute, so serving variants measured one after another (bench/serve.py run twice) differ by
more than most changes do. Here every variant is up at once and each trial measures every
variant back to back, the order rotating from trial to trial; the figures are medians over
trials. Loads (bench/serve.py's clients, queries and library):

  api_1     GET /api/v1/search, 1 client, every query once
  api_10    10 concurrent clients × 50 queries (client k starts k/10 of the way in)
  mcp_1     the MCP `search` tool, 1 session, every query once
  mcp_10    10 concurrent sessions × 50 queries
  null_1    GET /api/v1/search with only common words (no SQL runs), 1 client, 200 requests:
            the fixed cost of a request

Per load and variant: p50 / p95 latency, requests/s, and server CPU per request (user +
system time of the gunicorn master and workers, from /proc). Every answer must be a 200 with
the same result ids as in-process `search()`.

    .venv/bin/python bench/serve_ab.py --size 10000 --trials 5 \\
        --variant custom --variant django:JEZERO_BENCH_HANDLER=django
    .venv/bin/python bench/serve_ab.py --size 100000 --variant before:CODE=/path/to/a/worktree --variant after

A variant's `CODE=<folder>` serves that checkout's code (a `git worktree` at another commit)
from the same library, with this checkout's `jezero` command and packages.
"""

import argparse
import json
import os
import random
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

import harness
import search as G
import serve as S  # bench/serve.py: its server, clients and phases

LOADS = ("api_1", "api_10", "mcp_1", "mcp_10", "null_1")
log = harness.logger("[serve-ab]")


def parse_variant(text):
    """`name` or `name:KEY=VALUE,KEY=VALUE` → (name, {KEY: VALUE})."""
    name, _, rest = text.partition(":")
    env = dict(pair.split("=", 1) for pair in rest.split(",") if pair)
    return name, env


def start(data, workers, env):
    env = dict(env)
    code = env.pop("CODE", None)   # another checkout's code (its folder), served from this library
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        server = S.Server(data, workers, code=code)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    server.wait_healthy()
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--workers", type=int, default=0, help="gunicorn workers (default: jezero serve's own)")
    parser.add_argument("--variant", action="append", required=True, help="name[:KEY=VALUE,...] (two or more)")
    parser.add_argument("--output", default=None, help="JSON of every trial (default: bench/work/serve-ab-<size>.json)")
    args = parser.parse_args()
    variants = [parse_variant(v) for v in args.variant]
    data = G.library_folder(args.size)
    G.open_library(args.size, JEZERO_API_RATE_PER_MINUTE="0")
    from library import search as search_mod
    from library.access import clients

    sentences, identifiers = G.harvest_sentences()
    text = G.Text(sentences, identifiers, random.Random(G.SEED))
    queries = [q for q in G.make_queries(text, sentences) if search_mod.build_match_query(q)]
    n = len(queries)
    name = f"bench-ab-{datetime.now(UTC):%Y%m%d%H%M%S}-{os.getpid()}"
    token = json.loads(harness.jezero("client", "add", name, "--sources", "*", "--scopes", "read", "--json"))["token"]
    allowed = clients.authenticate(token).sources
    expected = {i: [h.id for h in search_mod.search(queries[i], allowed_sources=allowed).hits] for i in range(n)}

    servers = {}
    try:
        for vname, env in variants:
            servers[vname] = start(data, args.workers, env)
            log(f"{vname} {env} up at {servers[vname].base}")
        for server in servers.values():   # warm-up: every query over the API, a few over MCP
            S.run_phase(server, S.api_worker, token, queries, S.rotations(list(range(n)), 2, n // 2), [])
            S.run_phase(server, S.mcp_worker, token, queries, [list(range(10))] * 2, [0])
        loads = {
            "api_1": (S.api_worker, queries, [list(range(n))]),
            "api_10": (S.api_worker, queries, S.rotations(list(range(n)), 10, 50)),
            "mcp_1": (S.mcp_worker, queries, [list(range(n))]),
            "mcp_10": (S.mcp_worker, queries, S.rotations(list(range(n)), 10, 50)),
            "null_1": (S.api_worker, [S.NULL_QUERY], [[0] * 200]),
        }
        trials = []
        names = [v for v, _ in variants]
        for t in range(args.trials):
            order = names[t % len(names):] + names[:t % len(names)]
            speed = S.cpu_speed()
            trial = {"order": order, "cpu_speed_ms": speed, "loads": {}}
            for load, (worker, qs, orders) in loads.items():
                for vname in order:
                    phase, stats = S.run_phase(servers[vname], worker, token, qs, orders, [0, 1, 2] if len(qs) > 2 else [0])
                    errors = [e for _, _, e in phase.answers if e]
                    wrong = 0 if load == "null_1" else sum(ids != expected[i] for i, ids, e in phase.answers if not e)
                    lat = harness.latency_ms([ns for _, ns in phase.samples])
                    trial["loads"].setdefault(load, {})[vname] = {
                        "p50": lat["p50"], "p95": lat["p95"], "rps": stats["rps"],
                        "server_cpu_ms": 1000 * stats["server_cpu_s"] / max(stats["requests"], 1),
                        "others_cores": stats["others_cores"], "errors": len(errors) + stats["failed"],
                        "different": wrong, "db_files_open_after": stats["db_files_open_after"]}
            trials.append(trial)
            log(f"trial {t + 1}/{args.trials} ({speed:.0f} ms cpu_speed): " + "; ".join(
                f"{load} " + " ".join(f"{v} {trial['loads'][load][v]['server_cpu_ms']:.2f}ms/{trial['loads'][load][v]['rps']:.0f}rps"
                                      for v in names) for load in loads))
    finally:
        for server in servers.values():
            server.stop()

    out = Path(args.output or S.WORK_DIR / f"serve-ab-{args.size}.json")
    out.write_text(json.dumps({"variants": variants, "size": args.size, "trials": trials,
                               "loadavg": Path("/proc/loadavg").read_text().split()[:3]}, indent=1))
    print(f"\n{args.size:,} items, {args.trials} trials, medians over trials (p50 / p95 ms; req/s; server CPU ms a request; "
          "other processes' cores):\n")
    print("| load | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for load in LOADS:
        cells = []
        for v in names:
            rows = [tr["loads"][load][v] for tr in trials]
            med = {k: statistics.median(r[k] for r in rows) for k in ("p50", "p95", "rps", "server_cpu_ms", "others_cores")}
            bad = sum(r["errors"] + r["different"] for r in rows)
            cells.append(f"{med['p50']:.2f} / {med['p95']:.2f}; {med['rps']:.1f}; {med['server_cpu_ms']:.2f}; "
                         f"{med['others_cores']:.2f}" + (f"; **{bad} bad**" if bad else ""))
        print(f"| {load} | " + " | ".join(cells) + " |")
    print(f"\nJSON: {out}; machine speed (cpu_speed ms) per trial: {[round(t['cpu_speed_ms']) for t in trials]}")


if __name__ == "__main__":
    t0 = time.time()
    main()
    log(f"done in {time.time() - t0:.0f} s")
