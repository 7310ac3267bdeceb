#!/usr/bin/env python
"""Search latency benchmark: the default `search()` beside its exhaustive reference, records-only
(docs/design.md "The record ranking") and raw FTS5, unfiltered, with each filter and as a client limited to one source.

A benchmark script, not a test. For each library size it uses the data folder
bench/work/serve-<size>/ (git-ignored; shared with bench/serve.py), built once by `build`:
realistic items, each with a realistic `original`, through `Item.objects.bulk_create` (which
keeps every index), then `store.optimize()` (the indexes merged, the postings of common terms
made). A marker file says what the folder holds, so a second run (or bench/serve.py) reuses
it; `--rebuild` makes it anew. In a subprocess per size (Django reads the settings once per
process) it measures, interleaved, per-query latency (p50 / p95 / max, wall clock and process
CPU time) of:

* the floors: raw FTS5 over each index (`bm25` of every matching row, the best 200);
* `search(records_only=True)` (docs/design.md "The record ranking");
* the default `search()`: unfiltered, with `source=`, `project=`, `since=`, and as a client
  whose token allows one source; and without meaning (`meaning_weight` 0);
* the reference, `search(exhaustive=True)` (FTS5 scores every matching item of each index,
  the filters in the same statement), unfiltered and as a client limited to one source;

first on the library as optimized, then after writes since the refresh (1 % of the library
written and 0.1 % rewritten inside a transaction that is rolled back: the fresh table's cost).
Every answer of the default search is compared with the reference's (ids, order, scores,
with the same clock): the report says how many differ. Plus the sizes of the indexes and
postings, and a cProfile of the default search.

The text is not random letters: an order-2 Markov chain trained on the docstrings of the
Python standard library (real English and code vocabulary) plus a fixed list of developer
nouns (projects, tools, error codes, paths, commands). The originals' lengths follow the real
segments of bench/recall.py's library (see ORIGINAL_MEDIAN_CHARS). Every random choice uses
a fixed seed; the records are the same as before originals were added.

    .venv/bin/python bench/search.py                      # 10k and 100k, 5 runs, writes RESULTS-search.md
    .venv/bin/python bench/search.py --sizes 2000 --runs 2 --output /tmp/quick.md
    .venv/bin/python bench/search.py --sizes 1000000 --runs 3 --reference-runs 1 --output bench/RESULTS-search-1m.md
    .venv/bin/python bench/search.py --report-only        # re-render from bench/work/result-*.json
"""

import ast
import os
import random
import re
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import harness
from harness import BENCH_DIR, REPO_DIR, WORK_DIR

REAL_DB = WORK_DIR / "recall" / "base" / "jezero.sqlite3"  # bench/recall.py's real segments
SEED = 20_240_601
QUERY_SEED = 7
BATCH = 2_000
N_QUERIES = 100
ANCHOR = datetime(2026, 11, 1, tzinfo=UTC)  # items fall in the two years before this
SPAN_DAYS = 730

PROJECTS = (
    "atlas-api", "billing-svc", "jezero", "shopfront", "infra-terraform", "mobile-app",
    "data-pipeline", "auth-gateway", "search-indexer", "docs-site", "ml-training", "payments",
    "notifications", "admin-portal", "etl-nightly", "k8s-cluster", "cli-tools", "analytics",
    "web-frontend", "email-worker",
)
SOURCES = ("claude-code", "codex-cli", "chatgpt-export", "git-commits", "slack-export")
SOURCE_WEIGHTS = (45, 20, 15, 12, 8)
TOOLS = (
    "git", "docker", "kubectl", "terraform", "pytest", "npm", "pip", "uv", "ruff", "mypy",
    "nginx", "postgres", "redis", "sqlite", "celery", "gunicorn", "webpack", "vite", "cargo",
    "make", "helm", "ansible", "systemd", "sentry", "grafana", "prometheus", "django", "react",
)
ERRORS = (
    "ENOSPC", "EACCES", "ECONNREFUSED", "ETIMEDOUT", "EADDRINUSE", "ENOENT", "EPIPE", "OOMKilled",
    "SIGSEGV", "SIGKILL", "HTTP 502", "HTTP 429", "HTTP 413", "TypeError", "KeyError",
    "IntegrityError", "OperationalError", "ModuleNotFoundError", "UnicodeDecodeError",
    "RecursionError", "deadlock detected", "database is locked", "CrashLoopBackOff",
    "ImagePullBackOff", "segmentation fault", "certificate verify failed",
)
PATHS = (
    "src/api/views.py", "deploy/docker-compose.yml", ".github/workflows/ci.yml",
    "/etc/nginx/sites-enabled/default", "migrations/0042_add_index.py", "package.json",
    "pyproject.toml", "Makefile", "src/components/Checkout.tsx", "terraform/main.tf",
    "charts/api/values.yaml", "scripts/backfill.py", "config/settings.toml", "Dockerfile",
    "/var/log/syslog", "tests/test_billing.py", "src/lib/cache.rs", "docs/architecture.md",
    "/var/lib/postgresql/data", "webpack.config.js",
)
COMMANDS = (
    "git rebase -i", "git bisect run", "git cherry-pick", "git reflog", "docker compose up -d",
    "docker system prune", "kubectl rollout restart", "kubectl describe pod", "terraform plan",
    "terraform apply", "pytest -x", "npm ci", "pip install -e .", "python manage.py migrate",
    "alembic upgrade head", "systemctl restart nginx", "journalctl -u", "psql -c", "redis-cli",
    "cargo build --release", "uv sync", "ruff check --fix", "make release", "helm upgrade",
    "openssl s_client", "rsync -av", "du -sh", "lsof -i", "strace -f", "curl -v",
)
DEV_NOUNS = PROJECTS + TOOLS + ERRORS + PATHS + COMMANDS
QUESTION_OPENERS = (
    "How do I", "Why does", "What is", "When should we", "Where is", "Which", "How can we",
    "Why did", "What happens when", "Is it safe to", "How to",
)
ATOM_KINDS = ("decision", "rationale", "fix", "command", "error", "fact", "risk")


# --- text: a Markov chain over the standard library's docstrings ------------------------------

def harvest_sentences():
    """Docstring sentences of the stdlib's .py files (tests, IDLE and demos left out), in a
    fixed file order, as word lists; doctest and markup-heavy sentences are dropped."""
    root = Path(sysconfig.get_paths()["stdlib"])
    skip = {"test", "tests", "idlelib", "site-packages", "lib2to3", "turtledemo", "__pycache__"}
    files = sorted(p for p in root.rglob("*.py") if not skip & set(p.relative_to(root).parts))
    sentences, names = [], set()
    for path in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if not isinstance(node, ast.Module) and len(node.name) > 3 and not node.name.startswith("__"):
                names.add(node.name)
            doc = ast.get_docstring(node)
            if not doc:
                continue
            for sentence in re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", doc)):
                if ">>>" in sentence or "::" in sentence or "``" in sentence:
                    continue
                words = sentence.split()
                if 4 <= len(words) <= 40 and sum(w.isalpha() for w in words) >= len(words) * 0.6:
                    sentences.append(words)
    return sentences, sorted(names)


class Text:
    """An order-2 word Markov chain: sentences that read like the stdlib docs but are new."""

    def __init__(self, sentences, identifiers, rng):
        self.rng = rng
        self.starts = [(s[0], s[1]) for s in sentences]
        chain = {}
        for s in sentences:
            for a, b, c in zip(s, s[1:], s[2:], strict=False):
                chain.setdefault((a, b), []).append(c)
        self.chain = chain
        self.identifiers = identifiers

    def words(self, n):
        """About n words: chain sentences until n is reached, cut at n."""
        rng, chain, out = self.rng, self.chain, []
        while len(out) < n:
            a, b = self.starts[rng.randrange(len(self.starts))]
            out += (a, b)
            while len(out) < n:
                nxt = chain.get((a, b))
                if not nxt:
                    break
                c = nxt[rng.randrange(len(nxt))]
                out.append(c)
                if c[-1] in ".?!":
                    break
                a, b = b, c
        return out[:n]

    def sprinkle(self, words, per_word):
        """Insert developer nouns and stdlib identifiers at about `per_word` per word."""
        rng = self.rng
        count = sum(1 for _ in range(len(words)) if rng.random() < per_word)
        for _ in range(count):
            pick = rng.random()
            noun = rng.choice(DEV_NOUNS) if pick < 0.7 else rng.choice(self.identifiers) + "()"
            words.insert(rng.randrange(len(words) + 1), noun)
        return words

    def phrase(self, n, per_word=0.06, end=""):
        text = " ".join(self.sprinkle(self.words(n), per_word)).rstrip(".,;:!?")
        return text[:1].upper() + text[1:] + end


def length(rng, mean, spread, low):
    return max(low, int(rng.gauss(mean, spread)))


def make_record(text, rng, i):
    title = text.phrase(length(rng, 10, 2, 5), per_word=0.08)
    summary = " ".join(
        text.phrase(n, end=".") for n in _split(length(rng, 60, 15, 25), rng))
    questions = [
        f"{rng.choice(QUESTION_OPENERS)} {text.phrase(length(rng, 9, 3, 4), per_word=0.1).lower()}?"
        for _ in range(rng.randint(3, 6))
    ]
    atoms = []
    for _ in range(rng.randint(7, 13)):
        kind = rng.choice(ATOM_KINDS)
        body = text.phrase(length(rng, 13, 4, 5), end=".")
        if kind == "command":
            body = f"Run `{rng.choice(COMMANDS)} {rng.choice(PATHS)}`: {body}"
        elif kind == "error":
            body = f"{rng.choice(ERRORS)} from {rng.choice(TOOLS)}: {body}"
        atoms.append({"kind": kind, "text": body})
    project = None if rng.random() < 0.05 else PROJECTS[min(int(rng.paretovariate(1.2)) - 1, 19)]
    source = rng.choices(SOURCES, SOURCE_WEIGHTS)[0]
    occurred = ANCHOR - timedelta(seconds=rng.randrange(SPAN_DAYS * 86_400))
    return dict(key=f"bench:{source}:{i:07d}", source=source, title=title, summary=summary,
                questions=questions, atoms=atoms, project=project,
                trust="own" if rng.random() < 0.9 else "external", occurred_at=occurred)


# Calibrated on the real segments of the recall library (bench/work/recall/base, 170 items of
# 168 sessions, `SELECT length(original) FROM items`): median 9,806 characters, mean 15,342,
# 5 % above 57,000 (segments are cut at max_input_chars). A log-normal of median 9,800 and
# σ 1.05, clamped to 700–60,000, has median 9,800 and mean ≈15,320.
ORIGINAL_MEDIAN_CHARS = 9_800
ORIGINAL_SIGMA = 1.05
ORIGINAL_MIN_CHARS = 700        # the real library's shortest segment: 731
ORIGINAL_MAX_CHARS = 60_000     # max_input_chars: no segment is longer
ORIGINAL_SEED = SEED + 1        # originals draw from their own stream: the records stay as before
POOL_SEED = SEED + 2
POOL_SENTENCES = 40_000
POOL_REQUESTS = 8_000
TOOL_NAMES = ("Bash", "Read", "Edit", "Grep", "Write", "WebFetch")


class OriginalPool:
    """The pieces originals are assembled from, generated once per Text from the Markov chain
    with their own seed: 40,000 assistant sentences and 8,000 user requests (developer nouns
    and identifiers sprinkled in as in the records), and the chain's words for URLs.

    Generating every original word by word through the chain runs at about 7 MB/s, i.e.
    about 220 s for the 1.5 GB of original text of 100,000 items; picking whole sentences
    from the pool is about ten times faster. The chain has 70,000 states and 164,000
    transitions learnt from 15,000 docstring sentences, so its output is mostly those
    sentences recombined: a pool of 40,000 of them holds about as much variety (vocabulary,
    word pairs) as the chain can produce."""

    def __init__(self, text):
        gen = Text.__new__(Text)
        gen.__dict__.update(text.__dict__)
        gen.rng = rng = random.Random(POOL_SEED)
        self.sentences = [gen.phrase(rng.randint(8, 20), per_word=0.05, end=".") for _ in range(POOL_SENTENCES)]
        self.requests = ["user: " + gen.phrase(length(rng, 22, 12, 4), per_word=0.08, end=rng.choice("?.."))
                         for _ in range(POOL_REQUESTS)]
        self.words = sorted({w.lower() for pair in text.chain for w in pair if w.isalpha() and len(w) > 2})


def original_pool(text):
    pool = getattr(text, "original_pool", None)
    if pool is None:
        pool = text.original_pool = OriginalPool(text)
    return pool


def make_original(text, rng, median=ORIGINAL_MEDIAN_CHARS, sigma=ORIGINAL_SIGMA):
    """A synthetic `original` shaped like a real segment's: `user:` requests, `assistant:`
    paragraphs and one-line `tool:` calls, blank-line separated, its length drawn from a
    log-normal distribution (median `median`, σ `sigma`, clamped to 700–60,000 characters:
    the shape of the recall corpus's segments) and cut there at a space. The pieces come from
    `original_pool(text)`; every choice uses `rng`."""
    pool = original_pool(text)
    sentences, requests, words = pool.sentences, pool.requests, pool.words
    target = int(min(ORIGINAL_MAX_CHARS, max(ORIGINAL_MIN_CHARS, rng.lognormvariate(0, sigma) * median)))
    blocks, size = [], 0
    while size < target:
        pick = rng.random()
        if not blocks or pick < 0.12:
            block = requests[rng.randrange(len(requests))]
        elif pick < 0.472:  # 40 % of the rest
            tool = TOOL_NAMES[rng.randrange(len(TOOL_NAMES))]
            if tool == "Bash":
                arg = f"{rng.choice(COMMANDS)} {rng.choice(PATHS)}"
            elif tool == "WebFetch":
                arg = f"https://docs.example.org/{rng.choice(TOOLS)}/{words[rng.randrange(len(words))]}"
            else:
                arg = rng.choice(PATHS)
            block = f"tool: {tool}: {arg}"
        else:  # a paragraph of about 70 words (8–250), in sentences of 8–20
            block = "assistant: " + " ".join(rng.choices(sentences, k=max(1, round(length(rng, 70, 45, 8) / 14))))
        blocks.append(block)
        size += len(block) + 2
    out = "\n\n".join(blocks)
    if len(out) > target:
        cut = out.rfind(" ", target - 40, target)
        out = out[:cut if cut > 0 else target].rstrip()
    return out


def _split(total, rng):
    """A summary's words as sentences of 8–20 words."""
    parts = []
    while total > 0:
        n = min(total, rng.randint(8, 20))
        parts.append(n)
        total -= n
    return parts


def make_queries(text, sentences, n=N_QUERIES):
    """Deterministic realistic queries: 2–4 distinctive words, word fragments, quoted
    phrases, developer nouns with a word. Distinctive = not among the 300 commonest words."""
    rng = random.Random(QUERY_SEED)
    text.rng = rng
    freq = {}
    for s in sentences:
        for w in s:
            w = w.strip(".,;:!?()'\"").lower()
            if w.isalpha() and len(w) >= 4:
                freq[w] = freq.get(w, 0) + 1
    ranked = sorted(freq, key=lambda w: (-freq[w], w))
    distinctive = ranked[300:4000]
    long_words = [w for w in distinctive if len(w) >= 8]
    queries = []
    for i in range(n):
        kind = i % 5
        if kind in (0, 1):  # 2–4 distinctive words
            q = " ".join(rng.sample(distinctive, rng.randint(2, 4)))
        elif kind == 2:  # a fragment such as `migrat`, sometimes with a word
            word = rng.choice(long_words)
            q = word[: rng.randint(5, 7)]
            if rng.random() < 0.5:
                q += " " + rng.choice(distinctive)
        elif kind == 3:  # a quoted phrase from the text, sometimes with a word
            words = [w.lower() for w in text.words(12)]
            pairs = [(a, b) for a, b in zip(words, words[1:], strict=False)
                     if a.isalpha() and b.isalpha() and len(a) + len(b) >= 7]
            q = '"%s %s"' % (rng.choice(pairs) if pairs else ("connection", "refused"))
            if rng.random() < 0.5:
                q += " " + rng.choice(distinctive)
        else:  # a developer noun and a word
            q = f"{rng.choice(ERRORS + COMMANDS + PROJECTS + TOOLS)} {rng.choice(distinctive)}"
        queries.append(q)
    return queries


# --- the library: built once, reused (bench/serve.py uses it too) ----------------------------------

MARKER = "serve-bench.json"


def library_folder(size):
    return WORK_DIR / f"serve-{size}"


BUILDING = "serve-bench-building.json"   # a build under way (or stopped): what it is making


def _wanted(size):
    return {"size": size, "seed": SEED, "python": sys.version.split()[0], "originals": ORIGINAL_SEED}


def marker_ok(data, size, name=MARKER):
    """What the folder's marker (`name`) says it holds, when it holds (or, for BUILDING, is
    making) this generator's library of `size` items; None otherwise."""
    try:
        marker = harness.read_json(data / name)
    except (OSError, ValueError):
        return None
    return marker if all(marker.get(k) == v for k, v in _wanted(size).items()) else None


def build(size, data, log):
    """Fill a migrated library (this process has Django set up) and optimise it. A build that
    was stopped (a batch is one transaction, so the library holds whole batches) goes on
    where it stopped: the generator makes the items it already holds again, to reach the
    same random state, and stores only the rest."""
    from django.db import connection, transaction

    from library import postings, store
    from library.indexes import WORD_INDEXES
    from library.models import Item

    t = time.perf_counter()
    harness.write_json(data / BUILDING, {**_wanted(size), "started_at": harness.stamp()})
    held = Item.objects.count()
    if held % BATCH or held > size:
        raise SystemExit(f"{data} holds {held:,} items, not whole batches of this build: use --rebuild")
    if held:
        log(f"going on with a stopped build: {held:,} items are there")
        # A base of the postings made of the part built so far (an older bench's `init` on
        # going on optimised it) would have every new item written a second time, into the
        # fresh table: forget it, as a library that is emptied does; the build's own optimize
        # makes the base.
        with transaction.atomic(), connection.cursor() as cursor:
            for index in WORD_INDEXES:
                postings.clear(cursor, index)
    sentences, identifiers = harvest_sentences()
    rng = random.Random(SEED)
    text = Text(sentences, identifiers, rng)
    original_pool(text)
    orng = random.Random(ORIGINAL_SEED)
    for start in range(0, size, BATCH):
        records = [make_record(text, rng, i) for i in range(start, min(size, start + BATCH))]
        for r in records:
            r["original"] = make_original(text, orng)
        if start < held:
            continue
        with transaction.atomic():
            Item.objects.bulk_create([Item(**r) for r in records])
        if (start // BATCH) % 10 == 9:
            log(f"built {start + BATCH:,} items ({time.perf_counter() - t:.0f} s)")
    build_s = time.perf_counter() - t
    t = time.perf_counter()
    store.optimize()
    optimize_s = time.perf_counter() - t
    log(f"built {size:,} items in {build_s:.0f} s, optimize {optimize_s:.1f} s")
    marker = {"size": size, "seed": SEED, "originals": ORIGINAL_SEED, "python": sys.version.split()[0],
              "build_s": build_s, "optimize_s": optimize_s, "built_at": harness.stamp(),
              **({"went_on_from": held} if held else {})}
    harness.write_json(data / MARKER, marker)
    (data / BUILDING).unlink(missing_ok=True)
    return marker


def open_library(size, rebuild=False, secret="bench-serve", **extra):
    """Point this process at the size's data folder (HOME an empty folder: `jezero init` finds
    no agent folders), build it unless a valid one is there, set Django up. Returns the marker."""
    data = library_folder(size)
    home = Path(tempfile.mkdtemp(prefix="jezero-bench-home-"))
    harness.use_data_dir(data, secret, HOME=str(home), **extra)
    marker = None if rebuild else marker_ok(data, size)
    if marker is None and (rebuild or not marker_ok(data, size, BUILDING)):
        shutil.rmtree(data, ignore_errors=True)
    log = harness.logger(f"[{size}]")
    if marker is None and marker_ok(data, size, BUILDING):
        # A stopped build goes on: only the migrations. `init` would also optimise the part
        # built so far (its postings are due), work that the build's own optimize redoes.
        harness.setup_django(migrate=True)
    else:
        harness.jezero("init")   # idempotent: migrations (and the postings of an upgraded library), static files
        harness.setup_django()
    from library.models import Item

    if marker is None:
        marker = build(size, data, log)
    items = Item.objects.count()
    if items != size:
        raise SystemExit(f"{data} holds {items:,} items, not {size:,}: use --rebuild")
    return marker


# --- measuring ---------------------------------------------------------------------------------

def _shadow(tables, table):
    """The sizes of one FTS5 table's shadow tables (`<table>_data`, `_idx`, `_content`, …)."""
    part = {name[len(table) + 1:]: size for name, size in tables.items()
            if name.startswith(table + "_") and name.removeprefix(table + "_") in ("data", "idx", "content",
                                                                                  "docsize", "config")}
    return {"total": sum(part.values()), "index": part.get("data", 0) + part.get("idx", 0),
            "content": part.get("content", 0), "docsize": part.get("docsize", 0)}


def real_originals(db_path=REAL_DB):
    """The real segments' sizes in the recall library (read-only), and its original-text
    index's size, or None without that library."""
    import sqlite3  # in the child, after the swap: the bundled SQLite (dbstat comes from harness)

    if not Path(db_path).exists():
        return None
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    lengths = [row[0] for row in con.execute("SELECT length(original) FROM items")]
    con.close()
    tables = harness.dbstat(db_path)
    return {"path": str(Path(db_path).relative_to(REPO_DIR)), "items": len(lengths),
            "median": statistics.median(lengths), "mean": statistics.mean(lengths), "max": max(lengths),
            "chars": sum(lengths), "original_index": _shadow(tables, "items_original_fts"),
            "record_index": _shadow(tables, "items_fts")}


def sizes(connection, db_path):
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        cursor.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'items' AND type IN ('table', 'index')")
        items_btrees = {row[0] for row in cursor.fetchall()}
    tables = harness.dbstat(db_path)
    wal = Path(str(db_path) + "-wal")
    beside = ("_postings", "_lengths", "_changed", "_fresh")
    return {
        "record": _shadow(tables, "items_fts"),
        "original": _shadow(tables, "items_original_fts"),
        "words": _shadow(tables, "items_words"),
        "vectors": tables.get("items_vectors", 0),
        "postings": {name: sum(size for table, size in tables.items()
                               if table.startswith(tuple(index + part for part in beside)))
                     for name, index in (("original", "items_original_fts"), ("record", "items_words"))},
        "items_table": sum(size for name, size in tables.items() if name in items_btrees),
        "db_file": db_path.stat().st_size + (wal.stat().st_size if wal.exists() else 0),
        "tables": tables,
    }


# The variants timed, in the order of the report; the first two are raw FTS5 queries.
VARIANTS = ("record_floor", "original_floor", "records_only", "fused", "fused_source", "fused_project",
            "fused_since", "fused_client", "fused_no_meaning", "reference", "reference_client")
REFERENCES = ("reference", "reference_client")
AFTER_WRITES = ("fused", "fused_client", "reference", "reference_client")
ANCHOR_NOW = datetime(2026, 11, 1, tzinfo=UTC)   # the clock of every search (items fall in the two years before)


def child(args):
    """One size in its own process."""
    size, runs, reference_runs = args["size"], args["runs"], args["reference_runs"]
    result_head = harness.git_head("library")  # the code this process imports, read before it can change
    load_start = os.getloadavg()
    marker = open_library(size, rebuild=args["rebuild"])
    from django.conf import settings
    from django.db import connection, transaction

    from library import indexes, store, terms
    from library import search as S
    from library.models import Item

    db_path = Path(settings.DATABASES["default"]["NAME"])
    config = settings.JEZERO["search"]
    result = {"size": size, "runs": runs, "reference_runs": reference_runs, "sqlite": connection.Database.sqlite_version,
              "tokenizer": store.configured_tokenizer(), "original_tokenizer": store.configured_original_tokenizer(),
              "search_config": dict(config), "build": marker}
    log = harness.logger(f"[{size}]")
    result["real_originals"] = real_originals()
    lengths = [len(text) for text in Item.objects.values_list("original", flat=True).iterator()] \
        if size <= 200_000 else None
    if lengths:
        result["originals"] = {"chars": sum(lengths), "median": statistics.median(lengths),
                               "mean": statistics.mean(lengths), "max": max(lengths)}

    sentences, identifiers = harvest_sentences()
    text = Text(sentences, identifiers, random.Random(SEED))
    queries = make_queries(text, sentences)
    # The floors are the raw queries of every term (library.terms), which is what FTS5 alone costs.
    keep = [(q, S.build_match_query(q), terms.build_original_query(q)) for q in queries]
    keep = [row for row in keep if row[1] and row[2]]  # both indexes have something to look up
    queries = [q for q, _, _ in keep]
    matches, original_matches = [m for _, m, _ in keep], [o for _, _, o in keep]
    result["queries"] = queries
    n = len(queries)
    qrng = random.Random(QUERY_SEED)
    qsources = [SOURCES[i % len(SOURCES)] for i in range(n)]
    qprojects = [PROJECTS[(i * 7) % len(PROJECTS)] for i in range(n)]
    qsince = [(ANCHOR_NOW - timedelta(days=qrng.uniform(30, 400))).isoformat() for _ in range(n)]
    qclients = [[SOURCES[(i * 3) % len(SOURCES)]] for i in range(n)]
    rfts, ofts = indexes.RECORD_TABLE, indexes.ORIGINAL.table
    with connection.cursor() as cursor:
        counts = {"record": [], "original": []}
        for m, o in zip(matches, original_matches, strict=True):
            cursor.execute(f"SELECT count(*) FROM {rfts} WHERE {rfts} MATCH %s", [m])
            counts["record"].append(cursor.fetchone()[0])
            cursor.execute(f"SELECT count(*) FROM {ofts} WHERE {ofts} MATCH %s", [o])
            counts["original"].append(cursor.fetchone()[0])
    result["matches_per_query"] = {k: harness.percentiles(v) for k, v in counts.items()}

    weights = ", ".join(f"{w:.1f}" for w in indexes.RECORD_WEIGHTS)
    record_floor_sql = (f"SELECT rowid, bm25({rfts}, {weights}) AS rank FROM {rfts} "
                        f"WHERE {rfts} MATCH %s ORDER BY rank LIMIT 200")
    original_floor_sql = (f"SELECT rowid, bm25({ofts}) AS rank FROM {ofts} "
                          f"WHERE {ofts} MATCH %s ORDER BY rank LIMIT 200")
    everything = S.ALL_SOURCES
    perf, cpu = time.perf_counter_ns, time.process_time_ns

    def floor(sql, expressions):
        def run(i):
            t0, c0 = perf(), cpu()
            with connection.cursor() as cursor:
                cursor.execute(sql, [expressions[i]])
                cursor.fetchall()
            return perf() - t0, cpu() - c0
        return run

    def searching(changes=None, allowed=None, **kw):
        """`changes`: `[search]` settings for this variant (set and restored outside the timing);
        `allowed`: the caller's sources per query (default: every source)."""
        per_query = {k: v for k, v in kw.items() if isinstance(v, list)}
        fixed = {k: v for k, v in kw.items() if k not in per_query}
        conf = settings.JEZERO["search"]

        def run(i):
            args = {k: v[i] for k, v in per_query.items()}
            saved = {k: conf[k] for k in changes or {}}
            conf.update(changes or {})
            try:
                t0, c0 = perf(), cpu()
                S.search(queries[i], allowed_sources=allowed[i] if allowed else everything, now=ANCHOR_NOW,
                         **fixed, **args)
                return perf() - t0, cpu() - c0
            finally:
                conf.update(saved)
        return run

    variants = {
        "record_floor": floor(record_floor_sql, matches),
        "original_floor": floor(original_floor_sql, original_matches),
        "records_only": searching(records_only=True),
        "fused": searching(),
        "fused_source": searching(source=qsources),
        "fused_project": searching(project=qprojects),
        "fused_since": searching(since=qsince),
        "fused_client": searching(allowed=qclients),
        "fused_no_meaning": searching({"meaning_weight": 0.0}),
        "reference": searching(exhaustive=True),
        "reference_client": searching(allowed=qclients, exhaustive=True),
    }
    assert tuple(variants) == VARIANTS

    def differing():
        """How many answers of the default search differ from the reference's, per filter."""
        asks = {"unfiltered": lambda i: {}, "source": lambda i: {"source": qsources[i]},
                "project": lambda i: {"project": qprojects[i]}, "since": lambda i: {"since": qsince[i]},
                "client": lambda i: {"allowed_sources": qclients[i]}}
        out = {}
        for name, ask in asks.items():
            bad = 0
            for i in range(n):
                asked = {"allowed_sources": everything, "now": ANCHOR_NOW, "limit": 50, **ask(i)}
                mine = [(h.id, h.score) for h in S.search(queries[i], **asked).hits]
                theirs = [(h.id, h.score) for h in S.search(queries[i], exhaustive=True, **asked).hits]
                bad += [x for x, _ in mine] != [x for x, _ in theirs] or any(
                    abs(a - b) > 1e-9 * max(1.0, abs(b)) for (_, a), (_, b) in zip(mine, theirs, strict=True))
            out[name] = bad
        return out

    def measure(label, names):
        """Interleaved: each query runs through every variant back to back (variant order
        rotating), so a load spike from another process hits all variants alike. The reference
        variants run `reference_runs` times, the others `runs` times."""
        order = list(range(n))
        for name in names:   # warm-up: every variant over every query (pages, caches)
            for i in order:
                variants[name](i)
        per_run = {name: {"wall": [], "cpu": []} for name in names}
        for run in range(runs):
            random.Random(run).shuffle(order)
            timed = [name for name in names if name not in REFERENCES or run < reference_runs]
            samples = {name: {} for name in timed}
            for j, i in enumerate(order):
                for name in timed[j % len(timed):] + timed[:j % len(timed)]:
                    samples[name][i] = variants[name](i)  # (wall ns, CPU ns)
            for name in timed:
                for clock, c in (("wall", 0), ("cpu", 1)):
                    per_run[name][clock].append(harness.latency_ms([v[c] for v in samples[name].values()]))
        out = {name: {clock: {k: statistics.median(s[k] for s in per_run[name][clock]) for k in ("p50", "p95", "max")}
                      for clock in ("wall", "cpu")} for name in names}
        log(f"{label} (wall p50/p95 ms): " + ", ".join(
            f"{k} {v['wall']['p50']:.1f}/{v['wall']['p95']:.1f}" for k, v in out.items()))
        return out

    def profile():
        """cProfile of one pass of the default search() over every query: the top functions by
        own time, and the cumulative time of the search's stages."""
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for q in queries:
            S.search(q, allowed_sources=everything, now=ANCHOR_NOW)
        prof.disable()
        stats = pstats.Stats(prof)
        total = stats.total_tt
        rows, stages = [], []
        for (file, line, func), (_cc, nc, tt, ct, _) in stats.stats.items():
            where = f"{Path(file).name}:{line}({func})" if file != "~" else re.sub(r" at 0x[0-9a-f]+", "", func)
            rows.append({"where": where, "calls": nc, "tottime_ms": tt * 1e3, "share": tt / total})
            if Path(file).parent.name == "library" and Path(file).name in (
                    "search.py", "ranking.py", "postings.py", "catalog.py", "snippets.py", "meaning.py"):
                stages.append({"where": where, "calls": nc, "cumtime_ms": ct * 1e3, "share": ct / total})
        rows.sort(key=lambda r: -r["tottime_ms"])
        stages.sort(key=lambda r: -r["cumtime_ms"])
        return {"total_ms": total * 1e3, "queries": n, "top": rows[:15], "stages": stages[:15]}

    result["sizes"] = sizes(connection, db_path)
    result["differing"] = differing()
    log(f"answers that differ from the reference: {result['differing']}")
    result["optimized"] = measure("as optimized", VARIANTS)
    result["profile"] = profile()

    if not args.get("writes", True):   # --no-writes
        return _finish(result, result_head, load_start)
    # Writes since the refresh: 1 % of the library new, 0.1 % rewritten, rolled back after.
    written, rewritten = max(size // 100, 50), max(size // 1000, 10)
    wrng = random.Random(SEED + 7)
    wtext = Text(sentences, identifiers, wrng)
    original_pool(wtext)

    class Rollback(Exception):
        pass

    try:
        with transaction.atomic():
            t = time.perf_counter()
            records = [make_record(wtext, wrng, size + i) for i in range(written)]
            for r in records:
                r["original"] = make_original(wtext, wrng)
                r["key"] = f"written:{r['key']}"
            Item.objects.bulk_create([Item(**r) for r in records])
            changed = list(Item.objects.order_by("?")[:rewritten])
            for item in changed:
                item.original = make_original(wtext, wrng)
            Item.objects.bulk_update(changed, ["original"])
            result["writes"] = {"written": written, "rewritten": rewritten, "seconds": time.perf_counter() - t}
            result["differing_after_writes"] = differing()
            log(f"after writes: answers that differ from the reference: {result['differing_after_writes']}")
            result["after_writes"] = measure("after writes", AFTER_WRITES)
            raise Rollback
    except Rollback:
        pass
    return _finish(result, result_head, load_start)


def _finish(result, head, load_start):
    result["finished_at"] = harness.stamp()
    result["library_commit"] = head
    result["load_average"] = {"start": load_start, "end": os.getloadavg()}
    return result


# --- report ------------------------------------------------------------------------------------

def mb(n):
    return f"{n / 1e6:,.1f} MB"


LABELS = {
    "record_floor": "record floor (raw FTS5, trigram record index)",
    "original_floor": "original floor (raw FTS5)",
    "records_only": "`search(records_only=True)` (the record ranking)",
    "fused": "**`search()`, unfiltered**",
    "fused_source": "`search(source=)`",
    "fused_project": "`search(project=)`",
    "fused_since": "`search(since=)`",
    "fused_client": "**`search()` as a client limited to one source**",
    "fused_no_meaning": "`search()`, not re-ranked by meaning",
    "reference": "reference `search(exhaustive=True)`, unfiltered",
    "reference_client": "reference, as a client limited to one source",
}
TABLE_HEAD = ("ms", "wall p50", "wall p95", "wall max", "CPU p50", "CPU p95", "p95 ÷ reference p95 (wall)")


def _row(label, v, reference):
    w, c = v["wall"], v["cpu"]
    cells = [label, *(f"{x[k]:.2f}" for x in (w, c) for k in ("p50", "p95", "max") if not (x is c and k == "max"))]
    return harness.row(*cells, f"{w['p95'] / reference['wall']['p95']:.2f}" if reference else "")


def render(results, info, command):
    first = results[0]
    config = first["search_config"]
    lines = ["# Search benchmark: the default search beside its exhaustive reference", ""]
    lines += [
        f"- Date: {results[-1].get('finished_at', '?')}",
        f"- Machine: {info['cpu']}, {info['cores']} cores, {info['ram']} RAM, {info['os']}",
        f"- Python {info['python']}, SQLite {first['sqlite']} (bundled pysqlite3); record index tokenizer "
        f"`{first['tokenizer']}`, word indexes `{first['original_tokenizer']}`; "
        f"candidate_pool {config['candidate_pool']}, record_weight {config['record_weight']}, "
        f"original_weight {config['original_weight']}, meaning_weight {config['meaning_weight']}, "
        f"default limit {config['default_limit']}",
        f"- Command: `{command}`",
        f"- {len(first['queries'])} fixed queries (2–4 distinctive words, word fragments, quoted phrases, "
        "error codes/commands/projects with a word; those with nothing to look up in either index left out). "
        "One untimed warm-up pass of every variant over every query, then "
        f"{first['runs']} timed runs ({first['reference_runs']} of the reference variants); in each run every "
        "query goes through all variants back to back (order rotating). Each figure is the **median over the "
        "runs** of that run's p50 / p95 / max, in ms; *CPU* is the process's CPU time. The filtered variants use "
        "one source, one project, a `since` between 30 and 400 days back, or a client allowed one source, per "
        "query in rotation. Every search runs with the same clock (`now` = 2026-11-01).",
        "- Floors: `SELECT rowid, bm25(items_fts, 2.0, 1.0, 1.5, 1.5, 0.5) AS rank FROM items_fts WHERE items_fts "
        "MATCH ? ORDER BY rank LIMIT 200` with `build_match_query(q)`, and the same over `items_original_fts` "
        "with `build_original_query(q)`: what FTS5 alone costs to score every matching row of one index.",
        "",
        "## Headline (computed)", "",
        *harness.header("items", "default p50 / p95 (wall)", "as a client, one source", "with `source=`",
                        "with `project=`", "with `since=`", "reference p50 / p95", "answers ≠ reference"),
    ]
    for r in results:
        def cell(name, o=r["optimized"]):
            return f"{o[name]['wall']['p50']:.1f} / {o[name]['wall']['p95']:.1f} ms"

        bad = sum(r["differing"].values()) + sum(r.get("differing_after_writes", {}).values())
        asked = len(r["queries"]) * (len(r["differing"]) + len(r.get("differing_after_writes", {})))
        lines.append(harness.row(f"{r['size']:,}", cell("fused"), cell("fused_client"), cell("fused_source"),
                                 cell("fused_project"), cell("fused_since"), cell("reference"),
                                 f"{bad} of {asked}"))
    lines.append("")
    for r in results:
        s, m, b = r["sizes"], r["matches_per_query"], r["build"]
        lines += [f"## {r['size']:,} items", ""]
        la = r["load_average"]
        lines += [f"Code measured: commit {r.get('library_commit', '?')}. Load average (1/5/15 min) at the start: "
                  f"{'/'.join(f'{x:.1f}' for x in la['start'])}, at the end: "
                  f"{'/'.join(f'{x:.1f}' for x in la['end'])} ({info['cores']} cores). Library built "
                  f"{b.get('built_at', '?')}: `bulk_create` {b.get('build_s', 0):.0f} s, `store.optimize()` "
                  f"{b.get('optimize_s', 0):.0f} s.", ""]
        if r.get("originals"):
            o = r["originals"]
            lines += [f"Originals: median {o['median']:,.0f}, mean {o['mean']:,.0f}, max {o['max']:,} characters.", ""]
        lines += [f"Rows matching a query in the record index: p50 {m['record']['p50']:,}, p95 {m['record']['p95']:,}, "
                  f"max {m['record']['max']:,}; in the original-text index: p50 {m['original']['p50']:,}, p95 "
                  f"{m['original']['p95']:,}, max {m['original']['max']:,}.", "",
                  *harness.header("size (dbstat pages)", ""),
                  *(harness.row(label, mb(value)) for label, value in (
                      ("original-text index (`items_original_fts_*`)", s["original"]["total"]),
                      ("record word index (`items_words_*`)", s["words"]["total"]),
                      ("postings of the original-text index (`items_original_fts_postings`, `_lengths`, `_changed`, "
                       "`_fresh`)", s["postings"]["original"]),
                      ("postings of the record word index", s["postings"]["record"]),
                      ("record index (`items_fts_*`)", s["record"]["total"]),
                      ("item vectors (`items_vectors`)", s["vectors"]),
                      ("`items` table + its indexes (holds `original`)", s["items_table"]),
                      ("DB file (after a WAL checkpoint)", s["db_file"]))),
                  "", f"Answers of the default search that differ from the reference's (ids, order, scores within "
                  f"1e-9; 50 results a query), of {len(r['queries'])} queries per filter: "
                  + ", ".join(f"{k} {v}" for k, v in r["differing"].items())
                  + ("; after the writes: " + ", ".join(f"{k} {v}" for k, v in r["differing_after_writes"].items())
                     if r.get("differing_after_writes") else "") + ".", "",
                  "As optimized:", "", *harness.header(*TABLE_HEAD)]
        for name in VARIANTS:
            ref = r["optimized"]["reference_client" if name in ("fused_client",) else "reference"]
            lines.append(_row(LABELS[name], r["optimized"][name], None if name in REFERENCES else ref))
        if r.get("after_writes"):
            w = r["writes"]
            lines += ["", f"After writes since the refresh ({w['written']:,} items written and {w['rewritten']:,} "
                      f"rewritten in {w['seconds']:.1f} s, inside a transaction rolled back afterwards: they are read "
                      "from the fresh table until the next refresh):", "", *harness.header(*TABLE_HEAD)]
            for name in AFTER_WRITES:
                ref = r["after_writes"]["reference_client" if name == "fused_client" else "reference"]
                lines.append(_row(LABELS[name], r["after_writes"][name], None if name in REFERENCES else ref))
        prof = r["profile"]
        lines += ["", f"cProfile, one pass of the default `search()` over the {prof['queries']} queries "
                  f"({prof['total_ms']:.0f} ms profiled, profiler overhead included), top by own time:",
                  "", *harness.header("function", "calls", "own ms", "share")]
        lines += [harness.row(f"`{x['where']}`", f"{x['calls']:,}", f"{x['tottime_ms']:.1f}", f"{x['share']:.0%}")
                  for x in prof["top"][:10]]
        lines += ["", "The same pass by stage (cumulative):", "",
                  *harness.header("function", "calls", "cumulative ms", "share")]
        lines += [harness.row(f"`{x['where']}`", f"{x['calls']:,}", f"{x['cumtime_ms']:.1f}", f"{x['share']:.0%}")
                  for x in prof["stages"][:10]]
        lines.append("")
    return "\n".join(lines)


def parent(args):
    sizes_ = [int(s) for s in args.sizes.split(",") if s.strip()]
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    results = []
    for size in sizes_:
        out = WORK_DIR / f"result-{size}.json"
        if not args.report_only:
            done = harness.spawn(__file__, "size", out=out, size=size, runs=args.runs,
                                 reference_runs=args.reference_runs or args.runs, rebuild=args.rebuild,
                                 writes=not args.no_writes)
            print(f"[{size}] done in {done['_seconds']:.0f} s", file=sys.stderr)
        result = harness.read_json(out)
        result.setdefault("finished_at", harness.stamp(datetime.fromtimestamp(out.stat().st_mtime, UTC)))
        results.append(result)
    runs = results[0]["runs"]
    command = (f".venv/bin/python bench/search.py --sizes {args.sizes} --runs {runs}"
               + (f" --reference-runs {args.reference_runs}" if args.reference_runs else "")
               + (" --no-writes" if args.no_writes else ""))
    harness.write_report(args.output, render(results, harness.machine(), command))


def main():
    if harness.child_main({"size": child}):
        return
    parser = harness.parser(__doc__)
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated library sizes")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per measurement set")
    parser.add_argument("--reference-runs", type=int, help="timed runs of the reference variants (default: --runs)")
    parser.add_argument("--no-writes", action="store_true",
                        help="skip the measurement after writes since the last refresh (at 1M: about half the time)")
    parser.add_argument("--rebuild", action="store_true", help="build the libraries anew even if valid ones are there")
    parser.add_argument("--output", default=str(BENCH_DIR / "RESULTS-search.md"))
    parser.add_argument("--report-only", action="store_true",
                        help="only re-render the report from bench/work/result-<size>.json")
    parent(parser.parse_args())


if __name__ == "__main__":
    main()
