#!/usr/bin/env python
"""Search latency benchmark: `library.search.search()` against the raw FTS5 floor query.

A benchmark script, not a test. For each library size it builds a fresh data folder under
bench/work/<size>/ (git-ignored) in its own subprocess (Django reads the settings once per
process), fills it with realistic items through `Item.objects.bulk_create`, and measures

* build time (items/s), index size, `store.optimize()` time;
* per-query latency (p50 / p95 / max) of the floor query
  `SELECT rowid, bm25(items_fts, ...) AS rank FROM items_fts WHERE items_fts MATCH ? ORDER BY
  rank LIMIT 200` beside `search()`, `search(source=)` and `search(project=)` with the same
  MATCH string, before and after `store.optimize()`;
* a cProfile of search(), and today's search() against the previous design (before commit
  9572e5d: stage 1 alone, every candidate's row fetched, recency re-rank in Python), rebuilt
  in this file, on the same data, interleaved, with a check that both return the same top 10.

The text is not random letters: an order-2 Markov chain trained on the docstrings of the
Python standard library (real English and code vocabulary) plus a fixed list of developer
nouns (projects, tools, error codes, paths, commands). Every random choice uses a fixed seed.

    .venv/bin/python bench/search.py                      # 10k and 100k, 5 runs, writes RESULTS.md
    .venv/bin/python bench/search.py --sizes 2000 --runs 2 --output /tmp/quick.md
    .venv/bin/python bench/search.py --report-only        # re-render from bench/work/result-*.json
"""

import argparse
import ast
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine  # noqa: E402  (bench/machine.py)

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
WORK_DIR = BENCH_DIR / "work"
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


ORIGINAL_MEDIAN_CHARS = 9_000   # real sessions' kept text: see make_original
ORIGINAL_MAX_CHARS = 60_000     # max_input_chars: no segment is longer
TOOL_NAMES = ("Bash", "Read", "Edit", "Grep", "Write", "WebFetch")


def make_original(text, rng, median=ORIGINAL_MEDIAN_CHARS):
    """A synthetic `original` shaped like a real segment's: `user:` requests, `assistant:`
    paragraphs and one-line `tool:` calls, blank-line separated, its length drawn from a
    log-normal distribution (median `median`, about 1.6 × that on average, at most 60,000
    characters: the shape of the recall corpus's segments)."""
    target = int(min(ORIGINAL_MAX_CHARS, max(600, rng.lognormvariate(0, 1.0) * median)))
    blocks, size = [], 0
    while size < target:
        if not blocks or rng.random() < 0.12:
            block = "user: " + text.phrase(length(rng, 22, 12, 4), per_word=0.08, end=rng.choice("?.."))
        elif rng.random() < 0.4:
            tool = rng.choice(TOOL_NAMES)
            if tool == "Bash":
                arg = f"{rng.choice(COMMANDS)} {rng.choice(PATHS)}"
            elif tool == "WebFetch":
                arg = f"https://docs.example.org/{rng.choice(TOOLS)}/{rng.choice(self_words(text, rng))}"
            else:
                arg = rng.choice(PATHS)
            block = f"tool: {tool}: {arg}"
        else:
            block = "assistant: " + " ".join(
                text.phrase(n, per_word=0.05, end=".") for n in _split(length(rng, 70, 45, 8), rng))
        blocks.append(block)
        size += len(block) + 2
    return "\n\n".join(blocks)


def self_words(text, rng):
    return [w.strip(".,;:!?()'\"").lower() or "page" for w in text.words(3)]


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

def pct(values, p):
    """Nearest-rank percentile."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(round(p / 100 * len(ordered) + 0.5)) - 1))
    return ordered[k]


def summarize(samples):
    """samples in ns → {p50, p95, max} in ms."""
    return {"p50": pct(samples, 50) / 1e6, "p95": pct(samples, 95) / 1e6, "max": max(samples) / 1e6}


def dbstat_sizes(db_path):
    """Helper mode (stdlib sqlite3, which has dbstat; the bundled one does not)."""
    import sqlite3

    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    rows = con.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
    con.close()
    return dict(rows)


def sizes(connection, db_path):
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        cursor.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'items' AND type IN ('table', 'index')")
        items_btrees = {row[0] for row in cursor.fetchall()}
    out = subprocess.run([sys.executable, __file__, "--dbstat", str(db_path)],
                         capture_output=True, text=True, check=True)
    tables = json.loads(out.stdout)
    fts = {name: size for name, size in tables.items() if name.startswith("items_fts")}
    wal = Path(str(db_path) + "-wal")
    return {
        "fts_total": sum(fts.values()),
        "fts_index": fts.get("items_fts_data", 0) + fts.get("items_fts_idx", 0),
        "fts_content": fts.get("items_fts_content", 0),
        "fts_docsize": fts.get("items_fts_docsize", 0),
        "items_table": sum(size for name, size in tables.items() if name in items_btrees),
        "items_filter": tables.get("items_filter", 0),
        "db_file": db_path.stat().st_size + (wal.stat().st_size if wal.exists() else 0),
        "tables": tables,
    }


def child(size, runs, out_path):
    data = WORK_DIR / str(size)
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    os.environ["JEZERO_DATA_DIR"] = str(data)
    os.environ["JEZERO_CONFIG"] = str(data / "jezero.toml")  # does not exist: defaults
    os.environ["JEZERO_SECRET_KEY"] = "bench"
    os.environ.pop("JEZERO_DEBUG", None)
    os.environ["JEZERO_LOG_LEVEL"] = "WARNING"
    sys.path.insert(0, str(REPO_DIR))

    import jezero_site  # noqa: F401  (swaps in the bundled SQLite first)

    os.environ["DJANGO_SETTINGS_MODULE"] = "jezero_site.settings"
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from library import search as S
    from library import store
    from library.models import Item
    from library.timeutil import from_db

    result_head = _git_head()  # the code this process imports, read before it can change
    load_start = os.getloadavg()
    call_command("migrate", verbosity=0)
    db_path = Path(settings.DATABASES["default"]["NAME"])
    config = settings.JEZERO["search"]
    result = {"size": size, "runs": runs, "sqlite": connection.Database.sqlite_version,
              "tokenizer": store.configured_tokenizer(), "search_config": dict(config)}
    log = lambda msg: print(f"[{size}] {msg}", file=sys.stderr, flush=True)  # noqa: E731

    # --- build ---
    t = time.perf_counter()
    sentences, identifiers = harvest_sentences()
    rng = random.Random(SEED)
    text = Text(sentences, identifiers, rng)
    result["harvest_s"] = time.perf_counter() - t
    result["corpus"] = {"sentences": len(sentences), "identifiers": len(identifiers)}
    gen_s = build_s = 0.0
    chars = 0
    for start in range(0, size, BATCH):
        t = time.perf_counter()
        records = [make_record(text, rng, i) for i in range(start, min(size, start + BATCH))]
        gen_s += time.perf_counter() - t
        chars += sum(len(r["title"]) + len(r["summary"]) + sum(map(len, r["questions"]))
                     + sum(len(a["text"]) for a in r["atoms"]) for r in records)
        objs = [Item(**r) for r in records]
        t = time.perf_counter()
        with transaction.atomic():
            Item.objects.bulk_create(objs)
        build_s += time.perf_counter() - t
    result.update(generate_s=gen_s, build_s=build_s, items_per_s=size / build_s,
                  indexed_chars_per_item=chars / size)
    log(f"built: generate {gen_s:.1f}s, bulk_create {build_s:.1f}s ({size / build_s:.0f} items/s)")
    sample = Item.objects.order_by("pk").first()
    result["sample_item"] = {"title": sample.title, "summary": sample.summary,
                             "questions": sample.questions, "atoms": sample.atoms[:3],
                             "project": sample.project, "source": sample.source}

    # --- queries and what is timed ---
    queries = make_queries(text, sentences)
    matches = [S.build_match_query(q) for q in queries]
    keep = [(q, m) for q, m in zip(queries, matches, strict=True) if m]
    queries, matches = [q for q, _ in keep], [m for _, m in keep]
    result["queries"] = queries
    n = len(queries)
    qsources = [SOURCES[i % len(SOURCES)] for i in range(n)]
    qprojects = [PROJECTS[(i * 7) % len(PROJECTS)] for i in range(n)]
    with connection.cursor() as cursor:
        counts = []
        for m in matches:
            cursor.execute(f"SELECT count(*) FROM {store.FTS_TABLE} WHERE {store.FTS_TABLE} MATCH %s", [m])
            counts.append(cursor.fetchone()[0])
    result["matches_per_query"] = {"p50": pct(counts, 50), "p95": pct(counts, 95), "max": max(counts)}

    weights = ", ".join(f"{w:.1f}" for w in store.BM25_WEIGHTS)
    fts = store.FTS_TABLE
    floor_sql = (f"SELECT rowid, bm25({fts}, {weights}) AS rank FROM {fts} "
                 f"WHERE {fts} MATCH %s ORDER BY rank LIMIT 200")
    pool = config["candidate_pool"]
    assert pool == 200, pool
    allowed = S.ALL_SOURCES
    perf, cpu = time.perf_counter_ns, time.thread_time_ns

    def run_floor(i):
        t0, c0 = perf(), cpu()
        with connection.cursor() as cursor:
            cursor.execute(floor_sql, [matches[i]])
            cursor.fetchall()
        return perf() - t0, cpu() - c0

    def run_search(i):
        t0, c0 = perf(), cpu()
        S.search(queries[i], allowed_sources=allowed)
        return perf() - t0, cpu() - c0

    def run_source(i):
        t0, c0 = perf(), cpu()
        S.search(queries[i], allowed_sources=allowed, source=qsources[i])
        return perf() - t0, cpu() - c0

    def run_project(i):
        t0, c0 = perf(), cpu()
        S.search(queries[i], allowed_sources=allowed, project=qprojects[i])
        return perf() - t0, cpu() - c0

    # The design before commit 9572e5d, rebuilt here for comparison on the same data: stage 1
    # alone (filters through `CROSS JOIN items` by rowid), then every candidate's row fetched
    # by `id IN (...)` and re-ranked, sorted and cut in Python.
    def legacy_search(query, **filter_kw):
        limit = S.clamp_limit(None, config["default_limit"])
        match = S.build_match_query(query)
        filters = S._filters(allowed, **filter_kw)
        if match is None or filters.empty:
            return []
        if filters.sql:
            sql = (f"SELECT {fts}.rowid, bm25({fts}, {weights}) AS rank FROM {fts} "
                   f"CROSS JOIN items AS i ON i.id = {fts}.rowid "
                   f"WHERE {fts} MATCH %s AND {filters.sql} ORDER BY rank LIMIT %s")
        else:
            sql = f"SELECT rowid, bm25({fts}, {weights}) AS rank FROM {fts} WHERE {fts} MATCH %s ORDER BY rank LIMIT %s"
        with connection.cursor() as cursor:
            cursor.execute(sql, [match, *filters.params, pool])
            candidates = [(row[0], -row[1]) for row in cursor.fetchall()]
        ids = [item_id for item_id, _ in candidates]
        rows = {}
        if ids:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT {LEGACY_ROW_COLUMNS} FROM items WHERE id IN "
                               f"({', '.join('%s' for _ in ids)})", ids)
                rows = {row[0]: row for row in cursor.fetchall()}
        now = timezone.now()
        weight, half_life = config["recency_weight"], config["recency_half_life_days"]
        hits = []
        for item_id, relevance in candidates:
            row = rows.get(item_id)
            if row is None:
                continue
            occurred = from_db(row[7])
            age_days = (now - occurred).total_seconds() / 86_400
            hits.append(S.Hit(id=row[0], key=row[1], title=row[2], summary=row[3], project=row[4],
                              source=row[5], trust=row[6], occurred_at=occurred,
                              score=relevance * S.recency_factor(age_days, weight, half_life)))
        hits.sort(key=lambda h: (-h.score, -h.occurred_at.timestamp(), -h.id))
        return hits[:limit]

    def timed(fn, **kw):
        def run(i):
            args = {k: v[i] for k, v in kw.items()}
            t0, c0 = perf(), cpu()
            fn(queries[i], **args)
            return perf() - t0, cpu() - c0
        return run

    def measure(label, variants, runs):
        """Interleaved: each query runs through every variant back to back (variant order
        rotating), so a load spike from another process hits all variants alike."""
        names = list(variants)
        order = list(range(n))
        for i in order:  # warm-up: the floor over every query (pages), each variant a little
            run_floor(i)
        for fn in variants.values():
            for i in order[:10]:
                fn(i)
        per_run = {(name, clock): [] for name in names for clock in (0, 1)}
        paired = {(name, clock): [] for name in names for clock in (0, 1)}
        for run in range(runs):
            random.Random(run).shuffle(order)
            samples = {name: {} for name in names}
            for j, i in enumerate(order):
                for name in names[j % len(names):] + names[:j % len(names)]:
                    samples[name][i] = variants[name](i)  # (wall ns, thread CPU ns)
            for name in names:
                for clock in (0, 1):
                    per_run[name, clock].append(summarize([v[clock] for v in samples[name].values()]))
                    paired[name, clock].append(statistics.median(
                        samples[name][i][clock] - samples["floor"][i][clock] for i in order) / 1e6)
        out = {}
        for name in names:
            wall, cpu_ = per_run[name, 0], per_run[name, 1]
            out[name] = {k: statistics.median(s[k] for s in wall) for k in ("p50", "p95", "max")}
            out[name]["paired_overhead_ms"] = statistics.median(paired[name, 0])
            out[name]["cpu"] = {k: statistics.median(s[k] for s in cpu_) for k in ("p50", "p95", "max")}
            out[name]["cpu"]["paired_overhead_ms"] = statistics.median(paired[name, 1])
        log(f"{label}: " + ", ".join(f"{k} {v['p50']:.2f}/{v['p95']:.2f}" for k, v in out.items()))
        return out

    def profile():
        """cProfile of one pass of unfiltered search() over every query: top by own time."""
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for q in queries:
            S.search(q, allowed_sources=allowed)
        prof.disable()
        stats = pstats.Stats(prof)
        total = stats.total_tt
        rows = []
        for (file, line, func), (_cc, nc, tt, _ct, _) in stats.stats.items():
            where = f"{Path(file).name}:{line}({func})" if file != "~" else re.sub(r" at 0x[0-9a-f]+", "", func)
            rows.append({"where": where, "calls": nc, "tottime_ms": tt * 1e3, "share": tt / total})
        rows.sort(key=lambda r: -r["tottime_ms"])
        return {"total_ms": total * 1e3, "queries": n, "top": rows[:10]}

    def same_top10(**kw):
        agree = 0
        for i, q in enumerate(queries):
            args = {k: v[i] for k, v in kw.items()}
            ours = [h.id for h in S.search(q, allowed_sources=allowed, **args).hits]
            agree += ours == [h.id for h in legacy_search(q, **args)]
        return agree / n

    main = {"floor": run_floor, "search": run_search, "search_source": run_source,
            "search_project": run_project}
    result["sizes_before"] = sizes(connection, db_path)
    result["before"] = measure("before optimize", main, runs)
    t = time.perf_counter()
    store.optimize()
    result["optimize_s"] = time.perf_counter() - t
    log(f"optimize {result['optimize_s']:.1f}s")
    result["sizes_after"] = sizes(connection, db_path)
    result["after"] = measure("after optimize", main, runs)
    result["profile_after"] = profile()

    # --- today's search() against the previous design, after optimize ---
    with connection.cursor() as cursor:
        f = S._filters(allowed, project="jezero")
        cursor.execute(f"EXPLAIN QUERY PLAN SELECT {fts}.rowid FROM {fts} CROSS JOIN items AS i "
                       f"ON i.id = {fts}.rowid WHERE {fts} MATCH %s AND {f.sql}", ['"x"', *f.params])
        result["legacy_filter_plan"] = [row[-1] for row in cursor.fetchall()]
    result["legacy_same_top10"] = {"search": same_top10(), "project": same_top10(project=qprojects),
                                   "source": same_top10(source=qsources)}
    comparison = {
        "floor": run_floor,
        "search": run_search, "legacy": timed(legacy_search),
        "search_project": run_project, "legacy_project": timed(legacy_search, project=qprojects),
        "search_source": run_source, "legacy_source": timed(legacy_search, source=qsources),
    }
    result["comparison"] = measure("today vs previous design", comparison, max(1, min(runs, 3)))
    result["finished_at"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    result["library_commit"] = result_head
    result["load_average"] = {"start": load_start, "end": os.getloadavg()}
    Path(out_path).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")


LEGACY_ROW_COLUMNS = "id, key, title, summary, project, source, trust, occurred_at"


def _git_head():
    """The commit and whether library/ has uncommitted changes (the code measured)."""
    try:
        head = subprocess.run(["git", "-C", str(REPO_DIR), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO_DIR), "status", "--porcelain", "--", "library"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" (library/ has uncommitted changes)" if dirty else "")


# --- report ------------------------------------------------------------------------------------


def mb(n):
    return f"{n / 1e6:.1f} MB"


TABLE_HEAD = ("| ms (wall clock) | p50 | p95 | max | p50 ratio | p95 ratio | overhead "
              "| CPU p50 ratio | CPU p95 ratio | CPU overhead |")


def _row(label, v, floor, is_floor):
    """One table row: wall-clock figures, ratios to the floor, paired overhead, and the same
    ratios in thread CPU time (insensitive to other processes taking the cores)."""
    head = f"| {label} | {v['p50']:.2f} | {v['p95']:.2f} | {v['max']:.2f} |"
    if is_floor:
        return head + f" | | | CPU p50 {v['cpu']['p50']:.2f} ms | CPU p95 {v['cpu']['p95']:.2f} ms | |"
    c, fc = v["cpu"], floor["cpu"]
    return (head + f" {v['p50'] / floor['p50']:.2f} | {v['p95'] / floor['p95']:.2f} | "
            f"{v['paired_overhead_ms']:+.2f} | {c['p50'] / fc['p50']:.2f} | {c['p95'] / fc['p95']:.2f} | "
            f"{c['paired_overhead_ms']:+.2f} |")


def render(results, info, command):
    first = results[0]
    lines = ["# Search benchmark results", ""]
    lines += [
        f"- Date: {results[-1].get('finished_at', '?')}",
        f"- Machine: {info['cpu']}, {info['cores']} cores, {info['ram']} RAM, {info['os']}",
        f"- Python {info['python']}, SQLite {first['sqlite']} (bundled pysqlite3), tokenizer "
        f"`{first['tokenizer']}`, candidate_pool {first['search_config']['candidate_pool']}, "
        f"default limit {first['search_config']['default_limit']}",
        f"- Command: `{command}`",
        f"- {len(first['queries'])} fixed queries (2–4 distinctive words, word fragments, quoted phrases, "
        "error codes/commands/projects with a word). One warm-up pass, then "
        f"{first['runs']} timed runs; in each run every query goes through all variants back to back "
        "(order rotating). Each figure is the **median over the runs** of that run's p50 / p95 / max, "
        "in ms. *Overhead* = median over queries of (variant − floor) for the same query. *CPU* "
        "columns: the same from the thread's CPU time (`time.thread_time_ns`), which other processes "
        "on the machine do not inflate.",
        "- Floor = `SELECT rowid, bm25(items_fts, 2.0, 1.0, 1.5, 1.5, 0.5) AS rank FROM items_fts "
        "WHERE items_fts MATCH ? ORDER BY rank LIMIT 200` through `connection.cursor()`, same MATCH "
        "string (built outside the timing); also the floor for the filtered variants.",
        "",
    ]
    names = [("floor", "floor"), ("search", "`search()`"), ("search_source", "`search(source=)`"),
             ("search_project", "`search(project=)`")]
    for r in results:
        sb, sa = r["sizes_before"], r["sizes_after"]
        m = r["matches_per_query"]
        lines += [f"## {r['size']:,} items", ""]
        if "load_average" in r:
            la = r["load_average"]
            lines += [f"Code measured: commit {r.get('library_commit', '?')}. Load average of the machine "
                      f"(1/5/15 min) when this size started: {'/'.join(f'{x:.1f}' for x in la['start'])}, "
                      f"when it ended: {'/'.join(f'{x:.1f}' for x in la['end'])} (2 cores).", ""]
        lines += [
            f"{r['indexed_chars_per_item']:.0f} indexed characters per item on average; rows matching "
            f"a query: p50 {m['p50']:,}, p95 {m['p95']:,}, max {m['max']:,}.",
            "",
            "| | before optimize | after optimize |",
            "|---|---|---|",
            f"| build: `bulk_create` in batches of {BATCH:,} (text generation, {r['generate_s']:.0f} s, "
            f"not included) | {r['build_s']:.1f} s = {r['items_per_s']:,.0f} items/s | |",
            f"| `store.optimize()` | | {r['optimize_s']:.1f} s |",
            f"| FTS shadow tables (`items_fts_*`) | {mb(sb['fts_total'])} | {mb(sa['fts_total'])} |",
            f"| … index (`_data` + `_idx`) | {mb(sb['fts_index'])} | {mb(sa['fts_index'])} |",
            f"| … content copy (`_content`) | {mb(sb['fts_content'])} | {mb(sa['fts_content'])} |",
            f"| `items` table + all its indexes | {mb(sb['items_table'])} | {mb(sa['items_table'])} |",
            f"| … of which the `items_filter` index | {mb(sb['items_filter'])} | {mb(sa['items_filter'])} |",
            f"| DB file (after a WAL checkpoint) | {mb(sb['db_file'])} | {mb(sa['db_file'])} |",
            "",
            TABLE_HEAD,
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for phase in ("before", "after"):
            for key, label in names:
                lines.append(_row(f"{label}, {phase} optimize", r[phase][key], r[phase]["floor"], key == "floor"))
        cmp_ = r["comparison"]
        fl = cmp_["floor"]
        same = r["legacy_same_top10"]
        lines += ["", "Today's `search()` against the previous design (two statements, every candidate's "
                  "row fetched, re-rank in Python; rebuilt in bench/search.py), after optimize, interleaved "
                  f"with their own floor, {max(1, min(r['runs'], 3))} runs:", "",
                  TABLE_HEAD, "|---|---|---|---|---|---|---|---|---|---|"]
        for key, label in (
                ("floor", "floor"),
                ("search", "`search()` today"), ("legacy", "… previous design"),
                ("search_project", "`search(project=)` today"), ("legacy_project", "… previous design"),
                ("search_source", "`search(source=)` today"), ("legacy_source", "… previous design")):
            lines.append(_row(label, cmp_[key], fl, key == "floor"))
        lines += ["", f"Same top-10 ids as the previous design: {same['search']:.0%} of queries unfiltered, "
                  f"{same['project']:.0%} with `project=`, {same['source']:.0%} with `source=`. The previous "
                  f"design's filtered plan here: `{'; '.join(r['legacy_filter_plan'])}`."]
        prof = r["profile_after"]
        lines += ["", f"cProfile, one pass of `search()` over the {prof['queries']} queries after optimize "
                  f"({prof['total_ms']:.0f} ms profiled), top by own time:", "",
                  "| function | calls | own ms | share |", "|---|---|---|---|"]
        for row in prof["top"][:6]:
            lines.append(f"| `{row['where']}` | {row['calls']:,} | {row['tottime_ms']:.1f} | {row['share']:.0%} |")
        lines.append("")
    lines += ["## Summary (computed)", "",
              "Ratios over both phases (before/after optimize) and both percentiles; the verdict uses "
              "CPU time, which other processes on the machine do not inflate.", ""]
    for r in results:
        a, b = r["after"], r["before"]
        parts = []
        for key, label in names[1:]:
            ratios = [r[ph][key][p] / r[ph]["floor"][p] for ph in ("before", "after") for p in ("p50", "p95")]
            cpu_ratios = [r[ph][key]["cpu"][p] / r[ph]["floor"]["cpu"][p]
                          for ph in ("before", "after") for p in ("p50", "p95")]
            verdict = "within" if max(cpu_ratios) <= 1.10 else "over"
            parts.append(f"{label} {min(cpu_ratios):.2f}–{max(cpu_ratios):.2f}× the floor in CPU time at "
                         f"p50/p95 ({verdict} the 10 % goal; wall clock {min(ratios):.2f}–{max(ratios):.2f}×)")
        lines.append(f"- {r['size']:,} items: " + "; ".join(parts) + f". Floor p50/p95 {b['floor']['p50']:.1f}/"
                     f"{b['floor']['p95']:.1f} ms before optimize, {a['floor']['p50']:.1f}/{a['floor']['p95']:.1f} ms after.")
    lines.append("")
    return "\n".join(lines)


def parent(args):
    sizes_ = [int(s) for s in args.sizes.split(",") if s.strip()]
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    results = []
    for size in sizes_:
        out = WORK_DIR / f"result-{size}.json"
        if not args.report_only:
            t = time.perf_counter()
            subprocess.run([sys.executable, __file__, "--size", str(size), "--runs", str(args.runs),
                            "--json", str(out)], check=True)
            print(f"[{size}] done in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        result = json.loads(out.read_text(encoding="utf-8"))
        result.setdefault("finished_at", datetime.fromtimestamp(out.stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M UTC"))
        results.append(result)
    runs = results[0]["runs"]
    command = f".venv/bin/python bench/search.py --sizes {args.sizes} --runs {runs}"
    report = render(results, machine(), command)
    Path(args.output).write_text(report, encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated library sizes")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per measurement set")
    parser.add_argument("--output", default=str(BENCH_DIR / "RESULTS.md"))
    parser.add_argument("--report-only", action="store_true",
                        help="only re-render the report from bench/work/result-<size>.json")
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)   # child mode
    parser.add_argument("--json", help=argparse.SUPPRESS)
    parser.add_argument("--dbstat", help=argparse.SUPPRESS)          # helper mode
    args = parser.parse_args()
    if args.dbstat:
        print(json.dumps(dbstat_sizes(args.dbstat)))
    elif args.size:
        child(args.size, args.runs, args.json)
    else:
        parent(args)


if __name__ == "__main__":
    main()
