#!/usr/bin/env python
"""Served search latency: the JSON API and MCP `search` over HTTP beside in-process `search()`.

A benchmark script, not a test. Against one library (100,000 items, or 10,000 with `--quick`)
made by bench/search.py's generator (imported from it: same text, same seeds, the same
records and originals, same 100 queries), it

* builds or reuses the data folder bench/work/serve-<size>/ through bench/search.py's
  `open_library()` (`jezero init`, `bulk_create`, `store.optimize()`; a marker file says what
  it holds, so a second run skips the build);
* creates two client tokens: one unfiltered (`jezero client add … --sources '*' --scopes read
  --json`) and one scoped to one source (`… --sources codex-cli --scopes read --json`), whose
  every search is filtered to that source;
* starts `jezero serve --bind 127.0.0.1:<free port>` (its default processes: two a core) as a subprocess (HOME is an
  empty folder, so it finds no agent folders) and waits for /health;
* measures, in rounds (median over rounds of each round's p50 / p95 / max):
  - in-process `library.search.search()` on Django's warm connection, and on a fresh one
    (what a Django request does: the connection is opened and closed per request), and on
    the warm connection with the scoped token's filter (`allowed_sources=["codex-cli"]`);
  - `GET /api/v1/search` with 1 client (sequential, one keep-alive connection) and with 10
    concurrent clients (asyncio, one connection each), via httpx2;
  - the MCP `search` tool via the official SDK (`streamable_http_client` + `ClientSession`),
    1 and 10 concurrent sessions, each initialised once; only `call_tool` is timed;
  - the same 10-client MCP load without the SDK on the client side (`mcp_lean_worker`: each call
    one JSON-RPC `tools/call` POST, the answer's `structuredContent` read as is): the server does
    the same work, the load generator, which shares the machine's cores, less;
  - the same four HTTP loads (API and MCP, 1 and 10 clients) with the scoped token: filtered
    searches;
  - the fixed cost of a request: a query of only short words (no SQL runs) over both paths,
    and GET /health;
  - CPU used per request by the server processes and by this load generator (both share the
    machine's cores);
* checks every HTTP and MCP answer: no error, and the same result ids as in-process with the
  same token's sources (unfiltered, or `allowed_sources=["codex-cli"]` for the scoped token).

    .venv/bin/python bench/serve.py                 # 100k items, 3 rounds → bench/RESULTS-serve.md
    .venv/bin/python bench/serve.py --quick         # 10k items, 3 rounds → /tmp/RESULTS-serve-quick.md
    .venv/bin/python bench/serve.py --report-only   # re-render from bench/work/serve-result-<size>.json
"""

import asyncio
import importlib.metadata
import importlib.util
import json
import os
import random
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import harness
import search as G  # bench/search.py: its library (generator, seeds, build) and queries
from harness import BENCH_DIR, WORK_DIR

CLIENTS = 10
PER_CLIENT = 50
SCOPED_SOURCE = "codex-cli"  # the scoped client's one source (one of bench/search.py's G.SOURCES)
NULL_QUERY = "the of and"  # only common words: nothing to look up in either index, so no SQL runs
TICK = os.sysconf("SC_CLK_TCK")
perf = time.perf_counter_ns
log = harness.logger("[serve]")


# --- the server --------------------------------------------------------------------------------

def git_state():
    """HEAD, and whether the server's code (library/, jezero_site/) has uncommitted changes."""
    return harness.git_head("library", "jezero_site")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, data, workers, code=None):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = data / "serve.log"
        self.log_file = open(self.log_path, "w", encoding="utf-8")  # noqa: SIM115
        argv = [str(harness.JEZERO), "serve", "--bind", f"127.0.0.1:{self.port}"]
        argv += ["--workers", str(workers)] if workers else []   # none: the product's default
        self.command = " ".join(["jezero", *argv[1:]])
        # `jezero serve` execs gunicorn: this pid becomes the gunicorn master.
        # `code`: another checkout's library and site (a before/after comparison): gunicorn runs
        # with `-m`, which puts its working folder first on sys.path, before PYTHONPATH.
        env = os.environ.copy() if code is None else {**os.environ, "PYTHONPATH": str(code)}
        self.proc = subprocess.Popen(argv, stdout=self.log_file, stderr=subprocess.STDOUT,
                                     env=env, cwd=code, start_new_session=True)

    def wait_healthy(self, timeout=90):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"the server exited ({self.proc.returncode}); see {self.log_path}")
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=5) as r:
                    body = json.loads(r.read())
                    if r.status == 200 and body.get("fts"):
                        return body
            except OSError:
                pass
            time.sleep(0.2)
        raise SystemExit(f"the server did not answer /health within {timeout} s; see {self.log_path}")

    def pids(self):
        """The gunicorn master and its workers."""
        found = [self.proc.pid]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.proc.pid:
                found.append(int(stat.parent.name))
        return found

    def worker_timeouts(self):
        """gunicorn's `WORKER TIMEOUT` lines so far (a worker that stopped answering its heartbeat)."""
        self.log_file.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace").count("WORKER TIMEOUT")

    def db_files_open(self):
        """Open file descriptors of the database file (≈ SQLite connections) in the workers."""
        count = 0
        for pid in self.pids():
            if pid == self.proc.pid:
                continue
            try:
                fds = list(Path(f"/proc/{pid}/fd").iterdir())
            except OSError:
                continue
            for fd in fds:
                try:
                    count += os.readlink(fd).endswith("/jezero.sqlite3")
                except OSError:
                    pass
        return count

    def cpu_by_pid(self):
        out = {}
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[pid] = (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
        return out

    def cpu_s(self):
        return sum(self.cpu_by_pid().values())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)  # our own session: the master and its workers
                self.proc.wait()
        self.log_file.close()


def machine_cpu_s():
    """CPU seconds every process on the machine has used (user, nice, system, irq, softirq, steal)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / TICK


QUIET_CORES = 0.15  # other processes below this many cores: a quiet measurement


class OthersMeter:
    """CPU cores used by other processes (not this one, not the server) since creation."""

    def __init__(self, server):
        self.server = server
        self.start = (machine_cpu_s(), own_cpu_s(), server.cpu_s(), time.monotonic())

    def cores(self):
        a, b = self.start, (machine_cpu_s(), own_cpu_s(), self.server.cpu_s(), time.monotonic())
        return max(0.0, (b[0] - a[0]) - (b[1] - a[1]) - (b[2] - a[2])) / max(b[3] - a[3], 1e-9)


class Quiet:
    """Before each timed phase, wait until other processes use less than `threshold` cores
    (sampled over 1 s), for at most `budget_s` over the whole run. The machine is shared."""

    def __init__(self, server, budget_s, threshold=QUIET_CORES):
        self.server, self.budget_s, self.threshold = server, budget_s, threshold
        self.waited_s, self.gave_up, self.speeds = 0.0, 0, []

    def others_cores(self):
        meter = OthersMeter(self.server)
        time.sleep(1.0)
        return meter.cores()

    def wait(self, label):
        self.speeds.append(cpu_speed())
        if self.waited_s >= self.budget_s:
            self.gave_up += 1
            return
        start = time.monotonic()
        while (busy := self.others_cores()) >= self.threshold:
            if self.waited_s + (time.monotonic() - start) >= self.budget_s:
                self.gave_up += 1
                log(f"{label}: other processes use {busy:.2f} cores; waiting budget spent, measuring anyway")
                break
            time.sleep(2)
        waited = time.monotonic() - start
        if waited > 1.5:
            log(f"{label}: waited {waited:.0f} s for other processes to go quiet")
        self.waited_s += waited


def cpu_speed():
    """ms for a fixed pure-Python loop of a million steps (best of 3), taken before every
    phase: the figures here scale with it. This shared machine's cores run at different
    speeds from hour to hour without any other process in sight (43 to 76 ms within one run
    on 2026-12-02, and twice that spread between hours), which `others` cannot show."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        total = 0
        for i in range(1_000_000):
            total += i * i
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def own_cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# --- HTTP and MCP clients ------------------------------------------------------------------------

class Phase:
    """One timed load: `clients` concurrent clients, each through its own list of query indexes.
    Everyone connects and warms up first; the clock starts when all are ready."""

    def __init__(self, server, clients):
        self.server = server
        self.clients = clients
        self.ready = 0
        self.all_ready = asyncio.Event()
        self.go = asyncio.Event()
        self.samples = []      # (query index, ns) of answered requests
        self.answers = []      # (query index, ids or None, error text or None)
        self.failures = []     # (query index, ns, error) of requests that got no answer

    def fail(self, i, ns, exc):
        text = f"{type(exc).__name__}: {str(exc)[:160]}"
        self.failures.append((i, ns, text))
        self.answers.append((i, None, f"no answer after {ns / 1e9:.1f} s: {text}"))
        log(f"request failed after {ns / 1e9:.1f} s: {text}")

    async def arrive(self):
        self.ready += 1
        if self.ready == self.clients:
            self.all_ready.set()
        await self.go.wait()

    async def run(self, worker, orders):
        tasks = [asyncio.create_task(worker(self, order)) for order in orders]
        waiter = asyncio.create_task(self.all_ready.wait())
        done, _ = await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:  # a client failed before the start
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for task in tasks:
                if task.done() and not task.cancelled() and task.exception():
                    raise task.exception()
            raise RuntimeError("a client stopped before the start")
        timeouts = self.server.worker_timeouts()
        cpu_server, cpu_own, cpu_all, t0 = self.server.cpu_by_pid(), own_cpu_s(), machine_cpu_s(), perf()
        self.go.set()
        await asyncio.gather(*tasks)
        wall = perf() - t0
        cpu_after = self.server.cpu_by_pid()
        workers = sorted((cpu_after[pid] - cpu_server.get(pid, 0.0) for pid in cpu_after
                          if pid != self.server.proc.pid), reverse=True)
        used = sum(cpu_after.values()) - sum(cpu_server.values())
        client = own_cpu_s() - cpu_own
        others = max(0.0, machine_cpu_s() - cpu_all - used - client)
        return {"wall_s": wall / 1e9, "requests": len(self.samples),
                "rps": len(self.samples) / (wall / 1e9), "failed": len(self.failures),
                "worker_timeouts": self.server.worker_timeouts() - timeouts,
                "db_files_open_after": self.server.db_files_open(),
                "server_cpu_s": used, "client_cpu_s": client, "others_cores": others / (wall / 1e9),
                "busiest_worker_share": workers[0] / sum(workers) if sum(workers) > 0 else 0.0,
                "busiest_worker_cores": workers[0] / (wall / 1e9) if workers else 0.0}


REQUEST_TIMEOUT = 90  # s; gunicorn kills a worker that stops answering its heartbeat after 30 s


def api_worker(token, queries, warm):
    import httpx2

    async def worker(phase, order):
        limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1)
        async with httpx2.AsyncClient(base_url=phase.server.base, headers={"Authorization": f"Bearer {token}"},
                                      limits=limits, timeout=REQUEST_TIMEOUT) as http:
            for i in warm:
                try:
                    await http.get("/api/v1/search", params={"q": queries[i]})
                except httpx2.TransportError as exc:
                    log(f"warm-up request failed ({type(exc).__name__}); going on")
            await phase.arrive()
            for i in order:
                t0 = perf()
                try:
                    response = await http.get("/api/v1/search", params={"q": queries[i]})
                except httpx2.TransportError as exc:  # the client reconnects on the next request
                    phase.fail(i, perf() - t0, exc)
                    continue
                phase.samples.append((i, perf() - t0))
                if response.status_code != 200:
                    phase.answers.append((i, None, f"HTTP {response.status_code}: {response.text[:200]}"))
                else:
                    phase.answers.append((i, [r["id"] for r in response.json()["results"]], None))
    return worker


NEGOTIATED = {}


def mcp_worker(token, queries, warm):
    """One MCP session per client. If the transport breaks (a server worker killed), the failed
    call is counted and the client opens a new session for the rest of its queries."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def worker(phase, order):
        pending, arrived, inflight = list(order), False, None
        while pending:
            limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1)
            try:
                async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, limits=limits,
                                              timeout=REQUEST_TIMEOUT) as http:
                    async with streamable_http_client(phase.server.base + "/mcp", http_client=http) as (read, write, *_):
                        async with ClientSession(read, write) as session:
                            init = await session.initialize()
                            NEGOTIATED["protocol"] = init.protocol_version
                            # The first call also lists the tools (the output schema the SDK validates with).
                            for i in warm if not arrived else warm[:1]:
                                result = await session.call_tool("search", {"query": queries[i]})
                                if result.is_error:
                                    raise RuntimeError(f"MCP warm-up: {result.content}")
                            if not arrived:
                                arrived = True
                                await phase.arrive()
                            while pending:
                                i = pending[0]
                                t0 = perf()
                                inflight = (i, t0)
                                try:
                                    result = await asyncio.wait_for(session.call_tool("search", {"query": queries[i]}),
                                                                    REQUEST_TIMEOUT)
                                except Exception as exc:  # noqa: BLE001  (any failure: count it, reconnect)
                                    inflight = None
                                    pending.pop(0)
                                    phase.fail(i, perf() - t0, exc)
                                    raise _Reconnect() from None
                                inflight = None
                                pending.pop(0)
                                phase.samples.append((i, perf() - t0))
                                if result.is_error:
                                    text = result.content[0].text if result.content else "?"
                                    phase.answers.append((i, None, f"tool error: {text[:200]}"))
                                else:
                                    ids = [r["id"] for r in (result.structured_content or {}).get("results", [])]
                                    phase.answers.append((i, ids, None))
            except _Reconnect:
                continue
            except Exception as exc:  # the transport's task group may end the session from outside the call
                if not arrived:
                    raise
                if inflight is not None:  # the call in flight got no answer: count it, do not retry it
                    i, t0 = inflight
                    inflight = None
                    pending.pop(0)
                    phase.fail(i, perf() - t0, exc)
                log(f"MCP session ended with {type(exc).__name__}: {str(exc)[:120]}; reconnecting")
    return worker


class _Reconnect(Exception):
    pass


def mcp_call(query, number=1):
    """The JSON-RPC body of one MCP `tools/call` of `search` (what the SDK's client sends)."""
    return json.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call",
                       "params": {"name": "search", "arguments": {"query": query}}}).encode()


def mcp_headers(token):
    """The headers of a `tools/call` POSTed to the stateless /mcp endpoint without a session."""
    return {"authorization": f"Bearer {token}", "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": NEGOTIATED.get("protocol", "2025-06-18")}


def mcp_lean_worker(token, queries, warm):
    """MCP without the SDK on the client side: each call one JSON-RPC `tools/call` POSTed to /mcp
    (the stateless server needs no `initialize`), its JSON answer read as is. The server does
    exactly what it does for the SDK's client; the load generator skips the SDK's session and
    its validation of every result against the tool's output schema, so that more of these 2
    shared cores go to the server."""
    import httpx2

    async def worker(phase, order):
        limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1)
        async with httpx2.AsyncClient(base_url=phase.server.base, headers=mcp_headers(token), limits=limits,
                                      timeout=REQUEST_TIMEOUT) as http:
            for number, i in enumerate(warm):
                try:
                    await http.post("/mcp", content=mcp_call(queries[i], number))
                except httpx2.TransportError as exc:
                    log(f"warm-up request failed ({type(exc).__name__}); going on")
            await phase.arrive()
            for number, i in enumerate(order, start=len(warm)):
                t0 = perf()
                try:
                    response = await http.post("/mcp", content=mcp_call(queries[i], number))
                except httpx2.TransportError as exc:  # the client reconnects on the next request
                    phase.fail(i, perf() - t0, exc)
                    continue
                phase.samples.append((i, perf() - t0))
                answer = response.json() if response.status_code == 200 else {}
                result = answer.get("result") or {}
                if response.status_code != 200 or "error" in answer or result.get("isError"):
                    phase.answers.append((i, None, f"HTTP {response.status_code}: {response.text[:200]}"))
                else:
                    phase.answers.append((i, [r["id"] for r in result["structuredContent"]["results"]], None))
    return worker


def health_worker(_token, _queries, warm):
    import httpx2

    async def worker(phase, order):
        async with httpx2.AsyncClient(base_url=phase.server.base, timeout=REQUEST_TIMEOUT) as http:
            for _ in warm:
                (await http.get("/health")).raise_for_status()
            await phase.arrive()
            for i in order:
                t0 = perf()
                try:
                    response = await http.get("/health")
                except httpx2.TransportError as exc:
                    phase.fail(i, perf() - t0, exc)
                    continue
                phase.samples.append((i, perf() - t0))
                phase.answers.append((i, [], None if response.status_code == 200 else f"HTTP {response.status_code}"))
    return worker


def run_phase(server, make_worker, token, queries, orders, warm):
    async def main():
        phase = Phase(server, len(orders))
        stats = await phase.run(make_worker(token, queries, warm), orders)
        return phase, stats
    return asyncio.run(main())


# --- the ASGI application in this process (no gunicorn, no socket) ---------------------------------

class AsgiProbe:
    """Time `jezero_site.asgi.application` called directly with a query of common words (no SQL):
    the app stack's own cost without gunicorn, HTTP parsing, sockets or a client library.
    Also counts, per request, the threads started and the sync↔async hand-offs (asgiref
    `sync_to_async`, anyio `to_thread.run_sync`), by wrappers in this process only.

    One event loop and one lifespan for the whole run: the MCP SDK's session manager runs
    once per application instance."""

    def __init__(self, token):
        from jezero_site import asgi

        self.app = asgi.application
        self.loop = asyncio.new_event_loop()
        self.queue = asyncio.Queue()
        auth = (b"authorization", f"Bearer {token}".encode())
        self.requests = {
            "asgi_api_null": ("GET", "/api/v1/search", b"q=a+b", b"", [auth]),
            "asgi_mcp_null": ("POST", "/mcp", b"", mcp_call(NULL_QUERY),
                              [(name.encode(), value.encode()) for name, value in mcp_headers(token).items()]),
            "asgi_health": ("GET", "/health", b"", b"", []),
        }
        self.life = None
        self.loop.run_until_complete(self._startup())

    async def _startup(self):
        started = asyncio.Event()

        async def life_send(message):
            if message["type"] == "lifespan.startup.complete":
                started.set()

        await self.queue.put({"type": "lifespan.startup"})
        self.life = asyncio.create_task(self.app({"type": "lifespan", "asgi": {"version": "3.0"}},
                                                 self.queue.get, life_send))
        waiter = asyncio.create_task(started.wait())
        await asyncio.wait([waiter, self.life], return_when=asyncio.FIRST_COMPLETED)
        if not started.is_set():
            waiter.cancel()
            self.life.result()  # raises what stopped it
            raise RuntimeError("lifespan startup did not complete")

    def close(self):
        async def shutdown():
            await self.queue.put({"type": "lifespan.shutdown"})
            await asyncio.wait_for(self.life, 10)
        try:
            self.loop.run_until_complete(shutdown())
        finally:
            self.loop.close()

    async def _call(self, method, path, query, body, headers):
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query, "root_path": "",
                 "headers": [(b"host", b"127.0.0.1"), *headers], "client": ("127.0.0.1", 50000),
                 "server": ("127.0.0.1", 80)}
        sent, out = False, {"status": None, "body": b""}

        async def receive():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # no disconnect: the app cancels this when it is done

        async def send(message):
            if message["type"] == "http.response.start":
                out["status"] = message["status"]
            elif message["type"] == "http.response.body":
                out["body"] += message.get("body", b"")

        await asyncio.wait_for(self.app(scope, receive, send), 60)
        return out

    def run(self, calls):
        import threading

        import anyio.to_thread
        from asgiref import sync as asgiref_sync

        counts = {"threads": 0, "sync_to_async": 0, "to_thread": 0}
        orig = (threading.Thread.start, asgiref_sync.SyncToAsync.__call__, anyio.to_thread.run_sync)

        def start(thread, *a, **kw):
            counts["threads"] += 1
            return orig[0](thread, *a, **kw)

        async def s2a(self_, *a, **kw):
            counts["sync_to_async"] += 1
            return await orig[1](self_, *a, **kw)

        async def run_sync(*a, **kw):
            counts["to_thread"] += 1
            return await orig[2](*a, **kw)

        async def main():
            out = {}
            for name, req in self.requests.items():
                for _ in range(20):
                    await self._call(*req)
                samples, errors = [], 0
                before = dict(counts)
                threading.Thread.start, asgiref_sync.SyncToAsync.__call__, anyio.to_thread.run_sync = (
                    start, s2a, run_sync)
                try:
                    for j in range(calls):
                        t0 = perf()
                        answer = await self._call(*req)
                        samples.append((j, perf() - t0))
                        errors += answer["status"] != 200 or b'"isError":true' in answer["body"]
                finally:
                    threading.Thread.start, asgiref_sync.SyncToAsync.__call__, anyio.to_thread.run_sync = orig
                out[name] = {"samples": samples, "errors": errors,
                             "per_request": {k: (counts[k] - before[k]) / calls for k in counts}}
            return out

        return self.loop.run_until_complete(main())

def answer_sizes(server, token, queries):
    """Mean response body size of the API and of MCP tools/call (raw JSON-RPC) for the same queries."""
    import httpx2

    version = NEGOTIATED.get("protocol", "2025-06-18")
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
               "Mcp-Protocol-Version": version}
    api, mcp = [], []
    with httpx2.Client(base_url=server.base, headers=headers, timeout=60) as http:
        for q in queries:
            api.append(len(http.get("/api/v1/search", params={"q": q}).content))
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": {"query": q}}}
            mcp.append(len(http.post("/mcp", json=body).content))
    return {"api": statistics.fmean(api), "mcp": statistics.fmean(mcp), "queries": len(queries)}


# --- the benchmark ---------------------------------------------------------------------------

def baseline(v):
    """The in-process variant a variant's overhead is taken over: scoped HTTP variants pair with
    the scoped in-process search, the rest (and that one) with the unfiltered warm one."""
    return "inproc_scoped" if v.endswith("_scoped") and v != "inproc_scoped" else "inproc"


def rotations(order, clients, per_client):
    """Client k starts k/clients of the way into `order` and takes `per_client` queries."""
    n = len(order)
    return [[order[(k * n // clients + j) % n] for j in range(per_client)] for k in range(clients)]


def bench(args):
    size = args.size or (10_000 if args.quick else 100_000)
    data = G.library_folder(size)
    commit = git_state()  # the code the server and this process import, read before it can change
    result = {"size": size, "rounds": args.rounds, "clients": args.clients, "workers": args.workers,
              "started_at": harness.stamp(),
              "loadavg_before": Path("/proc/loadavg").read_text().split()[:3]}

    # The environment (HOME an empty folder: no ~/.claude or ~/.codex, so init writes no connectors;
    # no per-client rate limit: it would answer 429 to a load test), `jezero init` (a jezero.toml of
    # defaults), Django, and the library, built unless a valid one is there.
    marker = G.open_library(size, rebuild=args.rebuild, JEZERO_API_RATE_PER_MINUTE="0")
    home = Path(os.environ["HOME"])  # open_library's empty folder, which the server inherits too
    log(f"data folder {data} (built {marker.get('built_at', '?')})")
    from django.db import connection

    from library import search as S
    from library.access import clients as C

    result["build"] = marker
    result["sqlite"] = connection.Database.sqlite_version
    result["db_mb"] = sum(p.stat().st_size for p in data.glob("jezero.sqlite3*")) / 1e6

    # The same 100 queries as bench/search.py (its generator, its seed).
    sentences, identifiers = G.harvest_sentences()
    text = G.Text(sentences, identifiers, random.Random(G.SEED))
    queries = [q for q in G.make_queries(text, sentences) if S.build_match_query(q)]
    n = len(queries)
    result["queries"] = queries
    per_client = args.per_client or n

    name = f"bench-serve-{datetime.now(UTC):%Y%m%d%H%M%S}-{os.getpid()}"
    token = json.loads(harness.jezero("client", "add", name, "--sources", "*", "--scopes", "read", "--json"))["token"]
    caller = C.authenticate(token)
    allowed = caller.sources
    # A second client that reads one source: every search it makes is filtered.
    scoped_token = json.loads(harness.jezero("client", "add", f"{name}-scoped", "--sources", SCOPED_SOURCE,
                                             "--scopes", "read", "--json"))["token"]
    scoped_allowed = C.authenticate(scoped_token).sources
    if list(scoped_allowed) != [SCOPED_SOURCE]:
        raise SystemExit(f"the scoped client reads {scoped_allowed}, not [{SCOPED_SOURCE!r}]")
    result["scoped_source"] = SCOPED_SOURCE

    def ids_of(i, sources=allowed):
        return [h.id for h in S.search(queries[i], allowed_sources=sources).hits]

    # --- in-process -----------------------------------------------------------------------
    def inproc_warm(i):
        t0 = perf()
        S.search(queries[i], allowed_sources=allowed)
        return perf() - t0

    def inproc_scoped(i):
        t0 = perf()
        S.search(queries[i], allowed_sources=scoped_allowed)
        return perf() - t0

    def inproc_fresh(i):
        connection.close()
        t0 = perf()
        S.search(queries[i], allowed_sources=allowed)
        return perf() - t0

    def inproc_null(_i):
        t0 = perf()
        S.search(NULL_QUERY, allowed_sources=allowed)
        return perf() - t0

    def inproc_auth(_i):
        t0 = perf()
        C.authenticate(token)
        return perf() - t0

    def inproc_connect(_i):
        connection.close()
        t0 = perf()
        connection.ensure_connection()
        with connection.cursor() as cursor:  # the first statement also reads the schema
            cursor.execute("SELECT 1 FROM items WHERE id = 1")
        return perf() - t0

    expected, expected_scoped = {}, {}
    t = time.perf_counter()
    for i in range(n):  # warm-up: pages into the OS cache; the reference answers, unfiltered and scoped
        expected[i] = ids_of(i)
        expected_scoped[i] = ids_of(i, scoped_allowed)
    result["scoped_hits"] = sum(len(x) for x in expected_scoped.values()) / n
    log(f"in-process warm-up pass {time.perf_counter() - t:.1f} s; {n} queries "
        f"({result['scoped_hits']:.1f} results a query scoped to {SCOPED_SOURCE})")

    server = Server(data, args.workers)
    quiet = Quiet(server, args.quiet_budget)
    probe = None
    result["server_command"] = server.command
    try:
        result["health"] = server.wait_healthy()
        result["server_processes"] = len(server.pids()) - 1
        log(f"server up at {server.base} (pids {server.pids()})")
        api, mcp, health = (api_worker, mcp_worker, health_worker)
        null_queries = [NULL_QUERY]

        # Warm-up over HTTP: every query through the API once (both workers), a few over MCP.
        t = time.perf_counter()
        run_phase(server, api, token, queries, rotations(list(range(n)), 2, n // 2), [])
        run_phase(server, mcp, token, queries, [list(range(10))] * 2, [0])
        run_phase(server, api, scoped_token, queries, rotations(list(range(n)), 2, n // 2), [])
        run_phase(server, mcp, scoped_token, queries, [list(range(10))] * 2, [0])
        log(f"HTTP warm-up {time.perf_counter() - t:.1f} s")

        c = args.clients
        one, many = ["api_1", "mcp_1", "api_1_scoped", "mcp_1_scoped"], [f"api_{c}", f"mcp_{c}", f"api_{c}_scoped",
                                                                        f"mcp_{c}_scoped", f"mcp_lean_{c}",
                                                                        f"mcp_lean_{c}_scoped"]
        served = one + many   # every answer checked; `_scoped`: the scoped token, filtered searches
        variants = ["inproc", "inproc_fresh", "inproc_scoped", *served]
        fixed = ["inproc_null", "inproc_auth", "inproc_connect", "api_null_1", "mcp_null_1", "health_1"]
        probes = ["asgi_api_null", "asgi_mcp_null", "asgi_health"]
        probe_info = {v: [] for v in probes}
        per_round = {v: [] for v in variants + fixed + probes}
        per_query = {v: [] for v in variants}  # per round: {query index: ns}
        load = {v: [] for v in served + fixed[3:]}
        mismatches = {v: [] for v in served}
        errors = {v: [] for v in served + fixed[3:]}

        def record(v, samples, others):
            per_round[v].append({**harness.latency_ms([ns for _, ns in samples]), "others": others})
            if v in per_query:
                rnd_samples = {}
                for i, ns in samples:
                    rnd_samples.setdefault(i, []).append(ns)
                per_query[v].append({i: statistics.median(x) for i, x in rnd_samples.items()})

        def timed_block(v, fn, items):
            meter = OthersMeter(server)
            samples = [(i, fn(i)) for i in items]
            record(v, samples, meter.cores())

        def http(v, worker, orders, warm, qs=queries, check=True):
            scoped = v.endswith("_scoped")   # the scoped token, checked against the scoped answers
            want = expected_scoped if scoped else expected
            phase, stats = run_phase(server, worker, scoped_token if scoped else token, qs, orders, warm)
            record(v, phase.samples, stats["others_cores"])
            stats["server_cpu_ms_per_req"] = stats["server_cpu_s"] * 1e3 / stats["requests"]
            stats["client_cpu_ms_per_req"] = stats["client_cpu_s"] * 1e3 / stats["requests"]
            load[v].append(stats)
            for i, ids, error in phase.answers:
                if error:
                    errors[v].append((qs[i], error))
                elif check and ids != want[i]:
                    mismatches[v].append((i, ids))
            return stats

        for rnd in range(args.rounds):
            order = list(range(n))
            random.Random(rnd).shuffle(order)
            quiet.wait(f"round {rnd + 1}: in-process")
            t = time.perf_counter()
            timed_block("inproc", inproc_warm, order)
            timed_block("inproc_scoped", inproc_scoped, order)
            timed_block("inproc_fresh", inproc_fresh, order)
            timed_block("inproc_null", inproc_null, range(200))
            timed_block("inproc_auth", inproc_auth, range(200))
            timed_block("inproc_connect", inproc_connect, range(100))
            log(f"round {rnd + 1}: in-process {time.perf_counter() - t:.1f} s")
            warm3 = order[:3]
            for v in one:
                worker = api if v.startswith("api") else mcp
                quiet.wait(f"round {rnd + 1}: {v}")
                t = time.perf_counter()
                http(v, worker, [order], warm3)
                log(f"round {rnd + 1}: {v} {time.perf_counter() - t:.1f} s")
            nulls = [[0] * 200]
            quiet.wait(f"round {rnd + 1}: fixed-cost probes")
            http("api_null_1", api, nulls, [0], qs=null_queries, check=False)
            http("mcp_null_1", mcp, nulls, [0], qs=null_queries, check=False)
            http("health_1", health, nulls, [0], qs=null_queries, check=False)
            if probe is None:
                probe = AsgiProbe(token)
            meter = OthersMeter(server)
            got_all = probe.run(200)
            others = meter.cores()
            for v, got in got_all.items():
                record(v, got["samples"], others)
                probe_info[v].append({"errors": got["errors"], **got["per_request"]})
            for v in many:
                worker = api if v.startswith("api") else mcp_lean_worker if v.startswith("mcp_lean") else mcp
                quiet.wait(f"round {rnd + 1}: {v}")
                t = time.perf_counter()
                stats = http(v, worker, rotations(order, c, per_client), warm3)
                log(f"round {rnd + 1}: {v} {time.perf_counter() - t:.1f} s, {stats['rps']:.1f} req/s")
            for v in ("mcp_1", "mcp_1_scoped", *many):
                last = per_round[v][-1]
                log(f"  {v}: p50 {last['p50']:.1f} p95 {last['p95']:.1f} ms")
        result["answer_bytes"] = answer_sizes(server, token, queries[:20])
    finally:
        if probe is not None:
            probe.close()
        server.stop()
    server_log = server.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    result["server_log"] = {"lines": len(server_log),
                            "errors": [line for line in server_log if " ERROR " in line or "Traceback" in line][:20]}

    # Mismatches: recompute in-process now (recency moves with the clock) and keep what still differs.
    result["checks"] = {}
    for v, found in mismatches.items():
        sources = scoped_allowed if v.endswith("_scoped") else allowed
        persisting = [(queries[i], ids, now) for i, ids in found if ids != (now := ids_of(i, sources))]
        answers = sum(s["requests"] for s in load[v])
        result["checks"][v] = {"answers": answers, "errors": len(errors[v]), "error_samples": errors[v][:5],
                               "mismatches": len(found), "persisting": len(persisting),
                               "persisting_samples": persisting[:5]}
    for v in fixed[3:]:
        result["checks"][v] = {"answers": sum(s["requests"] for s in load[v]), "errors": len(errors[v]),
                               "error_samples": errors[v][:5]}

    result["asgi_probe"] = {v: {"errors": sum(x["errors"] for x in rounds),
                                **{k: statistics.median(x[k] for x in rounds) for k in rounds[0] if k != "errors"}}
                            for v, rounds in probe_info.items()}
    # Medians over the rounds in which other processes stayed quiet (all rounds if none did).
    quiet_rounds = {v: [j for j, x in enumerate(rounds) if x["others"] < QUIET_CORES] or list(range(len(rounds)))
                    for v, rounds in per_round.items()}
    result["quiet_rounds"] = quiet_rounds
    result["latency"] = {v: {k: statistics.median(rounds[j][k] for j in quiet_rounds[v])
                             for k in ("p50", "p95", "max", "mean")}
                         for v, rounds in per_round.items()}
    result["latency_rounds"] = per_round
    result["load_rounds"] = load
    result["quiet"] = {"waited_s": quiet.waited_s, "gave_up": quiet.gave_up, "budget_s": args.quiet_budget,
                       "threshold_cores": quiet.threshold, "speeds_ms": quiet.speeds}
    result["load_totals"] = {v: {k: sum(s[k] for s in stats) for k in ("failed", "worker_timeouts")}
                             for v, stats in load.items()}
    result["load"] = {v: {k: statistics.median(stats[j][k] for j in quiet_rounds[v]) for k in stats[0]}
                      for v, stats in load.items()}
    # Paired overhead over in-process (warm), per query: median over rounds, then median over queries.
    def per_query_median(v):
        rounds = [per_query[v][j] for j in quiet_rounds[v]]
        return {i: statistics.median(r[i] for r in rounds if i in r) for i in rounds[0]}

    med = {v: per_query_median(v) for v in per_query}
    result["paired_overhead_ms"] = {
        v: statistics.median(med[v][i] - med[baseline(v)][i] for i in med[v] if i in med[baseline(v)]) / 1e6
        for v in variants[1:]}
    result["finished_at"] = harness.stamp()
    result["versions"] = {p: importlib.metadata.version(p) for p in
                          ("Django", "gunicorn", "mcp", "django-ninja", "httpx2", "starlette", "asgiref")}
    result["uvloop"] = importlib.util.find_spec("uvloop") is not None
    result["per_client"] = per_client
    result["library_commit"] = commit
    if git_state() != commit:
        result["library_commit"] += f"; changed to {git_state()} during the run"
    if home.name.startswith("jezero-bench-home-"):  # the empty HOME open_library made, nothing else
        shutil.rmtree(home, ignore_errors=True)
    return result


# --- report --------------------------------------------------------------------------------------

LABELS = {
    "inproc": "in-process `search()`, warm connection",
    "inproc_fresh": "in-process `search()`, fresh connection each call",
    "inproc_scoped": f"in-process `search()`, warm connection, scoped to `{SCOPED_SOURCE}`",
    "api_1": "API `GET /api/v1/search`, 1 client",
    "mcp_1": "MCP `search` tool, 1 session",
    "api_1_scoped": f"API, 1 client, scoped token (`{SCOPED_SOURCE}` only)",
    "mcp_1_scoped": f"MCP, 1 session, scoped token (`{SCOPED_SOURCE}` only)",
    "inproc_null": "in-process `search()` of a query of common words (no SQL)",
    "inproc_auth": "in-process `clients.authenticate(token)`",
    "inproc_connect": "in-process: open a connection + first statement",
    "api_null_1": "API, query of common words (no SQL), 1 client",
    "mcp_null_1": "MCP, query of common words (no SQL), 1 session",
    "health_1": "`GET /health`, 1 client",
    "asgi_api_null": "API, query of common words, ASGI app called in-process (no gunicorn, no socket)",
    "asgi_mcp_null": "MCP, query of common words, ASGI app called in-process",
    "asgi_health": "`/health`, ASGI app called in-process",
}


def render(r, info, command):
    c = r["clients"]
    lat, load, over = r["latency"], r["load"], r["paired_overhead_ms"]
    LABELS.update({f"api_{c}": f"API, {c} concurrent clients", f"mcp_{c}": f"MCP, {c} concurrent sessions",
                   f"api_{c}_scoped": f"API, {c} concurrent clients, scoped token (`{SCOPED_SOURCE}` only)",
                   f"mcp_{c}_scoped": f"MCP, {c} concurrent sessions, scoped token (`{SCOPED_SOURCE}` only)",
                   f"mcp_lean_{c}": f"MCP, {c} concurrent clients without the SDK (JSON-RPC POSTs)",
                   f"mcp_lean_{c}_scoped": f"MCP, {c} concurrent clients without the SDK, scoped token "
                                           f"(`{SCOPED_SOURCE}` only)"})
    one = [k for k in ("api_1", "mcp_1", "api_1_scoped", "mcp_1_scoped") if k in lat]  # an older result: no scoped
    many = [k for k in (f"api_{c}", f"mcp_{c}", f"api_{c}_scoped", f"mcp_{c}_scoped", f"mcp_lean_{c}",
                        f"mcp_lean_{c}_scoped") if k in lat]
    scoped = r.get("scoped_source")
    v = r["versions"]
    lines = ["# Served search benchmark: JSON API and MCP over HTTP", ""]
    lines += [
        f"- Date: {r['finished_at']} (started {r['started_at']}; load average before: {', '.join(r['loadavg_before'])})",
        f"- Machine: {info['cpu']}, {info['cores']} cores, {info['ram']} RAM, {info['os']}",
        f"- Python {info['python']}, SQLite {r['sqlite']} (bundled pysqlite3); Django {v['Django']}, "
        f"gunicorn {v['gunicorn']} (`asgi` worker, {'uvloop' if r['uvloop'] else 'asyncio loop: uvloop not installed'}), "
        f"mcp {v['mcp']}, django-ninja {v['django-ninja']}, asgiref {v['asgiref']}, client httpx2 {v['httpx2']}",
        f"- Command: `{command}`; code measured: commit {r.get('library_commit', '?')}",
        f"- Library: {r['size']:,} items made by bench/search.py's generator (same seed), after `store.optimize()`, "
        f"{r['db_mb']:,.0f} MB on disk, in bench/work/serve-{r['size']}/ (default config: candidate pool 200, limit 10)",
        f"- Server: `{r['server_command']}` ({r.get('server_processes', '?')} worker processes, gunicorn "
        f"`--worker-class jezero_site.worker.Worker`: its ASGI worker with JSON errors, keep-alive 2 s, access log to a file), "
        "loopback only, HOME an empty folder, `JEZERO_API_RATE_PER_MINUTE=0` (the per-client rate limit off: it "
        "would answer 429 to a load test). Client token: `jezero client add … --sources '*' --scopes read`"
        + (f"; scoped token: `jezero client add …-scoped --sources {scoped} --scopes read` (every search it makes "
           f"is filtered to that source: {r['scoped_hits']:.1f} results a query on average)." if scoped else "."),
        f"- {len(r['queries'])} queries = bench/search.py's fixed queries (2–4 distinctive words, fragments, quoted "
        "phrases, error codes/commands/projects with a word), default limit 10; unfiltered"
        + (", and filtered by the scoped token (*scoped* rows)." if scoped else "."),
        f"- {r['rounds']} rounds; in each round, in this order: in-process (queries shuffled per round"
        + ("; warm, scoped, fresh" if scoped else "") + "), API 1 client, MCP 1 session"
        + (", then both again with the scoped token" if scoped else "") + " (every query once, same order), the "
        f"fixed-cost probes (200 requests each), then API and MCP with {c} concurrent clients"
        + (", then both again with the scoped token" if scoped else "")
        + f" ({r['per_client']} queries each, client k starting k/{c} of the way into the round's "
        f"order, so {c * r['per_client']} requests per phase). Every client connects and warms up (3 requests; MCP: "
        "`initialize` + 3 `call_tool`, which also lists the tools once) before the clock starts. Figures are the "
        "**median over the quiet rounds** of each round's p50 / p95 / max, in ms: rounds in which other processes "
        f"used less than {QUIET_CORES} cores during that measurement (all rounds if none was quiet; the *rounds* "
        "column says how many were used). One warm-up pass in-process and one over HTTP precede everything.",
        "- Timed: API = `await http.get(...)` until the whole body is in (JSON decoded afterwards, untimed); "
        "MCP = `await session.call_tool(\"search\", {...})`, which includes the SDK's JSON-RPC decoding and its "
        "validation of the structured result against the tool's output schema.",
        "- **The load generator runs on the same 2 cores as the server** (one asyncio process: httpx2 and the MCP "
        "SDK). Its CPU per request is in the last table: at 10 clients it takes a real share of the machine, so "
        "requests/s are a lower bound for a server with the cores to itself. The *without the SDK* rows ask the "
        "same server the same `tools/call` as plain JSON-RPC POSTs (no client session, no validation of the result "
        "against the output schema): the server's work is the same, the load generator's smaller.",
        "",
        "## Goals",
        "",
        "Goal: MCP search p95 ≤ 20 ms at 100,000 items for one client, ≥ 150 requests/s for "
        f"{CLIENTS} clients, filtered searches too. This run ({r['size']:,} items):",
        "",
        "- MCP `search`, 1 session, p50 / p95: "
        + "; ".join(f"{'scoped' if k.endswith('_scoped') else 'unfiltered'} {lat[k]['p50']:.2f} / {lat[k]['p95']:.2f} ms"
                    for k in one if k.startswith("mcp")),
        f"- requests/s with {c} concurrent clients: "
        + "; ".join(f"{'API' if k.startswith('api') else 'MCP without the SDK' if k.startswith('mcp_lean') else 'MCP'}"
                    f"{' scoped' if k.endswith('_scoped') else ''} {load[k]['rps']:.1f}" for k in many),
        "",
        "## Latency",
        "",
        "*p50 − in-process p50* and *paired overhead*: over the unfiltered in-process search; for the scoped HTTP "
        "rows, over the scoped in-process search (the same filter).",
        "",
        *harness.header("ms", "p50", "p95", "max", "mean", "p50 − in-process p50",
                        "paired overhead (median per query)", "rounds"),
    ]
    used = r.get("quiet_rounds", {})

    def rounds_used(key):
        return f"{len(used[key])}/{r['rounds']}" if key in used else ""

    def figures(x, digits):
        return [f"{x[k]:.{digits}f}" for k in ("p50", "p95", "max", "mean")]
    for key in [k for k in ("inproc", "inproc_fresh", "inproc_scoped") if k in lat] + one + many:
        x = lat[key]
        d = "" if key == "inproc" else f"{x['p50'] - lat[baseline(key)]['p50']:+.2f}"
        o = "" if key == "inproc" else f"{over[key]:+.2f}"
        lines.append(harness.row(LABELS[key], *figures(x, 2), d, o, rounds_used(key)))
    lines += ["", "Fixed cost of a request (no FTS query runs; 200 calls per round):", "",
              *harness.header("ms", "p50", "p95", "max", "mean", "rounds")]
    for key in ("inproc_null", "inproc_auth", "inproc_connect", "asgi_api_null", "asgi_mcp_null", "asgi_health",
                "api_null_1", "mcp_null_1", "health_1"):
        lines.append(harness.row(LABELS[key], *figures(lat[key], 3), rounds_used(key)))
    lines += ["", "Per request through the ASGI app in-process (counted by wrappers in the benchmark process; "
              "median over rounds):", "", *harness.header("", "threads started", "asgiref `sync_to_async` calls",
                                                          "anyio `to_thread.run_sync` calls", "errors")]
    for key, x in r["asgi_probe"].items():
        lines.append(harness.row(LABELS[key], f"{x['threads']:.2f}", f"{x['sync_to_async']:.2f}",
                                 f"{x['to_thread']:.2f}", x["errors"]))
    lines += ["", "## Throughput and CPU", "",
              "Median over the quiet rounds, except *failed* and *worker timeouts*: totals over all rounds. CPU = user + system "
              "time of the gunicorn master and workers (from /proc) and of this load-generator process, during the "
              "timed window, per answered request; *other processes* = the rest of the machine's CPU time (from "
              "/proc/stat) in the same window, in cores: anything above ~0.05 means someone else was using the "
              "machine during the measurement.", "",
              *harness.header("", "answered", "failed", "worker timeouts", "wall s", "requests/s", "server CPU ms/req",
                              "client CPU ms/req", "server + client busy", "other processes, cores",
                              "busiest worker: share of server CPU / cores", "DB files open in the workers after",
                              "rounds")]
    for key in [*one, *many, "api_null_1", "mcp_null_1", "health_1"]:
        s = load[key]
        busy = (s["server_cpu_s"] + s["client_cpu_s"]) / s["wall_s"] / info["cores"]
        total = r["load_totals"][key]
        lines.append(harness.row(
            LABELS[key], f"{s['requests']:.0f}", total["failed"], total["worker_timeouts"], f"{s['wall_s']:.1f}",
            f"{s['rps']:.1f}", f"{s['server_cpu_ms_per_req']:.2f}", f"{s['client_cpu_ms_per_req']:.2f}", f"{busy:.0%}",
            f"{s['others_cores']:.2f}", f"{s['busiest_worker_share']:.0%} / {s['busiest_worker_cores']:.2f}",
            f"{s.get('db_files_open_after', float('nan')):.0f}", rounds_used(key)))
    rounds = r.get("load_rounds")
    if rounds:
        lines += ["", f"Each round of the {c}-client phases (p50 / p95 ms, requests/s, other processes in cores):", "",
                  *harness.header("round", *(LABELS[k] for k in many))]
        for j in range(r["rounds"]):
            cells = []
            for key in many:
                x, s = r["latency_rounds"][key][j], rounds[key][j]
                cells.append(f"{x['p50']:.0f} / {x['p95']:.0f} ms, {s['rps']:.1f} req/s, others {s['others_cores']:.2f}")
            lines.append(harness.row(j + 1, *cells))
    q = r.get("quiet")
    if q:
        lines += ["", f"Before every phase the run waited for other processes to use < {q['threshold_cores']} cores: "
                  f"{q['waited_s']:.0f} s waited in all (budget {q['budget_s']:.0f} s); measured anyway "
                  f"{q['gave_up']} time(s) when the budget was spent."]
        if q.get("speeds_ms"):
            speeds = q["speeds_ms"]
            lines += ["", f"The machine's speed before each phase (`cpu_speed()`: ms for a fixed pure-Python loop; "
                      f"lower is faster): median {statistics.median(speeds):.0f}, "
                      f"from {min(speeds):.0f} to {max(speeds):.0f}. Every figure above scales with it."]
    lines += ["", "## Checks", "",
              "Every answer compared with in-process `search()` on the same query (the list of result ids, in order; "
              "scoped answers with `search(q, allowed_sources=[<the scoped source>])`). "
              "A difference is re-checked against a fresh in-process run after the load (recency scores move with "
              "the clock); *persisting* counts those still different.", "",
              *harness.header("", "answers", "errors", "different ids", "persisting")]
    for key, ch in r["checks"].items():
        lines.append(harness.row(LABELS[key], f"{ch['answers']:,}", ch["errors"], ch.get("mismatches", "–"),
                                 ch.get("persisting", "–")))
        for q, err in ch.get("error_samples", []):
            lines.append(harness.row(f"  ↳ `{q}`", err, "", "", ""))
        for q, got, want in ch.get("persisting_samples", []):
            lines.append(harness.row(f"  ↳ `{q}`", f"got {got[:5]}…", f"want {want[:5]}…", "", ""))
    ab = r.get("answer_bytes")
    if ab:
        lines += ["", f"Answer size, mean over {ab['queries']} queries: API {ab['api']:,.0f} bytes, MCP `tools/call` "
                  f"{ab['mcp']:,.0f} bytes ({ab['mcp'] / ab['api']:.2f}×: the result travels twice, as `structuredContent` "
                  "and as indented JSON text in `content`)."]
    sl = r["server_log"]
    lines += ["", f"Server log: {sl['lines']:,} lines, {len(sl['errors'])} error lines."]
    lines.append("")
    return "\n".join(lines)


def main():
    parser = harness.parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="10,000 items (default 100,000)")
    parser.add_argument("--size", type=int, help="library size (overrides --quick)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--clients", type=int, default=CLIENTS, help="concurrent clients (default 10)")
    parser.add_argument("--per-client", type=int, default=PER_CLIENT,
                        help="queries per client in the concurrent phases (default 50: with 10 clients, every query "
                             "5 times); 0 = every query")
    parser.add_argument("--workers", type=int, default=None,
                        help="gunicorn workers (default: jezero serve's own, two a core from 2 to 8)")
    parser.add_argument("--quiet-budget", type=float, default=180,
                        help="seconds the run may wait, in all, for other processes to go quiet before a phase "
                             "(default 180; 0 = never wait)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the data folder even if it is valid")
    parser.add_argument("--output", help="report path (default bench/RESULTS-serve.md; --quick: /tmp/RESULTS-serve-quick.md)")
    parser.add_argument("--report-only", action="store_true", help="re-render from bench/work/serve-result-<size>.json")
    args = parser.parse_args()
    size = args.size or (10_000 if args.quick else 100_000)
    output = Path(args.output or ("/tmp/RESULTS-serve-quick.md" if args.quick else BENCH_DIR / "RESULTS-serve.md"))
    raw = WORK_DIR / f"serve-result-{size}.json"
    if args.report_only:
        result = harness.read_json(raw)
    else:
        t = time.perf_counter()
        result = bench(args)
        result["total_s"] = time.perf_counter() - t
        harness.write_json(raw, result)
        log(f"done in {result['total_s']:.0f} s; raw figures in {raw}")
    flags = ["--quick"] if args.quick and not args.size else []
    flags += [f"--size {args.size}"] if args.size else []
    flags += [f"--rounds {result['rounds']}"] if result["rounds"] != 3 else []
    flags += [f"--per-client {result['per_client']}"] if result["per_client"] != PER_CLIENT else []
    flags += [f"--clients {result['clients']}"] if result["clients"] != CLIENTS else []
    flags += [f"--workers {result['workers']}"] if result["workers"] else []
    budget = result.get("quiet", {}).get("budget_s", 180)
    flags += [f"--quiet-budget {budget:g}"] if budget != 180 else []
    command = " ".join([".venv/bin/python bench/serve.py", *flags])
    harness.write_report(output, render(result, harness.machine(), command))


if __name__ == "__main__":
    main()
