#!/usr/bin/env python
"""First-prompt replay at the scale of use: what would the first-prompt hook show, and is it
related? (docs/design.md "The first-prompt rule")

A benchmark script, not a test. It lays out every real public session the evaluation has —
`../shared/corpus/`, `../shared/fixtures/`, `bench/recall/extra-sessions.tsv` and the
manifests in `bench/first-prompt/` (files in the git-ignored `bench/corpus-extra/`, each
sha256-checked) — one connector each, with the project of its repository, builds libraries
from them with `jezero run` (extractive records), and sends each session's real first prompt
to the hook endpoint (`POST /api/v1/hooks/first-prompt`, a client token) with the `cwd` it
ran in (`/home/dev/src/<repository name>`, a projects root):

- **continuation**: for every repository with several sessions, its latest session's first
  prompt, to a library holding the earlier sessions (and every other repository's, less
  their latest): earlier work of the repository is there to be found;
- **fresh**: every session's first prompt, to a library without its repository (the
  repositories are cut into GROUPS groups; a group's prompts go to a library of the others).

An injected item is **related** when it comes from the prompt's own repository; anything
else counts as unrelated, which is strict (two repositories can share a subject): precision
is a floor. The repositories are split in two halves by a hash of their names: the rule was
tuned on half A only; half B is the held-out report.

    .venv/bin/python bench/first_prompt.py            # → bench/RESULTS-first-prompt.md
    .venv/bin/python bench/first_prompt.py --variants # also the rule's thresholds varied (tuning)
"""

import csv
import hashlib
import json
import re
import shutil
import time

import harness
import recall  # bench/recall.py: the sessions of the recall evaluation, the layout of a session file

OUTPUT = harness.BENCH_DIR / "RESULTS-first-prompt.md"
MANIFESTS = harness.BENCH_DIR / "first-prompt"
BEFORE = MANIFESTS / "before.json"        # the figures of the rule before this evaluation (committed)
WORK_DIR = harness.WORK_DIR / "first-prompt"
SECRET = "first-prompt-benchmark-not-a-secret"
ROOT = "/home/dev/src"                    # the replayed prompts' working folders sit here
GROUPS = 4                                # fresh replay: a group's prompts go to a library of the others
TUNED = "A"                               # the half the rule was tuned on; the other is held out
HOOK = "/api/v1/hooks/first-prompt"


# --- the sessions ------------------------------------------------------------------------------

def sessions():
    """({name: (type, path, layout)}, {name: repository}, {name: language or None}, notes)."""
    found, notes = recall.sessions()
    repo_of = recall.repositories()
    language = {}
    for manifest in sorted(MANIFESTS.glob("sessions-*.tsv")):
        with open(manifest, encoding="utf-8") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                path = recall.EXTRA_DIR / row["type"] / row["file"]
                key = f"extra/{row['type']}/{row['file']}"
                if not path.exists():
                    notes.append(f"{key} is not in bench/corpus-extra/ (fetch it: see {manifest.name})")
                    continue
                if recall.sha256(path) != row["sha256"]:
                    notes.append(f"{key} differs from its sha256 in {manifest.name}: left out")
                    continue
                found[key] = (row["type"], path, recall._layout(row["type"], row["path"], row["file"]))
                repo_of[key] = row["repo"]
                language[key] = row.get("language") or None
    return found, repo_of, language, notes


half = recall.half   # "A" or "B": a repository's half, by a hash of its name


def group(repo):
    return hashlib.sha256(repo.lower().encode()).digest()[1] % GROUPS


_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_LATIN_WORDS = {   # a few words that only one of these languages uses often
    "es": {"que", "para", "con", "una", "los", "las", "del", "por", "esta", "necesito", "quiero", "puedes"},
    "pt": {"que", "para", "com", "uma", "não", "você", "isso", "preciso", "quero", "está", "também", "fazer"},
    "fr": {"que", "pour", "avec", "une", "les", "des", "est", "dans", "pas", "je", "vous", "faire"},
    "de": {"und", "die", "der", "das", "ist", "nicht", "mit", "ich", "bitte", "eine", "für", "auch"},
    "it": {"che", "per", "con", "una", "gli", "della", "sono", "non", "questo", "voglio", "fare", "anche"},
}


def detect_language(text):
    """The language of a prompt, roughly (for sessions whose manifest does not say): its script,
    then for Latin text the language whose common words it uses most (at least three)."""
    text = text[:2000]
    if _HANGUL.search(text):
        return "ko"
    if _KANA.search(text):
        return "ja"
    if _HAN.search(text):
        return "zh"
    if len(_CYRILLIC.findall(text)) > 10:
        return "ru"
    words = re.findall(r"\w+", text.lower())
    scores = {lang: sum(w in common for w in words) for lang, common in _LATIN_WORDS.items()}
    english = sum(w in {"the", "and", "to", "is", "of", "in", "it", "this", "that", "with", "for"} for w in words)
    best = max(scores, key=scores.get)
    return best if scores[best] >= 3 and scores[best] > english else "en"


# --- building ---------------------------------------------------------------------------------

_FOLDERS = {}   # repository → its folder under ROOT (set by `lay_out`)


def lay_out(repos):
    """Each repository's folder: its name, or `owner-name` where two repositories of the
    evaluation share a name (one machine cannot hold both at one path, and the project rule
    would make them one project)."""
    names = count(repo.rsplit("/", 1)[-1].lower() for repo in repos)
    _FOLDERS.update({repo: repo.rsplit("/", 1)[-1] if names[repo.rsplit("/", 1)[-1].lower()] == 1
                     else repo.replace("/", "-") for repo in repos})


def slug(repo):
    from library.ingest.projects import normalise

    return normalise(_FOLDERS[repo]) or "unknown"


def cwd(repo):
    return f"{ROOT}/{_FOLDERS[repo]}"


def build(name, chosen, found, repo_of, source_of):
    """A library of the `chosen` sessions at WORK_DIR/name, one connector each (its source
    from `source_of`, its project its repository's), built by `jezero run`."""
    data = WORK_DIR / name
    shutil.rmtree(data, ignore_errors=True)
    (data / "sessions").mkdir(parents=True)
    blocks = [f'[projects]\nroots = ["{ROOT}"]\n']
    for session in sorted(chosen):
        kind, path, relative = found[session]
        source = source_of[session]
        folder = data / "sessions" / slug(repo_of[session]) / source
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, folder / relative)
        blocks.append(f'[[connectors]]\nname = "{source}"\ntype = "{kind}"\npath = "{folder}"\n'
                      f'settle_minutes = 0\nproject = "{slug(repo_of[session])}"\n')
    (data / "jezero.toml").write_text("\n".join(blocks), encoding="utf-8")
    harness.use_data_dir(data, SECRET)
    harness.jezero("migrate", "--verbosity", "0")
    started = time.monotonic()
    reports = json.loads(harness.jezero("run", "--json"))["runs"]
    return {"seconds": round(time.monotonic() - started, 1), "sessions": len(chosen),
            "stored": sum(r.get("units_stored", 0) for r in reports)}


# --- the children: one library each ---------------------------------------------------------------

def survey(args):
    """Of the full library: each source's first prompt and first date."""
    harness.setup_django(args["data"], secret=SECRET)
    from library.ingest.segments import parse_blocks
    from library.models import Item

    first, dates = {}, {}
    for item in Item.objects.order_by("pk").only("source", "key", "original", "occurred_at"):
        dates[item.source] = min(dates.get(item.source, item.occurred_at), item.occurred_at)
        block = int(item.key.rsplit("#", 1)[1]) if "#" in item.key else 0
        if item.source in first and first[item.source][0] <= block:
            continue
        user = next((text for role, text in parse_blocks(item.original) if role == "user"), None)
        if user and user.strip():
            first[item.source] = (block, user)
    return {"prompts": {s: text for s, (_b, text) in first.items()},
            "dates": {s: d.isoformat() for s, d in dates.items()}}


def replay(args):
    """Each prompt through the hook endpoint, once per rule variant: {variant: {key: [sources]}}."""
    harness.setup_django(args["data"], secret=SECRET, JEZERO_API_RATE_PER_MINUTE="1000000")
    from django.test import Client

    from library.access import clients, hooks
    from library.models import Item

    _client, token = clients.create("replay", sources=["*"])
    http = Client(headers={"authorization": f"Bearer {token}"}, SERVER_NAME="127.0.0.1")
    source_of = dict(Item.objects.values_list("pk", "source"))
    out, timing = {}, []
    for label, changes in variants(args["tuning"]).items():
        saved = {name: getattr(hooks, name) for name in changes}
        for name, value in changes.items():
            setattr(hooks, name, value)
        try:
            shown = {}
            for key, prompt, folder in harness.read_json(args["prompts"]):
                started = time.perf_counter_ns()
                body = {"prompt": prompt, **({"cwd": folder} if folder else {})}
                response = http.post(HOOK, body, content_type="application/json")
                timing.append(time.perf_counter_ns() - started)
                assert response.status_code == 200, (response.status_code, response.content[:200])
                context = response.json()["context"]
                ids = [int(line[1:line.index("]")]) for line in context.splitlines() if line.startswith("[")]
                shown[key] = [source_of[i] for i in ids]
            out[label] = shown
        finally:
            for name, value in saved.items():
                setattr(hooks, name, value)
    return {"shown": out, "latency": harness.latency_ms(timing) if timing else None}


def recall_at_scale(args):
    """bench/recall.py's questions put to the full library (every session here as a
    distractor): recall@1/@5 of the default search per half and form, and with the recency
    factor off (what the spec's recency boost costs this evaluation)."""
    harness.setup_django(args["data"], secret=SECRET)
    from library import search

    found, repo_of, _language, _notes = sessions()
    source_of = {name: f"s{n:04d}" for n, name in enumerate(sorted(found), start=1)}
    questions, _missing = recall.questions(found)
    out = {}
    for label, changes in (("default", {}), ("recency_weight 0", {"recency_weight": 0.0})):
        with recall.patched(**changes):
            for q in questions:
                for form in recall.FORMS:
                    hits = search.search(q[form], allowed_sources=search.ALL_SOURCES, limit=10, now=recall.NOW).hits
                    rank = next((i + 1 for i, hit in enumerate(hits) if hit.source == source_of[q["session"]]), None)
                    cell = out.setdefault(label, {}).setdefault(half(repo_of[q["session"]]), {}).setdefault(form, [])
                    cell.append(rank)
    return {"ranks": out, "questions": len(questions)}


# --- the parent ---------------------------------------------------------------------------------

def variants(tuning):
    """{label: {hooks constant: value}}: the default rule, and with --variants its thresholds varied."""
    out = {"default": {}}
    if tuning:
        from library.access import hooks

        for name, values in getattr(hooks, "TUNING", {}).items():
            for value in values:
                if value != getattr(hooks, name):
                    out[f"{name} = {value}"] = {name: value}
    return out


def run(tuning):
    found, repo_of, language, notes = sessions()
    names = sorted(found)
    lay_out({repo_of[name] for name in names})
    source_of = {name: f"s{n:04d}" for n, name in enumerate(names, start=1)}
    session_of = {source: name for name, source in source_of.items()}
    builds = {"full": build("full", names, found, repo_of, source_of)}
    surveyed = harness.spawn(__file__, "survey", data=str(WORK_DIR / "full"))
    prompts = {session_of[s]: p for s, p in surveyed["prompts"].items()}
    dates = {session_of[s]: d for s, d in surveyed["dates"].items()}
    for name in names:
        if not language.get(name) and name in prompts:
            language[name] = detect_language(prompts[name])

    by_repo = {}
    for name in names:
        if name in dates:   # stored: a session too small to keep is not in the library
            by_repo.setdefault(repo_of[name], []).append(name)
    latest = {repo: max(kept, key=lambda n: (dates[n], n)) for repo, kept in by_repo.items() if len(kept) >= 2}
    stored = [n for kept in by_repo.values() for n in kept]
    tries = None

    continuation = [(n, prompts[n], cwd(repo_of[n])) for n in latest.values() if n in prompts]
    # The same prompts from a folder outside every project root: only the rule for other projects applies.
    continuation += [(f"anonymous:{n}", prompt, None) for n, prompt, _folder in continuation]
    builds["continuation"] = build("continuation", set(stored) - set(latest.values()), found, repo_of, source_of)
    result = harness.spawn(__file__, "replay", data=str(WORK_DIR / "continuation"),
                           prompts=_written("continuation", continuation), tuning=tuning)
    tries = list(result["shown"])
    shown = {label: {} for label in tries}
    latency = [result["latency"]]
    for label in tries:
        shown[label].update({("anonymous", k.split(":", 1)[1]) if k.startswith("anonymous:") else ("continuation", k): v
                             for k, v in result["shown"][label].items()})
    for g in range(GROUPS):
        inside = [n for n in stored if group(repo_of[n]) != g]
        fresh = [(n, prompts[n], cwd(repo_of[n])) for n in stored if group(repo_of[n]) == g and n in prompts]
        builds[f"fresh-{g}"] = build(f"fresh-{g}", inside, found, repo_of, source_of)
        result = harness.spawn(__file__, "replay", data=str(WORK_DIR / f"fresh-{g}"),
                               prompts=_written(f"fresh-{g}", fresh), tuning=tuning)
        latency.append(result["latency"])
        for label in tries:
            shown[label].update({("fresh", k): v for k, v in result["shown"][label].items()})

    recalled = harness.spawn(__file__, "recall", data=str(WORK_DIR / "full"))
    figures = {label: score(shown[label], repo_of, session_of) for label in tries}
    examples = unrelated(shown["default"], repo_of, session_of, prompts, TUNED)
    corpus = {
        "sessions": len(stored), "repositories": len(by_repo),
        "languages": count(language.get(n) or "unknown" for n in stored),
        "halves": {h: {"repositories": sum(half(r) == h for r in by_repo),
                       "sessions": sum(half(repo_of[n]) == h for n in stored),
                       "continuation": sum(half(r) == h for r in latest)} for h in "AB"},
        "types": count(found[n][0] for n in stored),
        "renamed": sorted(repo for repo, folder in _FOLDERS.items() if "/" not in folder and "-" in folder
                          and folder == repo.replace("/", "-")),
    }
    return {"figures": figures, "corpus": corpus, "builds": builds, "notes": notes, "examples": examples,
            "latency": latency, "code": harness.git_head("library"), "variants": tries,
            "recall": recalled}


def _written(name, prompts):
    """The prompts of one replay, in a file for the child (too long for its command line)."""
    path = WORK_DIR / f"prompts-{name}.json"
    harness.write_json(path, prompts)
    return str(path)


def count(values):
    out = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def score(shown, repo_of, session_of):
    """Per half: continuation prompts, found, injected, related; fresh prompts, with an injection, injected."""
    out = {h: {"cont_prompts": 0, "cont_found": 0, "cont_injected": 0, "cont_related": 0,
               "fresh_prompts": 0, "fresh_with": 0, "fresh_injected": 0, "fresh_related": 0,
               "anon_prompts": 0, "anon_found": 0, "anon_injected": 0, "anon_related": 0} for h in "AB"}
    for (mode, key), sources in shown.items():
        repo = repo_of[key]
        h = out[half(repo)]
        related = sum(repo_of[session_of[s]] == repo for s in sources)
        prefix = {"continuation": "cont", "fresh": "fresh", "anonymous": "anon"}[mode]
        h[f"{prefix}_prompts"] += 1
        h[f"{prefix}_injected"] += len(sources)
        h[f"{prefix}_related"] += related
        if mode == "fresh":
            h["fresh_with"] += bool(sources)
        else:
            h[f"{prefix}_found"] += related > 0
    return out


def unrelated(shown, repo_of, session_of, prompts, which):
    """The default rule's unrelated injections in half `which` (the tuning half), for a reader."""
    out = []
    for (mode, key), sources in sorted(shown.items()):
        if half(repo_of[key]) != which:
            continue
        for source in sources:
            other = session_of[source]
            if repo_of[other] != repo_of[key]:
                out.append((mode, key, repo_of[key], prompts[key][:140], other, repo_of[other]))
    return out


# --- the report -----------------------------------------------------------------------------------

def _pct(a, b):
    return f"{a / b:.0%} ({a}/{b})" if b else "–"


def rows(label, figures, halves="AB"):
    out = []
    for h in halves:
        f = figures[h]
        injected = f["cont_injected"] + f["fresh_injected"]
        related = f["cont_related"] + f["fresh_related"]
        name = f"{h} ({'tuned on' if h == TUNED else 'held out'})"
        out.append(harness.row(label, name, _pct(related, injected), _pct(f["cont_found"], f["cont_prompts"]),
                               f"{f['cont_related']}/{f['cont_injected']}",
                               f"{f['fresh_with']} of {f['fresh_prompts']} ({f['fresh_injected']} items)"))
    return out


def recall_rows(recalled, before, before_code):
    """The recall section: bench/recall.py's questions against this library."""
    def cells(ranks):
        return (f"{sum(r == 1 for r in ranks) / len(ranks):.1%}",
                f"{sum(bool(r) and r <= 5 for r in ranks) / len(ranks):.1%}")

    lines = ["", f"## Recall at this scale: bench/recall.py's {recalled['questions']} questions against the "
             "full library", "",
             "Every session above is a distractor (bench/recall.py's own library holds 168). The default search, "
             "and with the recency factor off for comparison (the spec fixes it at 0.3).", "",
             *harness.header("search", "half", "questions R@1", "questions R@5", "keywords R@1", "keywords R@5")]
    rows = [(f"before ({before_code})", before["ranks"]["default"])] if before else []
    rows += [(label, ranks) for label, ranks in recalled["ranks"].items()]
    for label, ranks in rows:
        for h in "AB":
            lines.append(harness.row(label, h, *cells(ranks[h]["question"]), *cells(ranks[h]["keywords"])))
    return lines


def render(data):
    m = harness.machine()
    c = data["corpus"]
    languages = ", ".join(f"{k} {v}" for k, v in c["languages"].items())
    other = sum(v for k, v in c["languages"].items() if k != "en")
    lines = [
        "# First-prompt replay: related or nothing, at the scale of use", "",
        f"- Date: {harness.stamp()}; machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}; code {data['code']}",
        "- Command: `.venv/bin/python bench/first_prompt.py" + (" --variants" if len(data["variants"]) > 1 else "")
        + "` (see its docstring for the replay)",
        f"- Library: {c['sessions']} real public sessions stored, from {c['repositories']} repositories "
        f"({', '.join(f'{k} {v}' for k, v in c['types'].items())}); languages of the first prompts: {languages} "
        f"({other / c['sessions']:.0%} not English).",
        f"- Halves by a hash of the repository name: A {c['halves']['A']['repositories']} repositories / "
        f"{c['halves']['A']['sessions']} sessions, B {c['halves']['B']['repositories']} / "
        f"{c['halves']['B']['sessions']}. The rule was chosen on the figures and unrelated injections of **{TUNED}**; the other "
        "half's figures are printed beside them, its injections never.",
        "- Repositories that share a name are laid out as `owner-name` (one machine cannot hold both at one "
        f"path; by name the project rule would make them one project): {', '.join(c['renamed']) or 'none'}.",
        "- **precision** = injected items from the prompt's own repository / all injected items (continuation and "
        "fresh together). **continuation found** = latest sessions of a repository with earlier sessions that get "
        "at least one of them injected. **fresh**: prompts that get anything injected from a library without "
        "their repository (every such item is unrelated).",
        "- Builds (`jezero run`, extractive): " + ", ".join(f"{k} {v['seconds']} s" for k, v in data["builds"].items()),
        f"- Hook latency through the endpoint (all replays): p50 {data['latency'][0]['p50']:.1f} ms, "
        f"p95 {max(x['p95'] for x in data['latency'] if x):.1f} ms",
        "",
        *harness.header("rule", "half", "precision", "continuation found", "continuation related/injected",
                        "fresh prompts with an injection"),
    ]
    if BEFORE.exists():
        before = harness.read_json(BEFORE)
        lines += rows(f"before ({before['code']})", before["figures"])
    for label in data["variants"]:
        lines += rows(label if label != "default" else "**now (default)**", data["figures"][label])
    lines += ["", "## Without a project: the same continuation prompts from a folder outside every project root", "",
              "Only the rule for other projects applies: how often it still finds the repository's earlier work, "
              "and how much of what it shows is from the repository.", "",
              *harness.header("rule", "half", "found", "related/injected")]
    for label in data["variants"]:
        for h in "AB":
            f = data["figures"][label][h]
            if "anon_prompts" in f:
                lines.append(harness.row(label, h, _pct(f["anon_found"], f["anon_prompts"]),
                                         f"{f['anon_related']}/{f['anon_injected']}"))
    lines += recall_rows(data["recall"], harness.read_json(BEFORE).get("recall") if BEFORE.exists() else None,
                         harness.read_json(BEFORE)["code"] if BEFORE.exists() else None)
    if data["notes"]:
        lines += ["", "## Sessions left out", "", *[f"- {note}" for note in data["notes"]]]
    lines += ["", f"## Unrelated injections of the default rule in half {TUNED} (tuned on), for a reader to judge", ""]
    for mode, _key, repo, prompt, other, other_repo in data["examples"]:
        prompt = " ".join(prompt.split())
        lines.append(f"- *{mode}* `{repo}` “{prompt}” → `{other_repo}` ({other})")
    if not data["examples"]:
        lines.append("- none")
    return "\n".join(lines) + "\n"


def main():
    if harness.child_main({"survey": survey, "replay": replay, "recall": recall_at_scale}):
        return
    parser = harness.parser(__doc__)
    parser.add_argument("--output", default=str(OUTPUT))
    parser.add_argument("--variants", action="store_true", help="also replay the rule's thresholds varied")
    parser.add_argument("--save-before", action="store_true",
                        help=f"keep the default rule's figures as the 'before' row ({BEFORE.name})")
    args = parser.parse_args()
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    data = run(args.variants)
    harness.write_json(WORK_DIR / "result.json", data)
    if args.save_before:
        harness.write_json(BEFORE, {"code": data["code"], "figures": data["figures"]["default"],
                                    "corpus": data["corpus"], "recall": data["recall"]})
    harness.write_report(args.output, render(data))


if __name__ == "__main__":
    main()
