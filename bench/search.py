#!/usr/bin/env python
"""Search latency benchmark: the fused `search()` (SPEC §7a) against records-only (§7) and raw FTS5.

A benchmark script, not a test. For each library size it builds a fresh data folder under
bench/work/<size>/ (git-ignored) in its own subprocess (Django reads the settings once per
process), fills it with realistic items, each with a realistic `original`, through
`Item.objects.bulk_create` (which keeps both full-text indexes), and measures

* build time (items/s), `store.optimize()` time, and the sizes of the original-text index
  (`items_original_fts_*`, also per MB of original text), the record index (`items_fts_*`),
  the items table and the DB file, before and after `store.optimize()`;
* per-query latency (p50 / p95 / max, wall clock and thread CPU time) of six variants,
  interleaved, before and after `store.optimize()`: the record floor
  `SELECT rowid, bm25(items_fts, ...) AS rank FROM items_fts WHERE items_fts MATCH ? ORDER BY
  rank LIMIT 200`, the original floor (the same over `items_original_fts` with
  `build_original_query`), `search(records_only=True)`, the fused `search()`, the fused
  `search(source=)` and `search(project=)`, and the fused `search()` without the common-word
  lists (`library.wordlists`; before optimize none is built yet, so there both fused
  variants run without them);
* the headline: fused p95 ÷ records-only p95 (goal ≤ 1.5×);
* a cProfile of the fused search().

The text is not random letters: an order-2 Markov chain trained on the docstrings of the
Python standard library (real English and code vocabulary) plus a fixed list of developer
nouns (projects, tools, error codes, paths, commands). The originals' lengths follow the real
segments of bench/recall.py's library (see ORIGINAL_MEDIAN_CHARS). Every random choice uses
a fixed seed; the records are the same as before originals were added.

    .venv/bin/python bench/search.py                      # 10k and 100k, 5 runs, writes RESULTS-search.md
    .venv/bin/python bench/search.py --sizes 2000 --runs 2 --output /tmp/quick.md
    .venv/bin/python bench/search.py --report-only        # re-render from bench/work/result-*.json
"""

import ast
import os
import random
import re
import statistics
import sys
import sysconfig
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import harness
from harness import BENCH_DIR, REPO_DIR, WORK_DIR, pct

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


# --- measuring ---------------------------------------------------------------------------------

def _shadow(tables, table):
    """The sizes of one FTS5 table's shadow tables (`<table>_data`, `_idx`, `_content`, …)."""
    part = {name[len(table) + 1:]: size for name, size in tables.items()
            if name.startswith(table + "_") and not name.startswith((f"{table}_lists", f"{table}_common"))}
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
    return {
        "record": _shadow(tables, "items_fts"),
        "original": _shadow(tables, "items_original_fts"),
        "words": _shadow(tables, "items_words"),
        "vectors": tables.get("items_vectors", 0),
        "lists": {name: sum(size for table, size in tables.items() if table.startswith((f"{index}_lists", f"{index}_common")))
                  for name, index in (("original", "items_original_fts"), ("record", "items_words"))},
        "items_table": sum(size for name, size in tables.items() if name in items_btrees),
        "items_filter": tables.get("items_filter", 0),
        "db_file": db_path.stat().st_size + (wal.stat().st_size if wal.exists() else 0),
        "tables": tables,
    }


# The variants timed, in the order of the report; the first two are raw FTS5 queries.
VARIANTS = ("record_floor", "original_floor", "records_only", "fused", "fused_source", "fused_project",
            "fused_no_lists", "fused_no_meaning")
FUSED = ("fused", "fused_source", "fused_project", "fused_no_lists", "fused_no_meaning")


def child(args):
    """One size in its own process: a fresh data folder (no configuration file: defaults)."""
    size, runs = args["size"], args["runs"]
    result_head = harness.git_head("library")  # the code this process imports, read before it can change
    load_start = os.getloadavg()
    harness.setup_django(WORK_DIR / str(size), fresh=True, migrate=True)
    from django.conf import settings
    from django.db import connection, transaction

    from library import search as S
    from library import store, terms, wordlists
    from library.models import Item

    db_path = Path(settings.DATABASES["default"]["NAME"])
    config = settings.JEZERO["search"]
    result = {"size": size, "runs": runs, "sqlite": connection.Database.sqlite_version,
              "tokenizer": store.configured_tokenizer(),
              "original_tokenizer": store.configured_original_tokenizer(), "search_config": dict(config)}
    log = harness.logger(f"[{size}]")
    result["real_originals"] = real_originals()

    # --- build ---
    t = time.perf_counter()
    sentences, identifiers = harvest_sentences()
    rng = random.Random(SEED)
    text = Text(sentences, identifiers, rng)
    result["harvest_s"] = time.perf_counter() - t
    t = time.perf_counter()
    original_pool(text)
    result["pool_s"] = time.perf_counter() - t
    result["corpus"] = {"sentences": len(sentences), "identifiers": len(identifiers)}
    orng = random.Random(ORIGINAL_SEED)  # the records are drawn from `rng` exactly as before originals
    gen_s = build_s = 0.0
    chars, lengths = 0, []
    for start in range(0, size, BATCH):
        t = time.perf_counter()
        records = [make_record(text, rng, i) for i in range(start, min(size, start + BATCH))]
        for r in records:
            r["original"] = make_original(text, orng)
        gen_s += time.perf_counter() - t
        chars += sum(len(r["title"]) + len(r["summary"]) + sum(map(len, r["questions"]))
                     + sum(len(a["text"]) for a in r["atoms"]) for r in records)
        lengths += [len(r["original"]) for r in records]
        objs = [Item(**r) for r in records]
        t = time.perf_counter()
        with transaction.atomic():
            Item.objects.bulk_create(objs)
        build_s += time.perf_counter() - t
    result.update(generate_s=gen_s, build_s=build_s, items_per_s=size / build_s,
                  indexed_chars_per_item=chars / size, record_chars=chars,
                  originals={"chars": sum(lengths), "median": statistics.median(lengths),
                             "mean": statistics.mean(lengths), "min": min(lengths), "max": max(lengths),
                             "p05": pct(lengths, 5), "p95": pct(lengths, 95)})
    del lengths
    log(f"built: generate {gen_s:.1f}s, bulk_create {build_s:.1f}s ({size / build_s:.0f} items/s), "
        f"originals median {result['originals']['median']:.0f} mean {result['originals']['mean']:.0f} chars")
    sample = Item.objects.order_by("pk").first()
    result["sample_item"] = {"title": sample.title, "summary": sample.summary,
                             "questions": sample.questions, "atoms": sample.atoms[:3],
                             "project": sample.project, "source": sample.source,
                             "original_start": sample.original[:600]}

    # --- queries and what is timed ---
    queries = make_queries(text, sentences)
    result["queries_generated"] = len(queries)
    # The floors are the raw queries of every term, as before issue 15 (library.terms: no
    # term left out for being common), so they stay what the search is measured against.
    keep = [(q, S.build_match_query(q), terms.build_original_query(q)) for q in queries]
    keep = [row for row in keep if row[1] and row[2]]  # both indexes have something to look up
    queries = [q for q, _, _ in keep]
    matches, original_matches = [m for _, m, _ in keep], [o for _, _, o in keep]
    result["queries"] = queries
    result["original_matches"] = original_matches
    n = len(queries)
    qsources = [SOURCES[i % len(SOURCES)] for i in range(n)]
    qprojects = [PROJECTS[(i * 7) % len(PROJECTS)] for i in range(n)]
    rfts, ofts = store.FTS_TABLE, store.ORIGINAL_TABLE
    with connection.cursor() as cursor:
        counts = {"record": [], "original": []}
        for m, o in zip(matches, original_matches, strict=True):
            cursor.execute(f"SELECT count(*) FROM {rfts} WHERE {rfts} MATCH %s", [m])
            counts["record"].append(cursor.fetchone()[0])
            cursor.execute(f"SELECT count(*) FROM {ofts} WHERE {ofts} MATCH %s", [o])
            counts["original"].append(cursor.fetchone()[0])
    result["matches_per_query"] = {k: harness.percentiles(v) for k, v in counts.items()}

    weights = ", ".join(f"{w:.1f}" for w in store.BM25_WEIGHTS)
    record_floor_sql = (f"SELECT rowid, bm25({rfts}, {weights}) AS rank FROM {rfts} "
                        f"WHERE {rfts} MATCH %s ORDER BY rank LIMIT 200")
    original_floor_sql = (f"SELECT rowid, bm25({ofts}) AS rank FROM {ofts} "
                          f"WHERE {ofts} MATCH %s ORDER BY rank LIMIT 200")
    assert config["candidate_pool"] == 200, config["candidate_pool"]
    allowed = S.ALL_SOURCES
    # Process CPU time: the fused search runs its second index query in a pool thread.
    perf, cpu = time.perf_counter_ns, time.process_time_ns

    def floor(sql, expressions):
        def run(i):
            t0, c0 = perf(), cpu()
            with connection.cursor() as cursor:
                cursor.execute(sql, [expressions[i]])
                cursor.fetchall()
            return perf() - t0, cpu() - c0
        return run

    def searching(changes=None, lists=True, **kw):
        """`changes`: `[search]` settings for this variant; without `lists`, no word is read from
        a common-word list (set and restored outside the timing)."""
        per_query = {k: v for k, v in kw.items() if isinstance(v, list)}
        fixed = {k: v for k, v in kw.items() if k not in per_query}
        conf = settings.JEZERO["search"]

        def run(i):
            args = {k: v[i] for k, v in per_query.items()}
            saved = {k: conf[k] for k in changes or {}}
            conf.update(changes or {})
            floor = wordlists.LIST_FLOOR
            if not lists:
                wordlists.LIST_FLOOR = 10 ** 12
            try:
                t0, c0 = perf(), cpu()
                S.search(queries[i], allowed_sources=allowed, **fixed, **args)
                return perf() - t0, cpu() - c0
            finally:
                conf.update(saved)
                wordlists.LIST_FLOOR = floor
        return run

    variants = {
        "record_floor": floor(record_floor_sql, matches),
        "original_floor": floor(original_floor_sql, original_matches),
        "records_only": searching(records_only=True),
        "fused": searching(),
        "fused_source": searching(source=qsources),
        "fused_project": searching(project=qprojects),
        "fused_no_lists": searching(lists=False),
        "fused_no_meaning": searching({"meaning_weight": 0.0}),
    }
    assert tuple(variants) == VARIANTS

    def measure(label):
        """Interleaved: each query runs through every variant back to back (variant order
        rotating), so a load spike from another process hits all variants alike."""
        names = list(variants)
        order = list(range(n))
        for fn in variants.values():  # warm-up: every variant over every query (pages, caches)
            for i in order:
                fn(i)
        per_run = {name: {"wall": [], "cpu": []} for name in names}
        paired = {name: {"wall": [], "cpu": []} for name in names}
        over_floors = {name: {"wall": [], "cpu": []} for name in FUSED}
        for run in range(runs):
            random.Random(run).shuffle(order)
            samples = {name: {} for name in names}
            for j, i in enumerate(order):
                for name in names[j % len(names):] + names[:j % len(names)]:
                    samples[name][i] = variants[name](i)  # (wall ns, thread CPU ns)
            for name in names:
                for clock, c in (("wall", 0), ("cpu", 1)):
                    per_run[name][clock].append(harness.latency_ms([v[c] for v in samples[name].values()]))
                    paired[name][clock].append(statistics.median(
                        samples[name][i][c] - samples["records_only"][i][c] for i in order) / 1e6)
                    if name in FUSED:
                        over_floors[name][clock].append(statistics.median(
                            samples[name][i][c] - samples["record_floor"][i][c] - samples["original_floor"][i][c]
                            for i in order) / 1e6)
        out = {}
        for name in names:
            out[name] = {}
            for clock in ("wall", "cpu"):
                figures = {k: statistics.median(s[k] for s in per_run[name][clock]) for k in ("p50", "p95", "max")}
                figures["vs_records_only_ms"] = statistics.median(paired[name][clock])
                if name in FUSED:
                    figures["vs_floors_ms"] = statistics.median(over_floors[name][clock])
                out[name][clock] = figures
        log(f"{label} (CPU p50/p95 ms): " + ", ".join(
            f"{k} {v['cpu']['p50']:.1f}/{v['cpu']['p95']:.1f}" for k, v in out.items()))
        return out

    def profile():
        """cProfile of one pass of the fused search() over every query: the top functions by
        own time, and the cumulative time of search()'s stages."""
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for q in queries:
            S.search(q, allowed_sources=allowed)
        prof.disable()
        stats = pstats.Stats(prof)
        total = stats.total_tt
        rows, stages = [], []
        for (file, line, func), (_cc, nc, tt, ct, _) in stats.stats.items():
            where = f"{Path(file).name}:{line}({func})" if file != "~" else re.sub(r" at 0x[0-9a-f]+", "", func)
            rows.append({"where": where, "calls": nc, "tottime_ms": tt * 1e3, "share": tt / total})
            if Path(file).parent.name == "library" and Path(file).name in ("search.py", "snippets.py", "terms.py"):
                stages.append({"where": where, "calls": nc, "cumtime_ms": ct * 1e3, "share": ct / total})
        rows.sort(key=lambda r: -r["tottime_ms"])
        stages.sort(key=lambda r: -r["cumtime_ms"])
        return {"total_ms": total * 1e3, "queries": n, "top": rows[:15], "stages": stages[:15]}

    result["sizes_before"] = sizes(connection, db_path)
    result["before"] = measure("before optimize")
    t = time.perf_counter()
    store.optimize()
    result["optimize_s"] = time.perf_counter() - t
    log(f"optimize {result['optimize_s']:.1f}s")
    result["sizes_after"] = sizes(connection, db_path)
    result["after"] = measure("after optimize")
    result["profile_after"] = profile()
    result["finished_at"] = harness.stamp()
    result["library_commit"] = result_head
    result["load_average"] = {"start": load_start, "end": os.getloadavg()}
    return result


# --- report ------------------------------------------------------------------------------------

GOAL = 1.5  # fused p95 ÷ records-only p95


def mb(n):
    return f"{n / 1e6:,.1f} MB"


def per_mb(index_bytes, text_chars):
    return f"{index_bytes / text_chars:.2f} MB"


LABELS = {
    "record_floor": "record floor (raw FTS5)",
    "original_floor": "original floor (raw FTS5)",
    "records_only": "`search(records_only=True)`",
    "fused": "`search()` fused",
    "fused_source": "`search(source=)` fused",
    "fused_project": "`search(project=)` fused",
    "fused_no_lists": "`search()` fused without the common-word lists (as before them)",
    "fused_no_meaning": "`search()` fused, not re-ranked by meaning (`meaning_weight` 0, as before issue 16)",
}
TABLE_HEAD = ("ms", "wall p50", "wall p95", "wall max", "CPU p50", "CPU p95", "CPU max",
              "÷ records-only p50 / p95 (CPU)", "vs records-only (CPU)", "vs both floors (CPU)")


def _row(label, v, ref, name):
    w, c = v["wall"], v["cpu"]
    cells = [label, *(f"{x[k]:.2f}" for x in (w, c) for k in ("p50", "p95", "max"))]
    if name in ("record_floor", "original_floor", "records_only"):
        return harness.row(*cells, "", "", "")
    rc = ref["cpu"]
    return harness.row(*cells, f"{c['p50'] / rc['p50']:.2f} / {c['p95'] / rc['p95']:.2f}",
                       f"{c['vs_records_only_ms']:+.2f}", f"{c['vs_floors_ms']:+.2f}")


def ratio(r, phase, clock, name="fused"):
    return r[phase][name][clock]["p95"] / r[phase]["records_only"][clock]["p95"]


def render(results, info, command):
    first = results[0]
    config = first["search_config"]
    lines = ["# Search benchmark results: fused search (SPEC §7a) against records-only (§7)", ""]
    lines += [
        f"- Date: {results[-1].get('finished_at', '?')}",
        f"- Machine: {info['cpu']}, {info['cores']} cores, {info['ram']} RAM, {info['os']}",
        f"- Python {info['python']}, SQLite {first['sqlite']} (bundled pysqlite3); record index tokenizer "
        f"`{first['tokenizer']}`, original-text index tokenizer `{first['original_tokenizer']}`; "
        f"candidate_pool {config['candidate_pool']}, record_weight {config['record_weight']}, "
        f"original_weight {config['original_weight']}, default limit {config['default_limit']}",
        f"- Command: `{command}`",
        f"- {len(first['queries'])} fixed queries (2–4 distinctive words, word fragments, quoted phrases, "
        "error codes/commands/projects with a word; those with nothing to look up in either index left out). "
        "One untimed warm-up pass of every variant over every query, then "
        f"{first['runs']} timed runs; in each run every query goes through all variants back to back "
        "(order rotating). Each figure is the **median over the runs** of that run's p50 / p95 / max, "
        "in ms. *CPU*: the process's CPU time (`time.process_time_ns`, every thread: the fused search runs "
        "the original-text query in a pool thread beside the record query), which other processes on the "
        "machine do not inflate. Latency is the wall clock (the goal is about latency; run on an otherwise "
        "idle machine); CPU time is the work, which the two queries add up. "
        "*vs records-only* = median over queries of (variant − `search(records_only=True)`) for the "
        "same query; *vs both floors* = median over queries of (variant − record floor − original floor).",
        "- Record floor = `SELECT rowid, bm25(items_fts, 2.0, 1.0, 1.5, 1.5, 0.5) AS rank FROM items_fts "
        "WHERE items_fts MATCH ? ORDER BY rank LIMIT 200` with `build_match_query(q)`; original floor = "
        "`SELECT rowid, bm25(items_original_fts) AS rank FROM items_original_fts WHERE items_original_fts "
        "MATCH ? ORDER BY rank LIMIT 200` with `build_original_query(q)`; both through `connection.cursor()`, "
        "the MATCH strings built outside the timing. The filtered fused variants use one source / one "
        "project per query, in rotation.",
        "- Every item has an `original` (`make_original`): a log-normal length of median "
        f"{ORIGINAL_MEDIAN_CHARS:,} characters, σ {ORIGINAL_SIGMA}, 700–60,000, assembled from sentences of "
        "the same Markov chain as the records.",
        "",
    ]
    real = first.get("real_originals")
    lines += ["## Headline (computed)", "",
              f"Fused `search()` p95 ÷ `search(records_only=True)` p95 — latency, the goal (≤ {GOAL}×), in wall "
              "clock; and the work, in CPU time (both queries' threads):", "",
              *harness.header("items", "wall, before optimize", "wall, after optimize", "records-only p95 wall, after",
                              "fused p95 wall, after", "verdict (latency)", "CPU, before", "CPU, after")]
    for r in results:
        wall_ratios = [ratio(r, ph, "wall") for ph in ("before", "after")]
        verdict = "within" if max(wall_ratios) <= GOAL else "over"
        lines.append(harness.row(f"{r['size']:,}", f"{wall_ratios[0]:.2f}×", f"{wall_ratios[1]:.2f}×",
                                 f"{r['after']['records_only']['wall']['p95']:.1f} ms",
                                 f"{r['after']['fused']['wall']['p95']:.1f} ms", verdict,
                                 f"{ratio(r, 'before', 'cpu'):.2f}×", f"{ratio(r, 'after', 'cpu'):.2f}×"))
    lines += ["", "Sizes after `store.optimize()` (dbstat page bytes; *per MB* = MB of index per MB of the "
              "text it indexes, original text = `sum(length(original))`, record text = title + summary + "
              "questions + atoms):", "",
              *harness.header("items", "original text", "original-text index (`items_original_fts_*`)",
                              "per MB of original", "record index (`items_fts_*`)", "per MB of record text",
                              "`items` table + indexes", "DB file")]
    for r in results:
        s = r["sizes_after"]
        lines.append(harness.row(f"{r['size']:,}", mb(r["originals"]["chars"]), mb(s["original"]["total"]),
                                 per_mb(s["original"]["total"], r["originals"]["chars"]), mb(s["record"]["total"]),
                                 per_mb(s["record"]["total"], r["record_chars"]), mb(s["items_table"]),
                                 mb(s["db_file"])))
    if real:
        ro = real["original_index"]
        lines.append(harness.row(f"real: {real['items']} segments (`{real['path']}`)", mb(real["chars"]),
                                 mb(ro["total"]), per_mb(ro["total"], real["chars"]), "", "", "", ""))
    lines.append("")
    for r in results:
        o = r["originals"]
        line = (f"- {r['size']:,} items: synthetic originals median {o['median']:,.0f}, mean {o['mean']:,.0f}, "
                f"5th–95th percentile {o['p05']:,}–{o['p95']:,}, max {o['max']:,} characters")
        if real:
            line += f" (real segments: median {real['median']:,.0f}, mean {real['mean']:,.0f}, max {real['max']:,})"
        lines.append(line + ".")
    lines.append("")

    for r in results:
        sb, sa = r["sizes_before"], r["sizes_after"]
        m = r["matches_per_query"]
        lines += [f"## {r['size']:,} items", ""]
        if "load_average" in r:
            la = r["load_average"]
            lines += [f"Code measured: commit {r.get('library_commit', '?')}. Load average of the machine "
                      f"(1/5/15 min) when this size started: {'/'.join(f'{x:.1f}' for x in la['start'])}, "
                      f"when it ended: {'/'.join(f'{x:.1f}' for x in la['end'])} ({info['cores']} cores).", ""]
        lines += [
            f"{r['indexed_chars_per_item']:.0f} record characters and {r['originals']['mean']:,.0f} original "
            f"characters per item on average. Rows matching a query in the record index: p50 "
            f"{m['record']['p50']:,}, p95 {m['record']['p95']:,}, max {m['record']['max']:,}; in the "
            f"original-text index: p50 {m['original']['p50']:,}, p95 {m['original']['p95']:,}, "
            f"max {m['original']['max']:,}.",
            "",
            *harness.header("", "before optimize", "after optimize"),
            harness.row(f"build: `bulk_create` in batches of {BATCH:,}, both indexes kept by `store` (text "
                        f"generation, {r['generate_s']:.0f} s, not included)",
                        f"{r['build_s']:.1f} s = {r['items_per_s']:,.0f} items/s, "
                        f"{r['originals']['chars'] / r['build_s'] / 1e6:.1f} MB/s of original text", ""),
            harness.row("`store.optimize()` (the indexes, then the common-word lists built)", "",
                        f"{r['optimize_s']:.1f} s"),
            *(harness.row(label, mb(before), mb(after)) for label, before, after in (
                ("original-text index (`items_original_fts_*`)", sb["original"]["total"], sa["original"]["total"]),
                ("… index (`_data` + `_idx`)", sb["original"]["index"], sa["original"]["index"]),
                ("… digests (`_content`) and sizes (`_docsize`)", sb["original"]["content"] + sb["original"]["docsize"],
                 sa["original"]["content"] + sa["original"]["docsize"]),
                ("record word index (`items_words_*`, issue 15)", sb.get("words", {}).get("total", 0),
                 sa.get("words", {}).get("total", 0)),
                ("common-word lists of the original-text index (`items_original_fts_lists`, `_common`)",
                 sb.get("lists", {}).get("original", 0), sa.get("lists", {}).get("original", 0)),
                ("common-word lists of the record word index (`items_words_lists`, `_common`)",
                 sb.get("lists", {}).get("record", 0), sa.get("lists", {}).get("record", 0)),
                ("item vectors (`items_vectors`, issue 16: int8 chunks of the originals)", sb.get("vectors", 0),
                 sa.get("vectors", 0)),
                ("record index (`items_fts_*`)", sb["record"]["total"], sa["record"]["total"]),
                ("… index (`_data` + `_idx`)", sb["record"]["index"], sa["record"]["index"]),
                ("… content copy (`_content`)", sb["record"]["content"], sa["record"]["content"]),
                ("`items` table + all its indexes (holds `original`)", sb["items_table"], sa["items_table"]),
                ("DB file (after a WAL checkpoint)", sb["db_file"], sa["db_file"]))),
            "",
            *harness.header(*TABLE_HEAD),
        ]
        for phase in ("before", "after"):
            for name in VARIANTS:
                lines.append(_row(f"{LABELS[name]}, {phase} optimize", r[phase][name],
                                  r[phase]["records_only"], name))
        prof = r["profile_after"]
        lines += ["", f"cProfile, one pass of the fused `search()` over the {prof['queries']} queries after "
                  f"optimize ({prof['total_ms']:.0f} ms profiled, profiler overhead included), top by own time:",
                  "", *harness.header("function", "calls", "own ms", "share")]
        lines += [harness.row(f"`{x['where']}`", f"{x['calls']:,}", f"{x['tottime_ms']:.1f}", f"{x['share']:.0%}")
                  for x in prof["top"][:10]]
        lines += ["", "The same pass by stage (cumulative time of library.search / snippets / terms functions):", "",
                  *harness.header("function", "calls", "cumulative ms", "share")]
        lines += [harness.row(f"`{x['where']}`", f"{x['calls']:,}", f"{x['cumtime_ms']:.1f}", f"{x['share']:.0%}")
                  for x in prof["stages"][:10]]
        lines.append("")
    lines += ["## Summary (computed)", ""]
    for r in results:
        parts = []
        for name in FUSED:
            ratios = [r[ph][name]["cpu"][p] / r[ph]["records_only"]["cpu"][p]
                      for ph in ("before", "after") for p in ("p50", "p95")]
            parts.append(f"{LABELS[name]} {min(ratios):.2f}–{max(ratios):.2f}× records-only")
        rec = [r[ph]["records_only"]["cpu"][p] / r[ph]["record_floor"]["cpu"][p]
               for ph in ("before", "after") for p in ("p50", "p95")]
        a = r["after"]
        lines.append(
            f"- {r['size']:,} items, CPU time, p50 and p95 before and after optimize: " + "; ".join(parts)
            + f". Records-only {min(rec):.2f}–{max(rec):.2f}× the record floor (SPEC §7's 10 % goal). After "
            f"optimize, CPU p50/p95: record floor {a['record_floor']['cpu']['p50']:.1f}/"
            f"{a['record_floor']['cpu']['p95']:.1f} ms, original floor {a['original_floor']['cpu']['p50']:.1f}/"
            f"{a['original_floor']['cpu']['p95']:.1f} ms, records-only {a['records_only']['cpu']['p50']:.1f}/"
            f"{a['records_only']['cpu']['p95']:.1f} ms, fused {a['fused']['cpu']['p50']:.1f}/"
            f"{a['fused']['cpu']['p95']:.1f} ms.")
    lines.append("")
    return "\n".join(lines)


def parent(args):
    sizes_ = [int(s) for s in args.sizes.split(",") if s.strip()]
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    results = []
    for size in sizes_:
        out = WORK_DIR / f"result-{size}.json"
        if not args.report_only:
            done = harness.spawn(__file__, "size", out=out, size=size, runs=args.runs)
            print(f"[{size}] done in {done['_seconds']:.0f} s", file=sys.stderr)
        result = harness.read_json(out)
        result.setdefault("finished_at", harness.stamp(datetime.fromtimestamp(out.stat().st_mtime, UTC)))
        results.append(result)
    runs = results[0]["runs"]
    command = f".venv/bin/python bench/search.py --sizes {args.sizes} --runs {runs}"
    harness.write_report(args.output, render(results, harness.machine(), command))


def main():
    if harness.child_main({"size": child}):
        return
    parser = harness.parser(__doc__)
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated library sizes")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per measurement set")
    parser.add_argument("--output", default=str(BENCH_DIR / "RESULTS-search.md"))
    parser.add_argument("--report-only", action="store_true",
                        help="only re-render the report from bench/work/result-<size>.json")
    parent(parser.parse_args())


if __name__ == "__main__":
    main()
