#!/usr/bin/env python
"""Ingest benchmark: connector read → redact → segment → hash, the whole pipeline, and the
model calls a growing session costs.

A benchmark script, not a test. It builds a corpus of a few hundred Claude Code and Codex
sessions (~75 MB) from the real transcripts in ../shared/fixtures (claude_3/6/7/10.jsonl,
codex_2.jsonl; read only), each with its own session id, file name, uuids and timestamps,
some grown by repeating their dialogue (new uuids, message ids and times, the copy's first
line parented to the previous copy's last message) so that they hold several segments at the
default `max_input_chars` of 60,000. The corpus is cached under bench/work/ingest/
(git-ignored) and its files are dated two days back, so nothing is "settling". Then:

1. stages: read/parse, clean (finish_blocks + redaction of blocks and hints + git root),
   segment + hash — per unit in turn as the pipeline does, and each stage alone over the
   whole corpus: segments/s, MB/s of input file bytes and of rendered text;
2. redaction alone: `Redactor.redact` over the corpus' block texts (and bench/redact.py's
   synthetic blocks for comparison);
3. end to end: `pipeline.run()` on a fresh data folder (migrated) for each provider —
   `extractive`, and `openai` / `anthropic` through their real SDKs against a zero-latency
   fake model server on 127.0.0.1 (tests/fakes/model_server.py with Nagle's algorithm off,
   answering a valid record to every request) with the default `max_concurrency` 4 — at the
   default `max_input_chars` and again at 4,000 (many more items per MB): items/s, model
   calls, and where the time went (SQL on the main thread, summariser time in the worker
   threads); plus, for extractive, a re-run with nothing changed and one after a cursor reset;
4. a growing session: a grown transcript cut at 10 points with `max_input_chars` 4,000, the
   pipeline run after each cut; model calls counted against the minimum computed from the
   segment hashes before and after each cut, and against re-summarising every segment;
5. part 3's extractive run into a library that already holds 100,000 older items, and the
   per-unit stale-segment delete timed alone at that size;
6. a cProfile of the per-unit stages and of one extractive run, summed by call site.

Hand-written notes at the end of the report (below the notes marker) are kept on rewrite.

Every measured run happens in a child process (Django reads its settings once per process);
timings are the median of `--runs` runs. Every random choice uses a fixed seed.

    .venv/bin/python bench/ingest.py                 # ~75 MB, 5 runs, ~5 min, writes bench/RESULTS-ingest.md
    .venv/bin/python bench/ingest.py --quick         # ~15 MB, 3 runs, extractive + openai, 20k items, no profile
    .venv/bin/python bench/ingest.py --mb 30 --runs 5 --providers extractive --output /tmp/ingest.md
"""

import cProfile
import io
import json
import os
import pstats
import random
import re
import shutil
import statistics
import sys
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import harness
from harness import BENCH_DIR, REPO_DIR

WORK_DIR = harness.WORK_DIR / "ingest"
FIXTURES = REPO_DIR.parent / "shared" / "fixtures"
DEFAULT_OUTPUT = BENCH_DIR / "RESULTS-ingest.md"
SEED = 20_240_601
TWO_DAYS = 2 * 86_400
MB = 1_000_000

# (fixture, kind, weight): claude_3 is a subagent transcript and is laid out as one.
TEMPLATES = (
    ("claude_3.jsonl", "claude_subagent", 20),
    ("claude_6.jsonl", "claude", 25),
    ("claude_7.jsonl", "claude", 25),
    ("claude_10.jsonl", "claude", 5),
    ("codex_2.jsonl", "codex", 25),
)
# How many times a session's dialogue is repeated: (share, low, high).
GROWTH = ((0.60, 1, 1), (0.28, 2, 6), (0.12, 8, 30))
PROJECT_DIRS = ("-home-ana-src-shop-site", "-home-ana-src-atlas-api", "-Users-bo-code-billing-svc",
                "-home-ana-src-jezero", "-Users-bo-code-infra-terraform", "-home-ci-work-mobile-app")
GROWING = (("claude_6.jsonl", 12), ("claude_7.jsonl", 15))   # part 4: fixture, copies
GROW_LIMIT = 4_000
SMALL_LIMIT = 4_000          # part 3 again with small segments: many more items per MB
MODEL_DELAY = 0.25           # seconds per call of the slow fake model (part 3, last paragraph)
CUTS = 10
GOOD_RECORD = {
    "title": "Stripe webhook 400 after signing secret rotation",
    "summary": "The Stripe webhook returned 400. The signing secret had rotated. Updating it fixed the webhook.",
    "questions": ["Why did the Stripe webhook return 400?", "How was STRIPE_WEBHOOK_SECRET updated?",
                  "Which command forwards Stripe webhooks locally?"],
    "atoms": [{"kind": "fix", "text": "Update STRIPE_WEBHOOK_SECRET after a rotation."},
              {"kind": "command", "text": "stripe listen --forward-to localhost:8000/webhooks/stripe"}],
    "project": "shop-site",
}

# Everything below this line in the report is written by hand and kept when the script rewrites it.
NOTES_MARKER = "<!-- notes: kept by bench/ingest.py when it rewrites this file -->"
NOTES_PLACEHOLDER = "## Notes\n\n(none yet)\n"

_ID_RE = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                    rb"|\b(?:msg|toolu|req|call|chatcmpl|resp|rs|fc)_[A-Za-z0-9]{8,}")
_TS_RE = re.compile(rb'"timestamp":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z"')
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


# --- the corpus ---------------------------------------------------------------------------------

class Template:
    """One fixture, ready to be copied with fresh ids and times."""

    def __init__(self, name, kind):
        self.name, self.kind = name, kind
        self.lines = (FIXTURES / name).read_bytes().splitlines(keepends=True)
        self.ids = sorted({m.group() for line in self.lines for m in _ID_RE.finditer(line)})
        self.id_re = re.compile(b"|".join(re.escape(i) for i in sorted(self.ids, key=len, reverse=True)))
        times = [_parse_ts(m.group(1)) for line in self.lines for m in _TS_RE.finditer(line)]
        self.first, self.last = min(times), max(times)
        records = [json.loads(line) for line in self.lines if line.strip()]
        if kind == "codex":
            meta = next(r for r in records if r.get("type") == "session_meta")
            self.session_id = meta["payload"]["id"].encode()
            self.head = [line for line in self.lines if b'"type":"session_meta"' in line]
            self.body = [line for line in self.lines if b'"type":"session_meta"' not in line]
            self.leaf = None
        else:
            self.session_id = next(r["sessionId"] for r in records if r.get("sessionId")).encode()
            self.head, self.body = [], self.lines
            # The tip of the active branch: the last user/assistant/system line (see the connector).
            leaf = [r["uuid"] for r in records if r.get("type") in ("user", "assistant", "system")
                    and isinstance(r.get("uuid"), str) and (kind == "claude_subagent" or not r.get("isSidechain"))]
            self.leaf = leaf[-1].encode() if leaf else None
        self.span = self.last - self.first

    def render(self, rng, session_id, start, copies):
        """The file's bytes: the head once, the body `copies` times with fresh ids and times."""
        out = []
        gap = self.span + timedelta(minutes=rng.randint(2, 90))
        previous_leaf = None
        for copy in range(copies):
            mapping = {self.session_id: session_id}
            for old in self.ids:
                if old != self.session_id:
                    mapping[old] = _fresh_id(rng, old)
            shift = start - self.first + copy * gap
            lines = self.head if copy == 0 else []
            for line in [*lines, *self.body]:
                line = self.id_re.sub(lambda m, mapping=mapping: mapping[m.group()], line)
                line = _TS_RE.sub(lambda m, shift=shift: b'"timestamp":"' + _format_ts(_parse_ts(m.group(1)) + shift)
                                  + b'Z"', line)
                if previous_leaf is not None and b'"parentUuid":null' in line:
                    line = line.replace(b'"parentUuid":null', b'"parentUuid":"' + previous_leaf + b'"', 1)
                out.append(line)
            if self.leaf is not None:
                previous_leaf = mapping[self.leaf]
        return b"".join(out)


def _parse_ts(raw):
    return datetime.fromisoformat(raw.decode()).replace(tzinfo=UTC)


def _format_ts(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%S.").encode() + f"{moment.microsecond // 1000:03d}".encode()


def _fresh_id(rng, old):
    if b"_" in old[:10]:
        prefix, rest = old.split(b"_", 1)
        return prefix + b"_" + "".join(rng.choice(_ALNUM) for _ in rest).encode()
    return str(uuid.UUID(int=rng.getrandbits(128), version=4)).encode()


def _growth(rng):
    roll, total = rng.random(), 0.0
    for share, low, high in GROWTH:
        total += share
        if roll < total:
            return rng.randint(low, high)
    return 1


def build_corpus(target_mb, seed=SEED):
    """Write the corpus (cached by size and seed) and return its folder and manifest."""
    folder = WORK_DIR / f"corpus-{target_mb:g}mb-s{seed}"
    manifest_path = folder / "manifest.json"
    if manifest_path.exists():
        manifest = harness.read_json(manifest_path)
        age_tree(folder)
        return folder, manifest
    if folder.exists():
        shutil.rmtree(folder)
    rng = random.Random(seed)
    templates = [Template(name, kind) for name, kind, _w in TEMPLATES]
    weights = [w for _n, _k, w in TEMPLATES]
    now = datetime.now(UTC).replace(microsecond=0)
    sessions, total = [], 0
    while total < target_mb * MB:
        template = rng.choices(templates, weights)[0]
        copies = _growth(rng)
        session = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        span = copies * (template.span + timedelta(minutes=90))
        start = now - timedelta(days=3) - span - timedelta(seconds=rng.randrange(60 * 86_400))
        data = template.render(rng, session.encode(), start, copies)
        if template.kind == "codex":
            day = start.strftime("%Y/%m/%d")
            path = folder / "codex" / "sessions" / day / f"rollout-{start:%Y-%m-%dT%H-%M-%S}-{session}.jsonl"
            unit = session
        elif template.kind == "claude_subagent":
            parent = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            agent = "agent-" + "".join(rng.choice("0123456789abcdef") for _ in range(8))
            path = folder / "claude" / rng.choice(PROJECT_DIRS) / parent / "subagents" / f"{agent}.jsonl"
            data = data.replace(session.encode(), parent.encode())
            unit = f"{parent}/{agent}"
        else:
            path = folder / "claude" / rng.choice(PROJECT_DIRS) / f"{session}.jsonl"
            unit = session
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        total += len(data)
        sessions.append({"unit": unit, "template": template.name, "copies": copies, "bytes": len(data),
                         "path": str(path.relative_to(folder))})
    manifest = {"target_mb": target_mb, "seed": seed, "sessions": sessions, "bytes": total}
    harness.write_json(manifest_path, manifest)
    age_tree(folder)
    return folder, manifest


def age_tree(folder):
    """Date every transcript two days back (a second apart, so the order is stable)."""
    old = time.time() - TWO_DAYS
    for i, path in enumerate(sorted(folder.rglob("*.jsonl"))):
        os.utime(path, (old - i, old - i))


def grown_session(fixture, copies, seed=SEED):
    """The lines of one grown Claude Code session (part 4) and its session id."""
    rng = random.Random(seed + copies)
    template = Template(fixture, "claude")
    session = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    start = datetime.now(UTC) - timedelta(days=10)
    return session, template.render(rng, session.encode(), start, copies).splitlines(keepends=True)


# --- child processes ------------------------------------------------------------------------------

def setup_django(data, toml, **env):
    """A fresh data folder with `toml` as its configuration, Django set up and migrated."""
    harness.setup_django(data, fresh=True, toml=toml, migrate=True, **env)


def corpus_toml(corpus, summarizer=None, extra=""):
    lines = []
    if summarizer:
        lines.append("[summarizer]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in summarizer.items()]
    lines.append(extra)
    for name, ctype, sub in (("claude", "claude_code", "claude"), ("codex", "codex", "codex")):
        lines += ["[[connectors]]", f'name = "{name}"', f'type = "{ctype}"', f"path = {json.dumps(str(corpus / sub))}"]
    return "\n".join(lines) + "\n"


def units_of(corpus):
    """[(connector config, connector, unit)] for the whole corpus, in discovery order."""
    from django.conf import settings

    from connectors import registry

    out = []
    for config in settings.JEZERO["connectors"]:
        connector = registry.make(config["type"], config)
        out.extend((config, connector, unit) for unit in connector.discover())
    return out


def child_stages(args):
    """Part 1 and 2: the stages per unit and one at a time, and redaction alone."""
    corpus = Path(args["corpus"])
    setup_django(args["data"], corpus_toml(corpus))
    from django.conf import settings

    from connectors.base import finish_blocks
    from library.ingest import redact
    from library.ingest.pipeline import clean
    from library.ingest.segments import segment
    from library.ingest.summarize import configuration

    limit = configuration.effective()["max_input_chars"]
    redactor = redact.Redactor(settings.JEZERO["redaction"]["extra_patterns"])
    units = units_of(corpus)
    in_bytes = sum(os.path.getsize(unit.path) for _c, _k, unit in units)

    def per_unit():
        segments = chars = 0
        for config, connector, unit in units:
            reading = connector.read(unit)
            blocks, _hints = clean(reading, config, redactor)
            if sum(len(b.text) for b in blocks) < config["min_chars"] or not blocks:
                continue
            for seg in segment(unit.id, blocks, limit):
                seg.hash  # noqa: B018 (the property computes the sha256)
                segments += 1
                chars += len(seg.text)
        return segments, chars

    runs = {"per_unit": [], "read": [], "clean": [], "segment": [], "discover": []}
    cpu = {key: [] for key in runs}
    counts = {}

    def clock(key, work):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = work()
        runs[key].append(time.perf_counter() - start)
        cpu[key].append(time.process_time() - start_cpu)
        return result

    def segment_all(cleaned):
        for config, unit, blocks in cleaned:
            if sum(len(b.text) for b in blocks) < config["min_chars"] or not blocks:
                continue
            for seg in segment(unit.id, blocks, limit):
                seg.hash  # noqa: B018

    for _ in range(args["runs"]):
        clock("discover", lambda: units_of(corpus))
        counts["segments"], counts["chars"] = clock("per_unit", per_unit)
        readings = clock("read", lambda: [(config, unit, connector.read(unit)) for config, connector, unit in units])
        cleaned = clock("clean", lambda readings=readings: [(config, unit, clean(reading, config, redactor)[0])
                                                            for config, unit, reading in readings])
        clock("segment", lambda cleaned=cleaned: segment_all(cleaned))

    # What the stages see: blocks before and after redaction, units kept, segments per unit.
    raw_blocks, kept_units, multi, per_unit_segments = [], 0, 0, []
    entries = 0
    for config, _unit, reading in readings:
        entries += len(reading.entries)
        blocks = finish_blocks(reading.entries, user_prompt_markers=config.get("user_prompt_markers", ()),
                               user_prompt_drop_lines=config.get("user_prompt_drop_lines", ()))
        raw_blocks.extend(b.text for b in blocks)
    for config, unit, blocks in cleaned:
        if sum(len(b.text) for b in blocks) < config["min_chars"] or not blocks:
            continue
        kept_units += 1
        n = len(segment(unit.id, blocks, limit))
        per_unit_segments.append(n)
        multi += n > 1
    markers = sum(sum(redactor.count(text).values()) for text in raw_blocks)

    # Redaction alone over the corpus' block texts, one call per block as the pipeline does.
    red = []
    for _ in range(max(args["runs"], 5)):
        start = time.perf_counter()
        for text in raw_blocks:
            redactor.redact(text)
        red.append(time.perf_counter() - start)
    block_chars = sum(len(t) for t in raw_blocks)
    block_bytes = sum(len(t.encode()) for t in raw_blocks)

    # bench/redact.py's synthetic transcript blocks, for comparison with its own figure.
    synthetic = None
    try:
        import redact as bench_redact  # bench/redact.py

        blocks = bench_redact.make_blocks(5 * MB)
        wall, _cpu = bench_redact.measure(blocks, 3)
        synthetic = {"mb": sum(len(b.encode()) for b in blocks) / MB, "runs": wall}
    except Exception as exc:  # noqa: BLE001 - optional comparison only
        synthetic = {"error": repr(exc)}

    return {
        "units": len(units), "units_kept": kept_units, "input_bytes": in_bytes, "entries": entries,
        "segments": counts["segments"], "rendered_chars": counts["chars"], "units_multi_segment": multi,
        "max_segments_per_unit": max(per_unit_segments or [0]), "limit": limit,
        "runs": runs, "cpu": cpu, "blocks": len(raw_blocks), "block_chars": block_chars,
        "block_bytes": block_bytes, "redact_runs": red, "markers": markers, "synthetic": synthetic,
    }


class Timed:
    """A summariser wrapper: counts calls and adds up their time (in the worker threads)."""

    def __init__(self, inner):
        self.inner, self.name = inner, inner.name
        self.calls, self.seconds = 0, 0.0
        self.lock = threading.Lock()
        self.max_concurrency = getattr(inner, "max_concurrency", None)

    def summarize(self, request):
        start = time.perf_counter()
        try:
            return self.inner.summarize(request)
        finally:
            with self.lock:
                self.calls += 1
                self.seconds += time.perf_counter() - start

    def close(self):
        self.inner.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def child_e2e(args):
    """Part 3: pipeline.run() for both connectors on a fresh, migrated data folder."""
    corpus = Path(args["corpus"])
    summarizer = {"provider": args["provider"]}
    if args.get("limit"):
        summarizer["max_input_chars"] = args["limit"]
    if args["provider"] != "extractive":
        summarizer.update(model="bench-model", base_url=args["base_url"])
    env = {"ANTHROPIC_API_KEY": "bench-not-a-key"} if args["provider"] == "anthropic" else {}
    setup_django(args["data"], corpus_toml(corpus, summarizer), **env)
    age_tree(corpus)
    from django.db import connection

    from library.ingest import pipeline
    from library.ingest.summarize import configuration
    from library.models import Item

    prefill = {}
    if args.get("prefill"):
        prefill = prefill_library(args["prefill"])
    sql = {"n": 0, "seconds": 0.0}

    def timer(execute, statement, params, many, context):
        start = time.perf_counter()
        try:
            return execute(statement, params, many, context)
        finally:
            sql["n"] += 1
            sql["seconds"] += time.perf_counter() - start

    def run_all(profile=None):
        model = Timed(configuration.build())
        reports = []
        sql.update(n=0, seconds=0.0)
        start, start_cpu = time.perf_counter(), time.process_time()
        with connection.execute_wrapper(timer), model:
            for name in ("claude", "codex"):
                if profile:
                    profile.enable()
                reports.append(pipeline.run(name, summarizer=model))
                if profile:
                    profile.disable()
        wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
        totals = {key: sum(r.stats()[key] for r in reports) for key in reports[0].COUNTERS}
        return {"wall": wall, "cpu": cpu, "stats": totals, "calls": model.calls, "summarize_seconds": model.seconds,
                "sql_n": sql["n"], "sql_seconds": sql["seconds"],
                "errors": [e for r in reports for e in r.errors][:5]}

    profile = cProfile.Profile() if args.get("profile") else None
    first = run_all(profile)
    first["items"] = Item.objects.count()
    first["workers"] = configuration.effective()["max_concurrency"]
    out = {"first": first, "prefill": prefill}
    if profile:
        out["profile"] = profile_text(profile)
    if args.get("reruns"):
        out["noop"] = run_all()                       # nothing changed: cursors match
        from library.models import UnitCursor

        UnitCursor.objects.all().delete()             # `jezero connector reset`: every unit re-read
        out["reset"] = run_all()
    return out


def prefill_library(n, original_chars=4_000):
    """Put `n` older items into the library (plain SQL, no FTS rows: this part is about the
    items table), then time the pipeline's stale-segment delete and a key-range equivalent."""
    from django.db import connection, transaction

    from library.models import Item

    rng = random.Random(SEED)
    pool = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz      ") for _ in range(200_000))
    columns = ("key, source, original_ref, title, summary, questions, atoms, project, trust, occurred_at, "
               "ingested_at, updated_at, text_hash, original, hints, summarizer, input_tokens, output_tokens")
    sql = f"INSERT INTO items ({columns}) VALUES ({', '.join(['%s'] * 18)})"
    start = time.perf_counter()
    for first in range(0, n, 10_000):
        rows = []
        for _i in range(first, min(first + 10_000, n)):
            at = rng.randrange(0, len(pool) - original_chars)
            rows.append((f"older:{uuid.UUID(int=rng.getrandbits(128))}#{rng.randrange(0, 40)}", "older", "ref",
                         "An older item", "Its summary.", "[]", "[]", None, "own", "2026-01-01 00:00:00",
                         "2026-01-01 00:00:00", "2026-01-01 00:00:00", "0" * 64, pool[at:at + original_chars],
                         "{}", "extractive", 0, 0))
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.executemany(sql, rows)
    fill = time.perf_counter() - start

    def timed(query):
        times = []
        for k in range(15):
            start = time.perf_counter()
            with transaction.atomic():
                query(f"claude:{uuid.UUID(int=k)}")
            times.append(time.perf_counter() - start)
        return med(times)

    # What Run.store does for every stored unit (nothing matches: the common case)...
    stale = timed(lambda unit: Item.objects.filter(key__startswith=f"{unit}#").exclude(key__in=[f"{unit}#0"]).delete())
    # ...and the same rows found through the unique index on key.
    ranged = timed(lambda unit: list(Item.objects.filter(key__gte=f"{unit}#", key__lt=f"{unit}$")
                                     .exclude(key__in=[f"{unit}#0"]).values_list("pk", flat=True)))
    size = (Path(os.environ["JEZERO_DATA_DIR"]) / "jezero.sqlite3").stat().st_size
    return {"items": n, "fill_seconds": fill, "db_bytes": size, "stale_delete_ms": stale * 1000,
            "key_range_ms": ranged * 1000}


def child_growth(args):
    """Part 4: one grown session cut at CUTS points; calls vs the minimum and the naive cost."""
    folder = Path(args["data"]) / "sessions"
    toml = (f"[summarizer]\nmax_input_chars = {GROW_LIMIT}\n"
            f'[[connectors]]\nname = "grow"\ntype = "claude_code"\npath = {json.dumps(str(folder))}\n')
    setup_django(args["data"], toml)
    folder.mkdir()
    from django.conf import settings

    from connectors import registry
    from library.ingest import pipeline, redact
    from library.ingest.segments import segment
    from library.ingest.summarize.extractive import ExtractiveSummarizer
    from library.models import Item

    config = pipeline.connector_config("grow")
    redactor = redact.Redactor(settings.JEZERO["redaction"]["extra_patterns"])
    session, lines = grown_session(args["fixture"], args["copies"])
    path = folder / "-home-ana-src-shop-site" / f"{session}.jsonl"
    path.parent.mkdir()
    model = Timed(ExtractiveSummarizer())
    previous, rows = {}, []
    # Cuts at uneven places (mid-turn, mid-response), the last one the whole session.
    rng = random.Random(SEED)
    cuts = sorted(rng.sample(range(len(lines) // (2 * CUTS), len(lines)), CUTS - 1)) + [len(lines)]
    for k, cut in enumerate(cuts, start=1):
        path.write_bytes(b"".join(lines[:cut]))
        old = time.time() - TWO_DAYS + k
        os.utime(path, (old, old))
        # The minimum, from the segments alone: each new segment id and each changed hash.
        connector = registry.make("claude_code", {"path": str(path)})
        unit = next(iter(connector.discover()))
        blocks, _hints = pipeline.clean(connector.read(unit), config, redactor)
        segments = segment(unit.id, blocks, GROW_LIMIT) if sum(len(b.text) for b in blocks) >= config["min_chars"] else []
        current = {s.id: s.hash for s in segments}
        new = [i for i in current if i not in previous]
        changed = [i for i in current if i in previous and previous[i] != current[i]]
        last_before = max(previous, key=lambda i: int(i.rsplit("#", 1)[1])) if previous else None
        before = model.calls
        report = pipeline.run("grow", summarizer=model)
        rows.append({"cut": k, "lines": cut, "bytes": sum(len(line) for line in lines[:cut]),
                     "chars_sent": report.characters, "chars_all": sum(len(seg.text) for seg in segments),
                     "segments": len(current), "new": len(new), "changed": len(changed),
                     "changed_not_last": len([i for i in changed if i != last_before]),
                     "removed": len([i for i in previous if i not in current]),
                     "calls": model.calls - before, "report_calls": report.model_calls,
                     "items": Item.objects.count()})
        previous = current
    return {"fixture": args["fixture"], "copies": args["copies"], "lines": len(lines), "rows": rows}


def child_profile(args):
    """Part 5: cProfile of the per-unit stages over the corpus."""
    corpus = Path(args["corpus"])
    setup_django(args["data"], corpus_toml(corpus))
    from django.conf import settings

    from library.ingest import redact
    from library.ingest.pipeline import clean
    from library.ingest.segments import segment
    from library.ingest.summarize import configuration

    limit = configuration.effective()["max_input_chars"]
    redactor = redact.Redactor(settings.JEZERO["redaction"]["extra_patterns"])
    units = units_of(corpus)
    profile = cProfile.Profile()
    profile.enable()
    for config, connector, unit in units:
        blocks, _hints = clean(connector.read(unit), config, redactor)
        if sum(len(b.text) for b in blocks) >= config["min_chars"] and blocks:
            for seg in segment(unit.id, blocks, limit):
                seg.hash  # noqa: B018
    profile.disable()
    return {"profile": profile_text(profile)}


# Call sites whose cumulative time says where a run goes: (label, file suffix, function).
PROFILE_SITES = (
    ("Run.execute (the whole run, main thread)", "library/ingest/pipeline.py", "execute"),
    ("discover (stat every file)", "connectors/files.py", "find_files"),
    ("Run.prepare (read → clean → segment → hash → lookup)", "library/ingest/pipeline.py", "prepare"),
    ("connector.read, Claude Code", "connectors/claude_code.py", "read"),
    ("connector.read, Codex", "connectors/codex.py", "read"),
    ("of which json.loads", "json/__init__.py", "loads"),
    ("pipeline.clean (finish_blocks + redaction + git root)", "library/ingest/pipeline.py", "clean"),
    ("of which Redactor.redact", "library/ingest/redact.py", "redact"),
    ("of which projects.find_git_root", "library/ingest/projects.py", "find_git_root"),
    ("segments.segment", "library/ingest/segments.py", "segment"),
    ("Segment.hash (sha256; a property, computed on each access)", "library/ingest/segments.py", "hash"),
    ("Run.finish (wait for the unit's calls, then store)", "library/ingest/pipeline.py", "finish"),
    ("Run.store (one transaction per unit)", "library/ingest/pipeline.py", "store"),
    ("of which Item.save (row + FTS row)", "library/models.py", "save"),
    ("of which the stale-segment delete (ItemQuerySet.delete)", "library/models.py", "delete"),
    ("of which move_cursor (update_or_create)", "library/ingest/pipeline.py", "move_cursor"),
    ("of which projects.project_for", "library/ingest/projects.py", "project_for"),
    ("SQLite statements (cursor.execute/executemany)", "django/db/backends/sqlite3/base.py", "execute"),
    ("SQLite commits", "django/db/backends/base/base.py", "_commit"),
)


def profile_sites(profile):
    stats = pstats.Stats(profile).stats
    rows = []
    for label, suffix, name in PROFILE_SITES:
        calls = seconds = 0
        for (filename, _line, function), (_cc, ncalls, _tt, cumtime, _callers) in stats.items():
            if function == name and filename.endswith(suffix):
                calls += ncalls
                seconds += cumtime
        rows.append((label, calls, seconds))
    return rows


def profile_text(profile, top=30):
    out = {"sites": profile_sites(profile)}
    for key in ("tottime", "cumulative"):
        buffer = io.StringIO()
        stats = pstats.Stats(profile, stream=buffer)
        stats.sort_stats(key).print_stats(top)
        out[key] = _short_paths(buffer.getvalue())
    return out


def _short_paths(text):
    return text.replace(str(REPO_DIR) + "/", "").replace(sys.prefix + "/", "")


CHILDREN = {"stages": child_stages, "e2e": child_e2e, "growth": child_growth, "profile": child_profile}


spawn = partial(harness.spawn, __file__)  # spawn(kind, **args): run CHILDREN[kind](args) in a child process


# --- the fake model server (in the parent, so that it does not share the child's GIL) ------------

def start_server(provider, delay=0.0):
    from dataclasses import replace

    from tests.fakes.model_server import ModelServer, anthropic_tool_reply, openai_reply

    reply = anthropic_tool_reply(GOOD_RECORD) if provider == "anthropic" else openai_reply(GOOD_RECORD)
    reply = replace(reply, delay=delay)

    class InstantServer(ModelServer):
        """Answers every request at once with the same valid record, keeping only a count."""

        calls = 0

        def _next(self, request):
            with self._lock:
                self.calls += 1
            return reply

    server = InstantServer()
    # http.server leaves Nagle's algorithm on and writes the headers and the body in two
    # sends: every answer would then wait for the client's delayed ACK (~40 ms on Linux).
    server._httpd.RequestHandlerClass.disable_nagle_algorithm = True
    return server.start()


# --- the report --------------------------------------------------------------------------------


def med(values):
    return statistics.median(values)


def spread(values):
    return f"{min(values):.2f}–{max(values):.2f}"


def render(results, args, command):
    m, corpus, stages = results["machine"], results["corpus"], results["stages"]
    lines = [
        "# Ingest benchmark",
        "",
        f"`{command}` — {results['date']}, {results['seconds']:.0f} s in all.",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['ram']} RAM; Python {m['python']}, SQLite {m['sqlite']}; "
        f"{m['os']}. Load average (1 min) {results['load_before'][0]:.2f} at the start, {results['load_after'][0]:.2f} at "
        f"the end: other work on the machine inflates wall time, so CPU time is shown beside it. Timings are medians "
        f"of {args.runs} runs (range in brackets), each in a fresh child process.",
        "",
        "## Corpus",
        "",
    ]
    sessions = corpus["sessions"]
    by_template = {}
    for s in sessions:
        row = by_template.setdefault(s["template"], [0, 0, 0])
        row[0] += 1
        row[1] += s["bytes"]
        row[2] += s["copies"] > 1
    lines += [
        f"{len(sessions)} sessions, {corpus['bytes'] / MB:.1f} MB of JSONL, built from the real fixtures in "
        "shared/fixtures (fresh session ids, uuids, message ids and timestamps per session and per repeated copy; "
        f"{sum(s['copies'] > 1 for s in sessions)} sessions grown by repeating their dialogue 2–30 times, the "
        f"largest {max(s['bytes'] for s in sessions) / MB:.1f} MB). claude_3 is a subagent transcript and is laid "
        "out as one (`<session>/subagents/agent-<id>.jsonl`). Files are dated two days back.",
        "",
        *harness.header("fixture", "sessions", "grown", "MB", align="lrrr"),
    ]
    for name, (n, size, grown) in sorted(by_template.items()):
        lines.append(harness.row(name, n, grown, f"{size / MB:.1f}"))
    lines += [
        "",
        f"What the connectors keep of it: {stages['entries']:,} entries → {stages['blocks']:,} blocks, "
        f"{stages['block_chars'] / MB:.2f} M characters of text ({100 * stages['block_chars'] / stages['input_bytes']:.1f} % "
        f"of the input bytes: tool results, thinking, progress and metadata lines are dropped); "
        f"{stages['units_kept']} of {stages['units']} units reach segmentation (the others are under `min_chars` 400), "
        f"giving {stages['segments']:,} segments at `max_input_chars` {stages['limit']:,}; "
        f"{stages['units_multi_segment']} units have several segments (up to {stages['max_segments_per_unit']}). "
        f"Redaction puts {stages['markers']} markers into the corpus.",
        "",
        "## 1. read → redact → segment → hash (no database, no model)",
        "",
        "Per unit in turn, as `pipeline.Run.prepare` does (connector.read, `pipeline.clean` = finish_blocks + "
        "redaction of blocks and hints + git-root lookup, `segments.segment` + sha256), and each stage alone over the "
        "whole corpus:",
        "",
        *harness.header("stage", "seconds", "CPU s", "segments/s", "input MB/s", "text MB/s", align="lrrrrr"),
    ]
    text_mb = stages["rendered_chars"] / MB
    for key, label in (("per_unit", "**all stages, per unit**"), ("discover", "discover (both connectors)"),
                       ("read", "read/parse (connector.read)"), ("clean", "clean (finish_blocks + redact + hints)"),
                       ("segment", "segment + hash")):
        t = med(stages["runs"][key])
        lines.append(harness.row(label, f"{t:.3f} ({spread(stages['runs'][key])})", f"{med(stages['cpu'][key]):.3f}",
                                 f"{stages['segments'] / t:,.0f}", f"{stages['input_bytes'] / MB / t:.1f}",
                                 f"{text_mb / t:.2f}"))
    lines += [
        "",
        "Input MB/s counts the JSONL file bytes; text MB/s counts the rendered segment characters (millions). "
        "Single-threaded; CPU s close to seconds means the stage is CPU-bound.",
        "",
        "## 2. Redaction alone",
        "",
    ]
    red = med(stages["redact_runs"])
    lines.append(f"`Redactor.redact` over the corpus' {stages['blocks']:,} block texts (before redaction, one call per "
                 f"block, mean {stages['block_chars'] // max(stages['blocks'], 1)} characters): "
                 f"**{stages['block_bytes'] / MB / red:.1f} MB/s** ({stages['block_chars'] / MB / red:.1f} M chars/s; "
                 f"{red:.3f} s for {stages['block_bytes'] / MB:.2f} MB, range {spread(stages['redact_runs'])}).")
    syn = stages.get("synthetic") or {}
    if "runs" in syn:
        lines.append(f"bench/redact.py's synthetic blocks ({syn['mb']:.1f} MB, 3 runs): "
                     f"{syn['mb'] / med(syn['runs']):.1f} MB/s.")
    lines += [
        "",
        "## 3. End to end: `pipeline.run()`",
        "",
        "Both connectors (`claude`, `codex`) run one after the other on a fresh, migrated data folder; the clock "
        "covers the two `pipeline.run` calls (not Django start-up or migrations). `openai` and `anthropic` use the "
        "real SDKs against tests/fakes/model_server.py on 127.0.0.1 (in the parent process, answering every request "
        "at once with a valid record); `max_concurrency` 4. *SQL* is the time in SQL statements on the main thread "
        "(lookups, saves, FTS rows; commits not included); *summarise* is the time inside `summarize()` added up over "
        "the worker threads.",
        "",
        *harness.header("provider", "max_input_chars", "seconds", "items/s", "segments/s", "input MB/s",
                        "units seen/stored/too small", "items", "model calls", "CPU s", "SQL s (statements)",
                        "summarise s (thread sum)", align="lrrrrrlrrrrr"),
    ]
    for entry in results["e2e"]:
        firsts = [r["first"] for r in entry["runs"]]
        t = med([f["wall"] for f in firsts])
        f0 = firsts[0]
        s = f0["stats"]
        server = f" (server: {f0['server_calls']:,})" if f0.get("server_calls") is not None else ""
        lines.append(harness.row(
            entry["provider"], f"{entry['limit'] or stages['limit']:,}", f"{t:.2f} ({spread([f['wall'] for f in firsts])})",
            f"**{f0['items'] / t:,.0f}**", f"{s['segments_summarised'] / t:,.0f}", f"{corpus['bytes'] / MB / t:.1f}",
            f"{s['units_seen']}/{s['units_stored']}/{s['units_too_small']}", f"{f0['items']:,}",
            f"{s['model_calls']:,}{server}", f"{med([f['cpu'] for f in firsts]):.2f}",
            f"{med([f['sql_seconds'] for f in firsts]):.2f} ({f0['sql_n']:,})",
            f"{med([f['summarize_seconds'] for f in firsts]):.2f}"))
    reruns = [e for e in results["e2e"] if e["provider"] == "extractive" and "noop" in e["runs"][0]]
    if reruns:
        lines.append("")
    for entry in reruns:
        ext = entry["runs"]
        noop = med([r["noop"]["wall"] for r in ext])
        reset = med([r["reset"]["wall"] for r in ext])
        r0 = ext[0]["reset"]["stats"]
        lines.append(
            f"Re-runs, extractive, max_input_chars {entry['limit'] or stages['limit']:,}, same data folder: nothing "
            f"changed (every cursor matches) {noop:.3f} s; after a cursor reset (every unit re-read, redacted, "
            f"segmented and hashed; {r0['segments_unchanged']:,} segments found unchanged, "
            f"{r0['model_calls']} model calls) {reset:.2f} s.")
    lat = results.get("latency")
    if lat:
        f = lat["first"]
        calls, workers = f["stats"]["model_calls"], f["workers"]
        floor = calls * MODEL_DELAY / workers
        lines += [
            "",
            f"With a model that answers after {MODEL_DELAY} s (openai, max_input_chars {stages['limit']:,}, one run): "
            f"{f['wall']:.2f} s for {calls} calls, {f['items'] / f['wall']:.1f} items/s; {workers} calls at a time "
            f"cannot take less than {floor:.2f} s ({calls} × {MODEL_DELAY} s / {workers}), so the run reached "
            f"{floor / f['wall']:.0%} of the concurrency limit. Summarise time summed over the threads: "
            f"{f['summarize_seconds']:.1f} s.",
        ]
    growth = results["growth"]
    lines += [
        "",
        "## 4. Model calls on a growing session",
        "",
        f"A grown Claude Code session cut at {CUTS} points (seeded random line counts, so mid-turn and mid-response; the last cut is the whole file), `max_input_chars` {GROW_LIMIT:,}, "
        "`pipeline.run` after each cut (extractive, wrapped to count calls), on a fresh data folder. *Minimum* is "
        "computed from the segments alone (connector.read → clean → segment, no database): one call per segment id "
        "not there before plus one per segment whose hash changed. *Naive* re-summarises every segment at every cut.",
        "",
        *harness.header("session", "cut", "lines", "KB", "segments", "new", "changed (not last)", "removed", "calls",
                        "minimum", align="lrrrrrrrrr"),
    ]
    for g in growth:
        for x in g["rows"]:
            lines.append(harness.row(f"{g['fixture']} ×{g['copies']}", x["cut"], x["lines"], f"{x['bytes'] / 1000:.0f}",
                                     x["segments"], x["new"], f"{x['changed']} ({x['changed_not_last']})", x["removed"],
                                     x["calls"], x["new"] + x["changed"]))
    lines += ["", *harness.header("session", "model calls", "minimum", "naive", "calls / naive", "characters sent",
                                  "naive characters", align="lrrrrrr")]
    for g in growth:
        calls = sum(r["calls"] for r in g["rows"])
        minimum = sum(r["new"] + r["changed"] for r in g["rows"])
        naive = sum(r["segments"] for r in g["rows"])
        sent = sum(r["chars_sent"] for r in g["rows"])
        naive_chars = sum(r["chars_all"] for r in g["rows"])
        lines.append(harness.row(f"{g['fixture']} ×{g['copies']}", f"**{calls}**", minimum, naive,
                                 f"{calls / max(naive, 1):.0%}", f"{sent:,}",
                                 f"{naive_chars:,} ({sent / max(naive_chars, 1):.0%})"))
    lines += ["", "*changed (not last)*: segments other than the previous last one whose text changed — claude_6 "
              "holds a rewind (the user re-asked; the abandoned branch is dropped once the new prompt is written), "
              "which rewrites the tail beyond the last segment."]
    lib = results.get("library") or []
    if lib:
        base = next((e for e in results["e2e"] if e["provider"] == "extractive" and not e["limit"]), None)
        base_runs = base["runs"] if base else lib  # without an extractive part 3, compare with itself
        t0 = med([r["first"]["wall"] for r in base_runs])
        c0 = med([r["first"]["cpu"] for r in base_runs])
        t1 = med([r["first"]["wall"] for r in lib])
        c1 = med([r["first"]["cpu"] for r in lib])
        p = lib[0]["prefill"]
        stored = lib[0]["first"]["stats"]["units_stored"]
        lines += [
            "",
            "## 5. The same run into a library that already holds items",
            "",
            f"Part 3's extractive run (max_input_chars {stages['limit']:,}) on a data folder that already holds "
            f"{p['items']:,} older items of {4_000:,} characters (plain SQL rows, no FTS rows; database "
            f"{p['db_bytes'] / MB:.0f} MB). `Run.store` ends every unit with "
            "`Item.objects.filter(key__startswith=f\"{source}:{unit}#\").exclude(key__in=keys).delete()`. On SQLite "
            "`startswith` is `LIKE … ESCAPE '\\'`; SQLite's LIKE is case-insensitive, so it cannot search the "
            "unique (binary) index on `key`: `EXPLAIN QUERY PLAN` gives `SCAN items USING COVERING INDEX "
            "sqlite_autoindex_items_1` for the SELECT of the ids (every key) and `SCAN items` for the DELETE that "
            "follows (every row of the table).",
            "",
            *harness.header("library", "seconds", "CPU s", "per stored unit", align="lrrr"),
            harness.row("empty (part 3)", f"{t0:.2f}", f"{c0:.2f}", ""),
            harness.row(f"{p['items']:,} older items", f"{t1:.2f} ({spread([r['first']['wall'] for r in lib])})",
                        f"{c1:.2f}", f"+{(t1 - t0) / max(stored, 1) * 1000:.1f} ms wall, "
                        f"+{(c1 - c0) / max(stored, 1) * 1000:.1f} ms CPU ({stored} units stored)"),
            "",
            f"The stale-segment delete alone at {p['items']:,} items (median of 15, nothing to delete): "
            f"**{med([r['prefill']['stale_delete_ms'] for r in lib]):.1f} ms**; the same rows found by a key range "
            f"(`key >= 'unit#' AND key < 'unit$'`, `SEARCH items USING COVERING INDEX sqlite_autoindex_items_1`): "
            f"{med([r['prefill']['key_range_ms'] for r in lib]):.2f} ms.",
        ]
    if results.get("profile"):
        e2e_sites, stage_sites = results["profile"]["e2e"], results["profile"]["stages"]
        lines += [
            "",
            "## 6. Where the time goes (cProfile)",
            "",
            "Cumulative time of the main call sites: the per-unit stages over the whole corpus, and one extractive "
            "`pipeline.run` of both connectors on a fresh data folder (main thread only: the summariser's worker "
            "threads are not profiled). Profiling roughly doubles the times; compare the shares, not the seconds. "
            "Full tables: bench/work/ingest/profile-stages.txt and profile-e2e-extractive.txt.",
            "",
            *harness.header("call site", "stages: calls", "stages: s", "pipeline.run: calls", "pipeline.run: s",
                            align="lrrrr"),
        ]
        for (label, n1, s1), (_label, n2, s2) in zip(stage_sites, e2e_sites, strict=True):
            if n1 or n2:
                lines.append(harness.row(label, f"{n1:,}", f"{s1:.3f}", f"{n2:,}", f"{s2:.3f}"))
    return "\n".join(lines) + "\n"


def summary_lines(results):
    st = results["stages"]
    t = med(st["runs"]["per_unit"])
    out = [f"corpus: {len(results['corpus']['sessions'])} sessions, {results['corpus']['bytes'] / MB:.1f} MB; "
           f"{st['segments']} segments",
           f"read→redact→segment→hash: {t:.2f} s, {st['segments'] / t:,.0f} segments/s, "
           f"{st['input_bytes'] / MB / t:.1f} input MB/s, {st['rendered_chars'] / MB / t:.2f} text MB/s "
           f"(read {med(st['runs']['read']):.2f} s, clean {med(st['runs']['clean']):.2f} s, "
           f"segment+hash {med(st['runs']['segment']):.2f} s)",
           f"redaction alone: {st['block_bytes'] / MB / med(st['redact_runs']):.1f} MB/s"]
    for entry in results["e2e"]:
        wall = med([r["first"]["wall"] for r in entry["runs"]])
        f0 = entry["runs"][0]["first"]
        out.append(f"e2e {entry['provider']} (max_input_chars {entry['limit'] or st['limit']}): {wall:.2f} s, "
                   f"{f0['items']} items, {f0['items'] / wall:,.0f} items/s, {f0['stats']['model_calls']} model calls")
    for g in results["growth"]:
        calls = sum(r["calls"] for r in g["rows"])
        minimum = sum(r["new"] + r["changed"] for r in g["rows"])
        naive = sum(r["segments"] for r in g["rows"])
        out.append(f"growing {g['fixture']} x{g['copies']}: {calls} calls, minimum {minimum}, naive {naive}")
    return out


def main(argv=None):
    if harness.child_main(CHILDREN):
        return
    parser = harness.parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="~15 MB corpus, extractive + openai, no profile")
    parser.add_argument("--mb", type=float, help="corpus size in MB (default 75, 15 with --quick)")
    parser.add_argument("--runs", type=int, help="runs per timing; the median is reported (default 5, 3 with --quick)")
    parser.add_argument("--providers", help="comma-separated (default extractive,openai,anthropic)")
    parser.add_argument("--library-items", type=int, help="older items in the library for part 5 "
                        "(default 100,000, 20,000 with --quick)")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile part")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="the Markdown report")
    parser.add_argument("--report-only", action="store_true",
                        help="re-render the report from bench/work/ingest/results.json (no runs)")
    args = parser.parse_args(argv)

    if args.report_only:
        results = harness.read_json(WORK_DIR / "results.json")
        args.runs = results["args"]["runs"]
        write_report(results, args, results["command"])
        return

    started = time.perf_counter()
    mb = args.mb or (15 if args.quick else 75)
    args.runs = args.runs or (3 if args.quick else 5)
    providers = (args.providers or ("extractive,openai" if args.quick else "extractive,openai,anthropic")).split(",")
    profile = not (args.quick or args.no_profile)
    prefill_items = args.library_items or (20_000 if args.quick else 100_000)
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    data = WORK_DIR / "data"
    command = "python bench/ingest.py " + " ".join(argv if argv is not None else sys.argv[1:])

    t = time.perf_counter()
    folder, manifest = build_corpus(mb)
    print(f"corpus: {folder} ({len(manifest['sessions'])} sessions, {manifest['bytes'] / MB:.1f} MB, "
          f"{time.perf_counter() - t:.1f} s)", flush=True)
    results = {"machine": harness.machine(), "date": harness.stamp(), "corpus": manifest,
               "load_before": os.getloadavg()}

    results["stages"] = spawn("stages", corpus=str(folder), data=str(data), runs=args.runs)
    print(f"stages: {results['stages']['_seconds']:.0f} s", flush=True)

    results["e2e"] = []
    for limit in (None, SMALL_LIMIT):
        for provider in providers:
            server = start_server(provider) if provider != "extractive" else None
            runs = []
            try:
                for i in range(args.runs):
                    calls_before = server.calls if server else None
                    out = spawn("e2e", corpus=str(folder), data=str(data), provider=provider, limit=limit,
                                base_url=(server.url + ("" if provider == "anthropic" else "/v1")) if server else None,
                                reruns=provider == "extractive")
                    if server:
                        out["first"]["server_calls"] = server.calls - calls_before
                    runs.append(out)
                    print(f"e2e {provider} limit {limit or 'default'} run {i + 1}: {out['first']['wall']:.2f} s, "
                          f"{out['first']['items']} items, {out['first']['stats']['model_calls']} calls", flush=True)
            finally:
                if server:
                    server.stop()
            results["e2e"].append({"provider": provider, "limit": limit, "runs": runs})

    # The same with a model that takes MODEL_DELAY seconds per call: is max_concurrency used?
    server = start_server("openai", MODEL_DELAY)
    try:
        results["latency"] = spawn("e2e", corpus=str(folder), data=str(data), provider="openai",
                                   base_url=server.url + "/v1")
    finally:
        server.stop()
    print(f"e2e openai with a {MODEL_DELAY} s model: {results['latency']['first']['wall']:.2f} s", flush=True)

    results["library"] = []
    for i in range(args.runs if args.quick else 3):
        out = spawn("e2e", corpus=str(folder), data=str(data), provider="extractive", prefill=prefill_items)
        results["library"].append(out)
        print(f"e2e extractive into {prefill_items:,} older items run {i + 1}: {out['first']['wall']:.2f} s, "
              f"stale-segment delete {out['prefill']['stale_delete_ms']:.1f} ms", flush=True)

    results["growth"] = []
    for fixture, copies in GROWING:
        results["growth"].append(spawn("growth", data=str(data), fixture=fixture, copies=copies))
    print("growth: done", flush=True)

    if profile:
        stages_profile = spawn("profile", corpus=str(folder), data=str(data))["profile"]
        e2e_profile = spawn("e2e", corpus=str(folder), data=str(data), provider="extractive", profile=True)["profile"]
        for name, prof in (("stages", stages_profile), ("e2e-extractive", e2e_profile)):
            (WORK_DIR / f"profile-{name}.txt").write_text(prof["tottime"] + "\n\n" + prof["cumulative"])
        results["profile"] = {"stages": stages_profile["sites"], "e2e": e2e_profile["sites"]}
    shutil.rmtree(data, ignore_errors=True)

    results["seconds"] = time.perf_counter() - started
    results["load_after"] = os.getloadavg()
    results["command"], results["args"] = command.strip(), {"runs": args.runs}
    harness.write_json(WORK_DIR / "results.json", results)
    write_report(results, args, command.strip())


def write_report(results, args, command):
    text = render(results, args, command)
    notes = NOTES_PLACEHOLDER
    if args.output.exists() and NOTES_MARKER in args.output.read_text():
        notes = args.output.read_text().split(NOTES_MARKER, 1)[1].lstrip("\n")
    args.output.write_text(f"{text}\n{NOTES_MARKER}\n\n{notes}")
    print("\n".join(summary_lines(results)))
    print(f"wrote {args.output} ({results['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
