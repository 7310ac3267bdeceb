#!/usr/bin/env python
"""First-prompt injection replay (SPEC §13 "Precision"): what would the UserPromptSubmit hook
show, and is it related?

A benchmark script, not a test. It reuses the library bench/recall.py built
(bench/work/recall/base: every real session of the evaluation, one source each) and replays
each session's real first prompt against it twice:

- **continuation**: the library holds everything but the session itself, so sessions of the
  same repository (the same project's earlier and later work) are there to be found;
- **no own work**: the library holds only sessions of *other* repositories, the case where the
  old rule injected unrelated items most of the time.

An injected item counts as related when it comes from the same repository as the prompt's
session (the manifests say which); anything from another repository counts as unrelated,
which is strict (two projects can share a subject), so the precision figures are a floor.
Reported for the old rule of SPEC §13 (search, keep results with two prompt words as whole
words in title or summary), both through records-only search (as it ran before the original
index) and through the fused search, and for the rule `library.access.hooks.first_prompt` applies
now, with its thresholds varied.

    .venv/bin/python bench/recall.py --no-experiments --no-grow   # builds the library, if not there
    .venv/bin/python bench/first_prompt.py                          # → bench/RESULTS-first-prompt.md
"""

import harness
import recall  # bench/recall.py: the sessions, the library, Django set-up

OUTPUT = harness.BENCH_DIR / "RESULTS-first-prompt.md"


def first_prompts(by_source):
    """{source: the first user block of its session} from the stored originals."""
    from library.ingest.segments import parse_blocks
    from library.models import Item

    first = {}
    for item in Item.objects.order_by("pk").only("source", "key", "original"):
        block = int(item.key.rsplit("#", 1)[1]) if "#" in item.key else 0
        if item.source in first and first[item.source][0] <= block:
            continue
        user = next((text for role, text in parse_blocks(item.original) if role == "user"), None)
        if user:
            first[item.source] = (block, user)
    return {source: text for source, (_block, text) in first.items() if source in by_source}


def old_rule(prompt, allowed, records_only):
    """SPEC §13 steps 1–5 as first written: search the distinctive words, keep a result when two
    of them appear as whole words in its title or summary, show three."""
    from library import search
    from library.access import hooks

    words = hooks.distinctive_words(prompt)
    if len(words) < 2:
        return []
    result = search.search(" ".join(words), allowed_sources=allowed, limit=8, records_only=records_only)
    wanted, kept = set(words), []
    for hit in result.hits:
        present = set(hooks._WORD.findall(hooks.fold(f"{hit.title} {hit.summary}")))
        if len(wanted & present) >= 2:
            kept.append(hit)
    return kept[:3]


def new_rule(prompt, allowed, project):
    from library.access import hooks

    words = hooks.distinctive_words(prompt)
    if len(words) < hooks.MIN_SHARED_WORDS:
        return []
    context = hooks.first_prompt(prompt, allowed_sources=allowed, project=project).context
    ids = [int(line.split("]", 1)[0][1:]) for line in context.splitlines() if line.startswith("[")]
    from library import search

    return search.hits_for(ids, allowed_sources=allowed)


def replay(rule, prompts, by_source, repo_of, source_of_item):
    """Injections for both replays: {"continuation": {...}, "no_own_work": {...}}."""
    sources = list(by_source)
    out = {}
    for mode in ("continuation", "no_own_work"):
        injected = related = prompts_with = 0
        reachable = found = 0
        examples = []
        for source, prompt in prompts.items():
            repo = repo_of[by_source[source]]
            if mode == "continuation":
                allowed = [s for s in sources if s != source]
            else:
                allowed = [s for s in sources if repo_of[by_source[s]] != repo]
            same_repo_there = any(repo_of[by_source[s]] == repo for s in allowed)
            hits = rule(prompt, allowed, recall.project_slug(repo))
            good = [h for h in hits if repo_of[by_source[h.source]] == repo]
            injected += len(hits)
            related += len(good)
            prompts_with += bool(hits)
            if same_repo_there:
                reachable += 1
                found += bool(good)
            for hit in hits:
                if hit not in good:
                    examples.append((by_source[source], prompt[:160], by_source[hit.source], hit.title[:100]))
        out[mode] = {"prompts": len(prompts), "prompts_with_injection": prompts_with, "injected": injected,
                     "related": related, "reachable": reachable, "continued": found, "unrelated_examples": examples}
    return out


def child(_args):
    recall.setup_django(recall.WORK_DIR / "base")
    from library.access import hooks

    by_source = harness.read_json(recall.WORK_DIR / "base" / "sources.json")
    repo_of = recall.repositories()
    prompts = first_prompts(by_source)
    prompts = {s: p for s, p in prompts.items() if len(hooks.distinctive_words(p)) >= 2}
    rules = {
        "old rule, records-only search (as first built)": lambda p, a, _project: old_rule(p, a, True),
        "old rule, fused search": lambda p, a, _project: old_rule(p, a, False),
        "rare words only (no project sent)": lambda p, a, _project: new_rule(p, a, None),
    }
    results = {name: replay(rule, prompts, by_source, repo_of, None) for name, rule in rules.items()}
    defaults = (hooks.RARE_SHARE, hooks.RARE_MIN_ITEMS, hooks.MIN_SHARED_WORDS)
    variants = [(share, minimum, shared) for share in (0.01, 0.02, 0.03, 0.05, 0.10)
                for minimum in (3,) for shared in (2, 3)]
    for share, minimum, shared in variants:
        hooks.RARE_SHARE, hooks.RARE_MIN_ITEMS, hooks.MIN_SHARED_WORDS = share, minimum, shared
        label = f"rare words: share {share:.0%}, at least {minimum} items, {shared} shared"
        if (share, minimum, shared) == defaults:
            label = "**new rule (default)**: " + label
        results[label] = replay(new_rule, prompts, by_source, repo_of, None)
    hooks.RARE_SHARE, hooks.RARE_MIN_ITEMS, hooks.MIN_SHARED_WORDS = defaults
    from library import search

    return {"results": results, "prompts": len(prompts), "items": search.library_size()}


def render(data):
    m = harness.machine()
    lines = [
        "# First-prompt injection replay", "",
        f"- Date: {harness.stamp()}; machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}",
        "- Command: `python bench/first_prompt.py` (library: bench/recall.py's base library, "
        f"{data['items']} items from the evaluation's real sessions, extractive records)",
        f"- {data['prompts']} real first prompts (the first user block of each session with at least two "
        "distinctive words), each replayed with the rest of the library (*continuation*) and with only other "
        "repositories' sessions (*no own work*).",
        "- **related** = the injected item comes from the prompt's own repository; precision = related / injected "
        "over both replays (a floor: an item from another repository on the same subject counts as unrelated). "
        "**continuation** = prompts whose repository has other sessions in the library that get at least one of "
        "them injected.",
        "",
        *harness.header("rule", "precision", "injected (continuation / no own work)",
                        "prompts with an injection (cont. / none)", "continuation found"),
    ]
    for name, result in data["results"].items():
        cont, none = result["continuation"], result["no_own_work"]
        injected = cont["injected"] + none["injected"]
        precision = (cont["related"] + none["related"]) / injected if injected else float("nan")
        lines.append(harness.row(
            name, f"{precision:.0%} ({cont['related'] + none['related']}/{injected})",
            f"{cont['injected']} / {none['injected']}",
            f"{cont['prompts_with_injection']} / {none['prompts_with_injection']} of {cont['prompts']}",
            f"{cont['continued']}/{cont['reachable']} ({cont['continued'] / cont['reachable']:.0%})"))
    default = next(name for name in data["results"] if name.startswith("**new rule"))
    lines += ["", "## Unrelated injections of the new rule (default), for a reader to judge", ""]
    for mode in ("continuation", "no_own_work"):
        for session, prompt, other, title in data["results"][default][mode]["unrelated_examples"]:
            lines.append(f"- *{mode}* `{session}`: “{prompt}” → `{other}`: {title}")
    return "\n".join(lines) + "\n"


def main():
    if harness.child_main({"replay": child}):
        return
    parser = harness.parser(__doc__)
    parser.add_argument("--output", default=str(OUTPUT))
    args = parser.parse_args()
    data = harness.spawn(__file__, "replay", out=recall.WORK_DIR / "result-first-prompt.json")
    harness.write_report(args.output, render(data))


if __name__ == "__main__":
    main()
