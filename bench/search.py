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
* where search() spends its time (stage 1 SQL, the row fetch, the Python re-rank).

The text is not random letters: an order-2 Markov chain trained on the docstrings of the
Python standard library (real English and code vocabulary) plus a fixed list of developer
nouns (projects, tools, error codes, paths, commands). Every random choice uses a fixed seed.

    .venv/bin/python bench/search.py                      # 10k and 100k, 5 runs, writes RESULTS.md
    .venv/bin/python bench/search.py --sizes 2000 --runs 2 --output /tmp/quick.md
"""

import argparse
import ast
import json
import os
import platform
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

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
WORK_DIR = BENCH_DIR / "work"
SEED = 20_240_601
QUERY_SEED = 7
BATCH = 2_000
N_QUERIES = 120
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
            for a, b, c in zip(s, s[1:], s[2:]):
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
            pairs = [(a, b) for a, b in zip(words, words[1:])
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
        "items_table": sum(s for n, s in tables.items()
                           if n == "items" or n.startswith("items_") and not n.startswith("items_fts")
                           or n.startswith("sqlite_autoindex_items")),
        "db_file": db_path.stat().st_size + (wal.stat().st_size if wal.exists() else 0),
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

    from library import search as S
    from library import store
    from library.models import Item

    call_command("migrate", verbosity=0)
    db_path = Path(settings.DATABASES["default"]["NAME"])
    result = {"size": size, "runs": runs, "sqlite": connection.Database.sqlite_version,
              "tokenizer": store.configured_tokenizer(), "search_config": dict(settings.JEZERO["search"])}
    log = lambda msg: print(f"[{size}] {msg}", file=sys.stderr, flush=True)  # noqa: E731

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

    queries = make_queries(text, sentences)
    matches = [S.build_match_query(q) for q in queries]
    keep = [(q, m) for q, m in zip(queries, matches) if m]
    queries, matches = [q for q, _ in keep], [m for _, m in keep]
    result["queries"] = queries
    qsources = [SOURCES[i % len(SOURCES)] for i in range(len(queries))]
    qprojects = [PROJECTS[(i * 7) % len(PROJECTS)] for i in range(len(queries))]

    weights = ", ".join(f"{w:.1f}" for w in store.BM25_WEIGHTS)
    fts = store.FTS_TABLE
    floor_sql = f"SELECT rowid, bm25({fts}, {weights}) AS rank FROM {fts} WHERE {fts} MATCH %s ORDER BY rank LIMIT 200"
    pool = settings.JEZERO["search"]["candidate_pool"]
    assert pool == 200, pool
    allowed = S.ALL_SOURCES
    perf = time.perf_counter_ns

    def run_floor(i):
        t0 = perf()
        with connection.cursor() as cursor:
            cursor.execute(floor_sql, [matches[i]])
            cursor.fetchall()
        return perf() - t0

    def run_search(i):
        t0 = perf()
        S.search(queries[i], allowed_sources=allowed)
        return perf() - t0

    def run_source(i):
        t0 = perf()
        S.search(queries[i], allowed_sources=allowed, source=qsources[i])
        return perf() - t0

    def run_project(i):
        t0 = perf()
        S.search(queries[i], allowed_sources=allowed, project=qprojects[i])
        return perf() - t0

    def run_stage1_project(i):  # the filtered stage-1 SQL alone (what search(project=) starts with)
        filters = S._filters(allowed, project=qprojects[i])
        t0 = perf()
        S._candidates(matches[i], filters, pool)
        return perf() - t0

    # A candidate design, for comparison only: stage 2 (recency re-rank, sort, LIMIT) in the
    # same statement, so only `limit` rows reach Python.
    alt_sql = (
        "SELECT i.id, i.key, i.title, i.summary, i.project, i.source, i.trust, i.occurred_at, "
        "-c.rank * ((1.0 - %s) + %s * pow(0.5, max(%s - julianday(i.occurred_at), 0.0) / %s)) AS score "
        f"FROM ({floor_sql}) AS c CROSS JOIN items AS i ON i.id = c.rowid "
        "ORDER BY score DESC, i.occurred_at DESC, i.id DESC LIMIT %s")
    config = settings.JEZERO["search"]

    def alt_search(query):
        from django.utils import timezone

        limit = S.clamp_limit(None, config["default_limit"])
        match = S.build_match_query(query)
        now_jd = timezone.now().timestamp() / 86_400 + 2_440_587.5
        weight, half_life = config["recency_weight"], config["recency_half_life_days"]
        with connection.cursor() as cursor:
            cursor.execute(alt_sql, [weight, weight, now_jd, half_life, match, limit])
            return [S._hit(row[:8], row[8]) for row in cursor.fetchall()]

    def run_alt(i):
        t0 = perf()
        alt_search(queries[i])
        return perf() - t0

    variants = {"floor": run_floor, "search": run_search, "search_source": run_source,
                "search_project": run_project, "stage1_project": run_stage1_project,
                "alt_sql_stage2": run_alt}

    same = sum([h.id for h in alt_search(q)] == [h.id for h in S.search(q, allowed_sources=allowed).hits]
               for q in queries)
    result["alt_same_top10"] = same / len(queries)

    def measure(label):
        n = len(queries)
        order = list(range(n))
        for i in order:  # warm-up: the floor over every query (pages), every variant a little
            run_floor(i)
        for fn in variants.values():
            for i in order[:20]:
                fn(i)
        per_run = {name: [] for name in variants}
        for run in range(runs):
            random.Random(run).shuffle(order)
            for name, fn in variants.items():
                samples = [fn(i) for i in order]
                per_run[name].append(summarize(samples))
        out = {}
        for name, stats in per_run.items():
            out[name] = {k: statistics.median(s[k] for s in stats) for k in ("p50", "p95", "max")}
        log(f"{label}: " + ", ".join(f"{k} p50 {v['p50']:.2f} p95 {v['p95']:.2f}" for k, v in out.items()))
        return out

    def breakdown():
        """Per query: stage 1 SQL, the row fetch of the candidates, the Python re-rank and
        sort; the median over queries of each, and of their totals (search() unfiltered)."""
        parts = {"build_match_query": [], "stage1_sql": [], "row_fetch": [], "rerank_python": []}
        pool_sizes = []
        now_cfg = settings.JEZERO["search"]
        for _ in range(min(runs, 2)):
            for i in range(len(queries)):
                t0 = perf()
                match = S.build_match_query(queries[i])
                filters = S._filters(allowed)
                t1 = perf()
                cands = S._candidates(match, filters, pool)
                t2 = perf()
                rows = S._rows([c for c, _ in cands])
                t3 = perf()
                _rerank(S, cands, rows, now_cfg)
                t4 = perf()
                parts["build_match_query"].append(t1 - t0)
                parts["stage1_sql"].append(t2 - t1)
                parts["row_fetch"].append(t3 - t2)
                parts["rerank_python"].append(t4 - t3)
                pool_sizes.append(len(cands))
        out = {k: {"p50": pct(v, 50) / 1e6, "p95": pct(v, 95) / 1e6, "mean": statistics.fmean(v) / 1e6}
               for k, v in parts.items()}
        out["candidates_mean"] = statistics.fmean(pool_sizes)
        out["candidates_full_share"] = sum(p == pool for p in pool_sizes) / len(pool_sizes)
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
        for (file, line, func), (cc, nc, tt, ct, _) in stats.stats.items():
            where = f"{Path(file).name}:{line}({func})" if file != "~" else re.sub(r" at 0x[0-9a-f]+", "", func)
            rows.append({"where": where, "calls": nc, "tottime_ms": tt * 1e3, "share": tt / total})
        rows.sort(key=lambda r: -r["tottime_ms"])
        return {"total_ms": total * 1e3, "queries": len(queries), "top": rows[:10]}

    result["sizes_before"] = sizes(connection, db_path)
    result["before"] = measure("before optimize")
    result["breakdown_before"] = breakdown()
    t = time.perf_counter()
    store.optimize()
    result["optimize_s"] = time.perf_counter() - t
    log(f"optimize {result['optimize_s']:.1f}s")
    result["sizes_after"] = sizes(connection, db_path)
    result["after"] = measure("after optimize")
    result["breakdown_after"] = breakdown()
    result["profile_after"] = profile()
    Path(out_path).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")


def _rerank(S, candidates, rows, config):
    """The same work as search._ranked after the two statements (kept in step by hand)."""
    from django.utils import timezone

    now = timezone.now()
    weight, half_life = config["recency_weight"], config["recency_half_life_days"]
    hits = []
    for item_id, relevance in candidates:
        row = rows.get(item_id)
        if row is None:
            continue
        occurred = S.from_db(row[7])
        age_days = (now - occurred).total_seconds() / 86_400
        hits.append(S._hit(row, relevance * S.recency_factor(age_days, weight, half_life)))
    hits.sort(key=lambda h: (-h.score, -h.occurred_at.timestamp(), -h.id))
    return hits[:10]


# --- report ------------------------------------------------------------------------------------

def machine():
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "ram": ram, "python": platform.python_version(),
            "os": platform.platform()}


def mb(n):
    return f"{n / 1e6:.1f} MB"


def render(results, info, command):
    lines = ["# Search benchmark results", ""]
    lines += [
        f"- Date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- Machine: {info['cpu']}, {info['cores']} cores, {info['ram']} RAM, {info['os']}",
        f"- Python {info['python']}, SQLite {results[0]['sqlite']} (bundled), tokenizer "
        f"`{results[0]['tokenizer']}`, candidate_pool {results[0]['search_config']['candidate_pool']}",
        f"- Command: `{command}`",
        f"- {len(results[0]['queries'])} queries (2–4 distinctive words, fragments, quoted phrases, "
        "error codes/commands/projects with a word), one warm-up pass, then "
        f"{results[0]['runs']} timed runs in shuffled order; each figure is the **median over the runs** "
        "of that run's p50 / p95 / max, in milliseconds. `search()` uses the default limit (10).",
        "- Floor = `SELECT rowid, bm25(items_fts, 2.0, 1.0, 1.5, 1.5, 0.5) AS rank FROM items_fts "
        "WHERE items_fts MATCH ? ORDER BY rank LIMIT 200` through `connection.cursor()`, same MATCH "
        "string (built outside the timing). It is also the floor for the filtered variants. "
        "`stage 1 (project=)` is search's own filtered stage-1 SQL alone (`_candidates`), for reference.",
        "",
    ]
    for r in results:
        sb, sa = r["sizes_before"], r["sizes_after"]
        lines += [f"## {r['size']:,} items", ""]
        lines += [
            f"Text indexed per item: {r['indexed_chars_per_item']:.0f} characters on average. "
            f"Generation (not timed as build): {r['generate_s']:.1f} s.",
            "",
            "| | before optimize | after optimize |",
            "|---|---|---|",
            f"| build (`bulk_create`, batches of {BATCH:,}) | {r['build_s']:.1f} s = "
            f"{r['items_per_s']:,.0f} items/s | |",
            f"| `store.optimize()` | | {r['optimize_s']:.1f} s |",
            f"| FTS shadow tables, total | {mb(sb['fts_total'])} | {mb(sa['fts_total'])} |",
            f"| … of which index (`_data` + `_idx`) | {mb(sb['fts_index'])} | {mb(sa['fts_index'])} |",
            f"| … of which content copy (`_content`) | {mb(sb['fts_content'])} | {mb(sa['fts_content'])} |",
            f"| `items` table + its indexes | {mb(sb['items_table'])} | {mb(sa['items_table'])} |",
            f"| DB file (after WAL checkpoint) | {mb(sb['db_file'])} | {mb(sa['db_file'])} |",
            "",
            "| latency (ms) | p50 before | p95 before | max before | p50 after | p95 after | max after |",
            "|---|---|---|---|---|---|---|",
        ]
        names = [("floor", "floor (raw FTS5 query)"), ("search", "`search()`"),
                 ("search_source", "`search(source=)`"), ("search_project", "`search(project=)`"),
                 ("stage1_project", "stage 1 (project=) SQL alone"),
                 ("alt_sql_stage2", "alternative: stage 2 in SQL (see below)")]
        for key, label in names:
            b, a = r["before"][key], r["after"][key]
            lines.append(f"| {label} | {b['p50']:.2f} | {b['p95']:.2f} | {b['max']:.2f} | "
                         f"{a['p50']:.2f} | {a['p95']:.2f} | {a['max']:.2f} |")
        lines += ["", "| ratio to floor | p50 before | p95 before | p50 after | p95 after |",
                  "|---|---|---|---|---|"]
        for key, label in names[1:]:
            cells = []
            for phase in ("before", "after"):
                for p in ("p50", "p95"):
                    cells.append(f"{r[phase][key][p] / r[phase]['floor'][p]:.2f}")
            lines.append(f"| {label} | {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} |")
        bd = r["breakdown_after"]
        lines += ["", "Where unfiltered `search()` spends its time after optimize (per query, ms; "
                  f"candidates per query: {bd['candidates_mean']:.0f} on average, "
                  f"{bd['candidates_full_share']:.0%} of queries fill the pool of 200):", "",
                  "| part | p50 | p95 | mean |", "|---|---|---|---|"]
        for key, label in (("build_match_query", "`build_match_query` + `_filters`"),
                           ("stage1_sql", "stage 1 SQL (`_candidates`)"),
                           ("row_fetch", "row fetch (`_rows`, `id IN (…200)`)"),
                           ("rerank_python", "stage 2 in Python (recency, `Hit`s, sort)")):
            lines.append(f"| {label} | {bd[key]['p50']:.3f} | {bd[key]['p95']:.3f} | {bd[key]['mean']:.3f} |")
        prof = r["profile_after"]
        lines += ["", f"cProfile of one pass of `search()` over the {prof['queries']} queries after optimize "
                  f"({prof['total_ms']:.0f} ms profiled), top entries by own time:", "",
                  "| function | calls | own ms | share |", "|---|---|---|---|"]
        for row in prof["top"][:8]:
            lines.append(f"| `{row['where']}` | {row['calls']:,} | {row['tottime_ms']:.1f} | {row['share']:.0%} |")
        lines += ["", f"The alternative returned the same top-10 ids as `search()` for "
                  f"{r['alt_same_top10']:.0%} of the queries.", ""]
    return "\n".join(lines)


def parent(args):
    sizes_ = [int(s) for s in args.sizes.split(",") if s.strip()]
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    results = []
    for size in sizes_:
        out = WORK_DIR / f"result-{size}.json"
        t = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--size", str(size), "--runs", str(args.runs),
                        "--json", str(out)], check=True)
        print(f"[{size}] done in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        results.append(json.loads(out.read_text(encoding="utf-8")))
    command = "python bench/search.py " + " ".join(
        a for a in (f"--sizes {args.sizes}", f"--runs {args.runs}") if a)
    report = render(results, machine(), command)
    Path(args.output).write_text(report, encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated library sizes")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per measurement set")
    parser.add_argument("--output", default=str(BENCH_DIR / "RESULTS.md"))
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
