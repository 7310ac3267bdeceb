#!/usr/bin/env python
"""Recall evaluation: does the right past session reach the top of `jezero search`?

A benchmark script, not a test. It

1. lays out every real session of the evaluation (bench/recall/README.md: ../shared/corpus,
   ../shared/fixtures and the fetched extra sessions listed in bench/recall/extra-sessions.tsv,
   each checked against its sha256) as one connector per session, so that an item's
   `source` names its session, in bench/work/recall/base/;
2. builds the library with `jezero migrate` and `jezero run` — the default summariser
   (extractive), exactly as a new user would;
3. puts every question of bench/recall/questions-*.jsonl to it twice (the keywords an agent
   would type, and the natural question), in several configurations: records-only
   (docs/design.md "The record ranking"), the fused default ("How search ranks"), and the
   alternatives the defaults were chosen against;
4. does the same on a copy grown more than tenfold with synthetic items that have synthetic
   originals (bench/search.py's generator), and on a copy whose records for the sessions of
   bench/recall/records.jsonl were replaced by those hand-written, model-quality records
   (through `records.import_jsonl`, the write path that keeps both indexes in step);
   with `--large`, also on a copy grown to 100,000 items, where common terms are scored from
   their postings and the words half the library holds are left out (only past 1,000 items);
5. writes recall@1/5/10 and MRR@10 per configuration, difficulty and language to
   bench/RESULTS-recall.md (and the raw ranks to bench/work/recall/result-*.json).

    .venv/bin/python bench/recall.py                 # everything (~10 min)
    .venv/bin/python bench/recall.py --no-experiments --no-grow
    .venv/bin/python bench/recall.py --skip-build --large   # + the 100,000-item library (~8 min more)
    .venv/bin/python bench/recall.py --report-only   # re-render from bench/work/recall/*.json

A hit is any item of the target session (a long session has several segments) among the
first k results. Every search uses one fixed `now`, so the figures do not drift with the date.
"""

import contextlib
import csv
import hashlib
import json
import random
import re
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import harness
from harness import BENCH_DIR, REPO_DIR

SHARED_DIR = REPO_DIR.parent / "shared"
RECALL_DIR = BENCH_DIR / "recall"
EXTRA_DIR = BENCH_DIR / "corpus-extra"
WORK_DIR = harness.WORK_DIR / "recall"
SECRET = "recall-benchmark-not-a-secret"
NOW = datetime(2026, 12, 1, tzinfo=UTC)
KS = (1, 5, 10)
FORMS = ("keywords", "question")
GROW_FACTOR = 12         # the grown library holds this many times the base library's items
GROW_SEED = 20_261_201
LARGE = 100_000          # `--large`: the base library grown to this many items (issue 15)
MODES = ("base", "handwritten", "grown", "grown-handwritten", "large")


# --- sessions and questions ------------------------------------------------------------------

def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _tail(path, parts):
    return Path(*Path(path).parts[-parts:])


def sessions():
    """{name: (type, file path, relative path to lay out)} of every available session, and
    the notes on what is missing or altered."""
    found, notes = {}, []
    corpus = SHARED_DIR / "corpus"
    with open(corpus / "MANIFEST.tsv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            path = corpus / row["file"]
            if not path.exists():
                notes.append(f"corpus/{row['file']} is missing")
                continue
            if not sha256(path).startswith(row["sha256_16"]):
                notes.append(f"corpus/{row['file']} differs from its manifest: left out")
                continue
            found[f"corpus/{row['file']}"] = ("specstory", path, _layout("specstory", row["path"], row["file"]))
    fixtures = SHARED_DIR / "fixtures"
    for line in (fixtures / "SOURCES.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 6 or not cells[0].endswith((".jsonl", ".md")):
            continue
        name, digest16, source_path = cells[0], cells[2], cells[4]
        path = fixtures / name
        if not path.exists() or not sha256(path).startswith(digest16):
            notes.append(f"fixtures/{name} is missing or differs from SOURCES.md")
            continue
        kind = {"claude": "claude_code", "codex": "codex", "pi": "pi", "specstory": "specstory"}[name.split("_")[0]]
        found[f"fixtures/{name}"] = (kind, path, _layout(kind, source_path, name))
    manifest = RECALL_DIR / "extra-sessions.tsv"
    if manifest.exists():
        with open(manifest, encoding="utf-8") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                path = EXTRA_DIR / row["type"] / row["file"]
                key = f"extra/{row['type']}/{row['file']}"
                if not path.exists():
                    notes.append(f"{key} is not in bench/corpus-extra/ (fetch it: see extra-sessions.tsv)")
                    continue
                if sha256(path) != row["sha256"]:
                    notes.append(f"{key} differs from its sha256 in extra-sessions.tsv: left out")
                    continue
                found[key] = (row["type"], path, _layout(row["type"], row["path"], row["file"]))
    return found, notes


def _layout(kind, source_path, name):
    """Where a session file goes inside its connector's folder: the tail of the path it had in
    its repository, as far as the connector reads it (subagent file names, rollout names)."""
    if kind == "claude_code":
        tail = _tail(source_path, 3 if "/subagents/" in source_path else 2)
        return tail if len(tail.parts) > 1 else Path("project") / tail
    if kind == "codex":
        base = Path(source_path).name
        return Path("2025/01/01") / (base if base.startswith("rollout-") else f"rollout-{base}")
    if kind == "pi":
        return Path("--project--") / Path(source_path).name
    if kind == "specstory":   # SpecStory's own name: it dates an export whose turns carry no time
        return Path(Path(source_path).name)
    return Path(name)


def repositories():
    """{session name: the repository it came from} from the three manifests."""
    out = {}
    with open(SHARED_DIR / "corpus" / "MANIFEST.tsv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            out[f"corpus/{row['file']}"] = row["repo"]
    for line in (SHARED_DIR / "fixtures" / "SOURCES.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and cells[0].endswith((".jsonl", ".md")):
            out[f"fixtures/{cells[0]}"] = cells[3].split(" @ ")[0].split(" (")[0]
    manifest = RECALL_DIR / "extra-sessions.tsv"
    if manifest.exists():
        with open(manifest, encoding="utf-8") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                out[f"extra/{row['type']}/{row['file']}"] = row["repo"]
    return out


def project_slug(repo):
    """The project a session of `repo` would carry (docs/design.md "Project tags": the repository's name)."""
    return re.sub(r"[^a-z0-9._-]+", "-", repo.rsplit("/", 1)[-1].lower()).strip("-._") or "unknown"


def questions(available):
    """Every question whose target session is available, and the count of the others."""
    out, missing = [], 0
    for path in sorted(RECALL_DIR.glob("questions-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            q = json.loads(line)
            if q["session"] in available:
                out.append(q)
            else:
                missing += 1
    return out, missing


# --- building ---------------------------------------------------------------------------------

def build(found):
    """A fresh library from every session, one connector each; returns {source: session}."""
    data = WORK_DIR / "base"
    shutil.rmtree(data, ignore_errors=True)
    (data / "sessions").mkdir(parents=True)
    connectors, by_source = [], {}
    repo_of = repositories()
    for n, (name, (kind, path, relative)) in enumerate(sorted(found.items()), start=1):
        source = f"s{n:03d}"
        folder = data / "sessions" / source
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        by_source[source] = name
        # The project a real connector would find from the session's git repository (docs/design.md "Project tags").
        connectors.append(f'[[connectors]]\nname = "{source}"\ntype = "{kind}"\npath = "{folder}"\n'
                          f'settle_minutes = 0\nproject = "{project_slug(repo_of[name])}"\n')
    (data / "jezero.toml").write_text("\n".join(connectors), encoding="utf-8")
    harness.write_json(data / "sources.json", by_source)
    harness.use_data_dir(data, SECRET)
    harness.jezero("migrate", "--verbosity", "0")
    started = time.monotonic()
    out = harness.jezero("run", "--json")
    seconds = time.monotonic() - started
    reports = json.loads(out)["runs"]
    totals = {key: sum(r.get(key, 0) for r in reports)
              for key in ("units_seen", "units_stored", "units_too_small", "units_failed", "segments_summarised")}
    return data, by_source, {"run_seconds": round(seconds, 1), **totals}


def copy_library(data, name):
    target = WORK_DIR / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(data, target, ignore=shutil.ignore_patterns("sessions", "locks", "*.lock"))
    config = (data / "jezero.toml").read_text(encoding="utf-8")
    (target / "jezero.toml").write_text(config.replace(str(data), str(target)), encoding="utf-8")
    return target


# --- the child: searching one library ------------------------------------------------------------

def setup_django(data):
    """Django on a library this file built (bench/first_prompt.py uses it too)."""
    harness.setup_django(data, secret=SECRET, migrate=True)   # a library built before a migration gets it


def grow(factor=None, seed=GROW_SEED, total=None):
    """Add synthetic items with synthetic originals until the library holds `factor` times
    the items it had (or `total` items); returns how many were added."""
    import search as generator  # bench/search.py

    from library.models import Item

    base = Item.objects.count()
    wanted = base * (factor - 1) if total is None else max(total - base, 0)
    rng = random.Random(seed)
    sentences, identifiers = generator.harvest_sentences()
    text = generator.Text(sentences, identifiers, rng)
    batch = []
    for i in range(wanted):
        fields = generator.make_record(text, rng, i)
        fields["original"] = generator.make_original(text, rng)
        fields["summarizer"] = "synthetic"
        batch.append(Item(**fields))
        if len(batch) == 500:
            Item.objects.bulk_create(batch)
            batch = []
    if batch:
        Item.objects.bulk_create(batch)
    return wanted


def apply_records(by_session):
    """Replace the records of the hand-written sessions, through import_jsonl (same key, same
    id, original kept). Returns the sessions changed."""
    from library import records as lib_records
    from library.models import Item

    changed = []
    written = [json.loads(line) for path in sorted(RECALL_DIR.glob("records*.jsonl"))
               for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for record in written:
        source = by_session.get(record["session"])
        items = list(Item.objects.filter(source=source)) if source else []
        if len(items) != 1:
            continue  # not in this library, or more than one segment: a record is for one item
        line = lib_records.export_record(items[0])
        for name in ("title", "summary", "questions", "atoms"):
            line[name] = record[name]
        line["summarizer"] = "hand-written"
        report = lib_records.import_jsonl([json.dumps(line)], source=source)
        assert not report.errors, report.errors
        changed.append(record["session"])
    return changed


def _rank(ids, wanted, source_of):
    for position, item_id in enumerate(ids, start=1):
        if source_of.get(item_id) == wanted:
            return position
    return None


def configurations(experiments):
    """name → how to rank: ("search", search kwargs) calls library.search.search as users do;
    ("search", kwargs, {name: value}) does so with these module constants or `[search]`
    settings changed (`patched`); ("fuse", options) fuses the two indexes' relevances in this
    file (alternatives measured)."""
    configs = {
        "records-only": ("search", {"records_only": True}),
        "fused (default)": ("search", {}),
        # The exhaustive reference gives the same answer by construction (tests/integration/
        # test_search_exact.py); measured here too, so that the report shows it.
        "fused, exhaustive reference": ("search", {"exhaustive": True}),
        # A word held by half the index or more is left out only past ranking.COMMON items
        # (1,000); without that floor, at any size:
        "fused, words held by half the library left out at any size": ("search", {}, {"ranking__COMMON": 0}),
        # The alternatives below ("fuse") are lexical: compare them with "lexical fused".
        "fused, trigram record list (before issue 15)": ("fuse", {"record_weight": 1.0, "original_weight": 2.0,
                                                                  "trigram": True}),
        "original only": ("fuse", {"record_weight": 0.0, "original_weight": 1.0}),
        # The best 50 re-ranked by meaning (library.meaning), off and at other weights.
        "lexical fused (meaning_weight 0)": ("search", {}, {"meaning_weight": 0.0}),
        "lexical + meaning, weight 0.5": ("search", {}, {"meaning_weight": 0.5}),
        "lexical + meaning, weight 2.0": ("search", {}, {"meaning_weight": 2.0}),
        "lexical + meaning, queries in any script": ("search", {}, {"meaning__OTHER_SCRIPT_SHARE": 1.0}),
        "lexical + meaning, best 20 re-ranked": ("search", {}, {"meaning__RERANK_DEPTH": 20}),
        "lexical + meaning, best 100 re-ranked": ("search", {}, {"meaning__RERANK_DEPTH": 100}),
        # The best 10 re-ranked by closeness (ranking.closer), off and at other settings.
        "without closeness (proximity_weight 0)": ("search", {}, {"proximity_weight": 0.0}),
        "closeness, weight 0.5": ("search", {}, {"proximity_weight": 0.5}),
        "closeness, weight 2.0": ("search", {}, {"proximity_weight": 2.0}),
        "closeness, best 20 re-ranked": ("search", {}, {"ranking__CLOSE_DEPTH": 20}),
        "closeness, window of 500 characters": ("search", {}, {"snippets__WIDTH": 500}),
    }
    if experiments:
        for weight in (0.5, 1.0, 1.5, 3.0):
            configs[f"fused, original weight {weight}"] = ("fuse", {"record_weight": 1.0, "original_weight": weight})
        configs["reciprocal rank (k=60)"] = ("fuse", {"rrf": 60})
        configs["raw BM25 sum (no normalisation)"] = ("fuse", {"raw": True})
    return configs


def relevances(query, trigram=False):
    """(record, original): each index's ranking.Relevance of every matching item, as the
    default search computes them; with `trigram`, the record's from the trigram index and
    query (docs/design.md "The record ranking"), as before issue 15."""
    import numpy as np
    from django.db import connection

    from library import catalog, indexes, postings, ranking, terms
    from library.filters import ALL_SOURCES, build

    filters = build(ALL_SOURCES)
    with postings.reading():
        _asked, found = ranking.asked_and_relevance(query, filters)
        record = found.get(ranking.RECORD, ranking.Relevance())
        original = found.get(ranking.ORIGINAL_TEXT, ranking.Relevance())
        if trigram:
            match = terms.build_match_query(query)
            rows = []
            if match:
                fts, weights = indexes.RECORD_TABLE, ", ".join(f"{w:.1f}" for w in indexes.RECORD_WEIGHTS)
                with connection.cursor() as cursor:
                    cursor.execute(f"SELECT {fts}.rowid, -bm25({fts}, {weights}), CAST(i.occurred_at AS TEXT) "
                                   f"FROM {fts} JOIN items AS i ON i.id = {fts}.rowid WHERE {fts} MATCH %s "
                                   f"ORDER BY {fts}.rowid", [match])
                    rows = cursor.fetchall()
            record = ranking.Relevance(np.array([r[0] for r in rows], dtype=np.int64),
                                       np.array([r[1] for r in rows], dtype=np.float64),
                                       catalog.dates_of(r[2] for r in rows)) if rows else ranking.Relevance()
    return record, original


@contextlib.contextmanager
def patched(**changes):
    """library.search with these module constants (UPPER case; `module__NAME` for another
    module of library, e.g. `ranking__COMMON`) and `[search]` settings (lower case) changed,
    for the time of the block."""
    import importlib

    from django.conf import settings

    conf = settings.JEZERO["search"]

    def where(name):
        module, _, attr = name.rpartition("__")
        return importlib.import_module(f"library.{module or 'search'}"), attr

    saved = {name: getattr(*where(name)) if name[-1].isupper() else conf[name] for name in changes}
    for name, value in changes.items():
        if name[-1].isupper():
            setattr(*where(name), value)
        else:
            conf[name] = value
    try:
        yield
    finally:
        for name, value in saved.items():
            if name[-1].isupper():
                setattr(*where(name), value)
            else:
                conf[name] = value


def fused_ids(record, original, options, recency_weight):
    """The top 10 ids of two Relevances fused as `options` say (no meaning re-rank)."""
    import numpy as np
    from django.conf import settings

    from library import ranking
    from library.filters import micros

    half_life = settings.JEZERO["search"]["recency_half_life_days"]
    now_us = micros(NOW)

    def factor(dates):
        age = np.maximum(now_us - dates, 0) / 86_400_000_000.0
        return (1 - recency_weight) + recency_weight * np.power(0.5, age / half_life)

    if options.get("rrf") or options.get("raw"):
        scores, dates = {}, {}
        for relevance in (record, original):
            order = np.lexsort((relevance.items, relevance.dates, relevance.scores))[::-1]
            for position, at in enumerate(order, start=1):
                item_id = int(relevance.items[at])
                part = 1.0 / (options["rrf"] + position) if options.get("rrf") else float(relevance.scores[at])
                scores[item_id] = scores.get(item_id, 0.0) + part
                dates[item_id] = int(relevance.dates[at])
        ids = np.array(list(scores), dtype=np.int64)
        if not len(ids):
            return []
        when = np.array([dates[i] for i in ids], dtype=np.int64)
        total = np.array([scores[i] for i in ids]) * factor(when)
        return [int(ids[i]) for i in np.lexsort((ids, when, total))[::-1][:10]]
    ranked = ranking.fuse(record, original, now_us=now_us, depth=10, record_weight=options["record_weight"],
                          original_weight=options["original_weight"], recency_weight=recency_weight,
                          half_life_days=half_life)
    return [row.id for row in ranked]


def evaluate(qs, by_source, configs):
    """{config: {question id: {form: rank or None}}} and the time per search."""
    from django.conf import settings

    from library import search as lib
    from library.models import Item

    source_of = dict(Item.objects.values_list("id", "source"))
    wanted = {name: source for source, name in by_source.items()}
    recency = settings.JEZERO["search"]["recency_weight"]
    ranks = {name: {} for name in configs}
    timings = {name: [] for name in configs if configs[name][0] == "search"}
    forms = [*FORMS, "question_en"]
    for q in qs:
        target = wanted[q["session"]]
        for form in forms:
            text = q.get(form)
            if not text:
                continue
            lists = {}
            for name, (how, options, *changed) in configs.items():
                if how == "search":
                    with patched(**(changed[0] if changed else {})):
                        started = time.perf_counter()
                        result = lib.search(text, allowed_sources=lib.ALL_SOURCES, limit=10, now=NOW, **options)
                        timings[name].append(time.perf_counter() - started)
                    ids = [hit.id for hit in result.hits]
                else:
                    trigram = bool(options.get("trigram"))
                    if trigram not in lists:
                        lists[trigram] = relevances(text, trigram=trigram)
                    ids = fused_ids(*lists[trigram], options, recency)
                ranks[name].setdefault(q["id"], {})[form] = _rank(ids, target, source_of)
    # The fusion in this file must be the one search() runs: compare their top 10 once.
    return ranks, {name: statistics.median(values) * 1000 for name, values in timings.items() if values}


def check_same_fusion(qs):
    """search()'s default ranking and this file's `fuse` at the configured weights agree."""
    from django.conf import settings

    from library import search as lib

    conf = settings.JEZERO["search"]
    options = {"record_weight": conf["record_weight"], "original_weight": conf["original_weight"]}
    differ = 0
    for q in qs:
        text = q["question"]
        mine = fused_ids(*relevances(text), options, conf["recency_weight"])
        with patched(meaning_weight=0.0, proximity_weight=0.0):   # this file's `fuse` configurations are lexical
            theirs = [hit.id for hit in lib.search(text, allowed_sources=lib.ALL_SOURCES, limit=10, now=NOW).hits]
        differ += mine != theirs
    return differ


def tokenizer_experiments(qs, by_source):
    """Recall of the fused default with other original-index tokenizers and query rules."""
    from library import store, terms

    out = {}
    variants = [
        ("unicode61 remove_diacritics 2", True),
        ("porter unicode61 remove_diacritics 2", True),
        ("unicode61 remove_diacritics 2", False),
    ]
    configured = store.configured_original_tokenizer()
    stop_words = terms.STOP_WORDS
    for tokenizer, drop_common in variants:
        store.rebuild(only="original", original_tokenizer=tokenizer)
        terms.STOP_WORDS = stop_words if drop_common else frozenset()
        try:
            label = f"original index tokenizer {tokenizer}" + ("" if drop_common else ", stop words kept")
            ranks, _ = evaluate(qs, by_source, {label: ("search", {})})
            out.update(ranks)
        finally:
            terms.STOP_WORDS = stop_words
    store.rebuild(only="original", original_tokenizer=configured)
    return out


def child(args):
    """Every question put to one library (`args`: data, mode, experiments) in its own process."""
    data, mode, experiments = Path(args["data"]), args["mode"], args["experiments"]
    setup_django(data)
    from django.db import connection

    from library import store
    from library.models import Item

    by_source = harness.read_json(WORK_DIR / "base" / "sources.json")
    by_session = {name: source for source, name in by_source.items()}
    found, _notes = sessions()
    qs, _missing = questions(found)
    info = {"mode": mode}
    if "handwritten" in mode:
        changed = apply_records(by_session)
        info["sessions"] = changed
        written = set(changed)
        qs = [q for q in qs if q["session"] in written]
    if mode == "large" and Item.objects.count() >= LARGE:   # --reuse-large
        info["added"] = Item.objects.filter(summarizer="synthetic").count()
    elif "grown" in mode or mode == "large":
        started = time.monotonic()
        info["added"] = grow(GROW_FACTOR) if mode != "large" else grow(total=LARGE)
        info["grow_seconds"] = round(time.monotonic() - started, 1)
        if mode == "large":
            store.optimize()
    info["items"] = Item.objects.count()
    info["sqlite"] = connection.Database.sqlite_version
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(sum(length(original)), 0) FROM items")
        info["original_chars"] = cursor.fetchone()[0]
    info["check_ok"] = store.check().ok
    configs = configurations(experiments and mode != "large")
    if mode == "large":   # at this size the floor no longer keeps the rules from acting
        del configs["fused, words held by half the library left out at any size"]
        configs["fused, no term left out and no phrase split (every term as typed, FTS5 only)"] = (
            "search", {}, {"ranking__COMMON": 10 ** 9})
    ranks, timing = evaluate(qs, by_source, configs)
    info["fusion_differs"] = check_same_fusion(qs)
    if experiments and mode == "base":
        ranks.update(tokenizer_experiments(qs, by_source))
    info["ms_per_search"] = timing
    return {"info": info, "ranks": ranks, "questions": qs}


# --- the report -----------------------------------------------------------------------------------

def metrics(ranks, ids, form):
    values = [ranks[i][form] for i in ids if form in ranks.get(i, {})]
    if not values:
        return None
    n = len(values)
    out = {f"R@{k}": sum(1 for v in values if v is not None and v <= k) / n for k in KS}
    out["MRR"] = sum(1 / v for v in values if v is not None and v <= 10) / n
    out["n"] = n
    return out


def _cells(m):
    if m is None:
        return ["—"] * 5
    return [f"{m['R@1']:.0%}", f"{m['R@5']:.0%}", f"{m['R@10']:.0%}", f"{m['MRR']:.2f}", str(m["n"])]


def table(result, configs, groups, form):
    lines = harness.header("configuration", "group", "R@1", "R@5", "R@10", "MRR@10", "n")
    for name in configs:
        ranks = result["ranks"].get(name)
        if ranks is None:
            continue
        for label, ids in groups:
            lines.append(harness.row(name, label, *_cells(metrics(ranks, ids, form))))
    return "\n".join(lines)


def half(repo):
    """"A" or "B": a repository's half of the evaluation, by a hash of its name (stable across
    runs): bench/first_prompt.py tunes on A and reports B; recall is reported for both."""
    return "AB"[hashlib.sha256(repo.lower().encode()).digest()[0] % 2]


def groups_of(qs):
    out = [("all", [q["id"] for q in qs])]
    repo_of = repositories()
    for h in "AB":
        out.append((f"half {h}", [q["id"] for q in qs if half(repo_of[q["session"]]) == h]))
    for difficulty in ("easy", "medium", "hard"):
        out.append((difficulty, [q["id"] for q in qs if q["difficulty"] == difficulty]))
    out.append(("English", [q["id"] for q in qs if q["language"] == "en"]))
    out.append(("not English", [q["id"] for q in qs if q["language"] != "en"]))
    return out


def render(results, build_info, notes, command):
    base = results["base"]
    qs = base["questions"]
    m = harness.machine()
    languages = {}
    for q in qs:
        languages[q["language"]] = languages.get(q["language"], 0) + 1
    difficulties = {d: sum(q["difficulty"] == d for q in qs) for d in ("easy", "medium", "hard")}
    lines = [
        "# Recall benchmark results", "",
        f"- Date: {harness.stamp()}",
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['ram']}, Python {m['python']}, SQLite {base['info'].get('sqlite', m['sqlite'])}",
        f"- Command: `{command}`",
        f"- Library: {build_info['sessions']} real sessions, one connector each, built by `jezero run` with the "
        f"default summariser (extractive) in {build_info['run_seconds']} s: {build_info['units_stored']} sessions "
        f"stored as {base['info']['items']} items ({build_info['units_too_small']} too small to keep); "
        f"{base['info']['original_chars'] / 1e6:.1f} M characters of original text; `jezero check` "
        f"{'ok' if base['info']['check_ok'] else 'FAILED'}.",
        f"- Questions: {len(qs)} ({', '.join(f'{v} {k}' for k, v in difficulties.items())}; languages "
        f"{', '.join(f'{k} {v}' for k, v in sorted(languages.items(), key=lambda kv: -kv[1]))}), each asked as "
        f"the keywords an agent would type and as the natural question; a hit is any item of the target session.",
        f"- search() and this script's fusion agree on the top 10 for all but {base['info']['fusion_differs']} "
        f"questions.",
    ]
    for note in notes:
        lines.append(f"- Note: {note}")
    configs = list(dict.fromkeys(name for r in results.values() for name in r["ranks"]))
    # The three configurations of issue 16 side by side (the default re-ranks by meaning), and
    # the original-text index alone.
    main = ["records-only", "lexical fused (meaning_weight 0)", "fused (default)", "original only"]
    for form, title in (("keywords", "Keyword queries"), ("question", "Natural questions"),
                        ("question_en", "Non-English sessions asked in English")):
        lines += ["", f"## {title}", "", "### Base library", "", table(base, main, groups_of(qs), form)]
        if "grown" in results:
            grown = results["grown"]
            lines += ["", f"### Grown library ({grown['info']['items']:,} items: {grown['info']['added']:,} synthetic "
                      f"items with synthetic originals added)", "", table(grown, main, groups_of(qs), form)]
        if "large" in results:
            large = results["large"]
            names = [name for name in large["ranks"] if name not in main]
            lines += ["", f"### Grown to {large['info']['items']:,} items ({large['info']['added']:,} synthetic items "
                      f"with synthetic originals added; `--large`)", "",
                      table(large, [name for name in main[:3] if name in large["ranks"]], groups_of(qs), form), "",
                      "Past 1,000 items a word held by half the library or more is left out (bm25 gives it no "
                      "weight) and a phrase of common words is looked up as its words: this is where those rules act. "
                      "*no term left out and no phrase split* is the same search without them; *exhaustive reference* "
                      "is the default computed by FTS5 alone (the same answer).", "",
                      table(large, names, groups_of(qs)[:1], form)]
        for mode, label in (("handwritten", "base"), ("grown-handwritten", "grown")):
            if mode not in results:
                continue
            hand = results[mode]
            hq = hand["questions"]
            plain = results["base" if label == "base" else "grown"]
            lines += ["", f"### Model-quality records, {label} library ({len(hand['info']['sessions'])} sessions with "
                      f"hand-written records; only their {len(hq)} questions)", "",
                      table(hand, main[:3], groups_of(hq)[:4], form),
                      "", f"The same questions on the {label} library with extractive records:", "",
                      table(plain, main[:3], [("same questions", [q["id"] for q in hq])], form)]
    extra = [name for name in configs if name not in main]
    if extra:
        lines += ["", "## Alternatives measured", "",
                  "R@5 / MRR@10 of each configuration on each library (model-quality: the questions of the "
                  "sessions with hand-written records only).", ""]
        modes = [mode for mode in MODES if mode in results]
        lines += harness.header("configuration", *(f"{mode}: {form}" for mode in modes
                                                   for form in ("keywords", "questions")))
        for name in [*main, *extra]:
            cells = []
            for mode in modes:
                ranks = results[mode]["ranks"].get(name)
                mids = [q["id"] for q in results[mode]["questions"]]
                for form in FORMS:
                    m = metrics(ranks, mids, form) if ranks else None
                    cells.append(f"{m['R@5']:.0%} / {m['MRR']:.2f}" if m else "—")
            lines.append(harness.row(name, *cells))
    timing = base["info"]["ms_per_search"]
    lines += ["", "Median time per `search()` on the base library: " +
              ", ".join(f"{name} {ms:.1f} ms" for name, ms in timing.items()) + "."]
    if "grown" in results:
        lines += ["On the grown library: " + ", ".join(f"{name} {ms:.1f} ms" for name, ms in
                                                       results["grown"]["info"]["ms_per_search"].items()) + "."]
    misses = [q for q in qs if (base["ranks"]["fused (default)"].get(q["id"], {}).get("question") or 99) > 5]
    if misses:
        lines += ["", "## Natural questions the fused default misses at 5 (base library)", ""]
        for q in misses:
            rank = base["ranks"]["fused (default)"][q["id"]]["question"]
            lines.append(f"- `{q['id']}` ({q['difficulty']}, {q['language']}, rank {rank or '>10'}) "
                         f"{q['question']} → {q['session']}")
    return "\n".join(lines) + "\n"


def main():
    if harness.child_main({"search": child}):
        return
    parser = harness.parser(__doc__)
    parser.add_argument("--no-experiments", action="store_true", help="only records-only, fused, original only")
    parser.add_argument("--no-grow", action="store_true", help="skip the grown library")
    parser.add_argument("--skip-build", action="store_true", help="reuse bench/work/recall/base")
    parser.add_argument("--large", action="store_true", help=f"also a copy grown to {LARGE:,} items")
    parser.add_argument("--reuse-large", action="store_true", help="search the grown copy of the last --large run")
    parser.add_argument("--modes", help=f"only these libraries (comma-separated: {', '.join(MODES)}); the "
                                        "report keeps the others' last results")
    parser.add_argument("--output", default=str(BENCH_DIR / "RESULTS-recall.md"))
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    experiments = not args.no_experiments
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    found, notes = sessions()
    qs, missing = questions(found)
    if missing:
        notes.append(f"{missing} question(s) left out: their session is not available here")
    build_path = WORK_DIR / "build.json"
    if not args.report_only:
        if args.skip_build:
            data = WORK_DIR / "base"
            build_info = harness.read_json(build_path)
        else:
            print(f"building the library from {len(found)} sessions …", flush=True)
            data, _by_source, build_info = build(found)
            build_info["sessions"] = len(found)
            harness.write_json(build_path, build_info)
        modes = ["base", "handwritten"] + ([] if args.no_grow else ["grown", "grown-handwritten"])
        modes += ["large"] if args.large else []
        if args.modes:
            modes = [mode for mode in args.modes.split(",") if mode in MODES]
        for mode in modes:
            print(f"searching the {mode} library …", flush=True)
            reuse = mode == "large" and args.reuse_large and (WORK_DIR / mode / "jezero.sqlite3").exists()
            library = data if mode == "base" else WORK_DIR / mode if reuse else copy_library(data, mode)
            harness.spawn(__file__, "search", out=WORK_DIR / f"result-{mode}.json", data=str(library), mode=mode,
                          experiments=experiments)
    build_info = harness.read_json(build_path)
    results = {mode: harness.read_json(WORK_DIR / f"result-{mode}.json")
               for mode in MODES if (WORK_DIR / f"result-{mode}.json").exists()}
    for result in results.values():   # results saved before the label lost its spec section
        if "records-only (§7)" in result.get("ranks", {}):
            result["ranks"]["records-only"] = result["ranks"].pop("records-only (§7)")
    command = "python bench/recall.py " + " ".join(sys.argv[1:])
    harness.write_report(args.output, render(results, build_info, notes, command.strip()))


if __name__ == "__main__":
    main()
