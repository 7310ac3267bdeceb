#!/usr/bin/env python
"""Redaction throughput benchmark: `library.ingest.redact.redact()` in MB/s on transcript-like text.

A benchmark script, not a test. It builds ~20 MB of text that looks like what connectors
feed the redactor: blocks of an agent session (user and assistant prose, one-line tool
notes such as `tool: Bash: git status`, Python and shell snippets, JSON configs, stack
traces) with a secret planted in about one block in fifty. It prints the median of 5 runs
redacting the blocks one at a time, as the pipeline does (SPEC §3: each block's text), and
of 5 runs redacting all of it as one text. Every random
choice uses a fixed seed. No Django settings are needed: `library.ingest.redact` imports none.

    .venv/bin/python bench/redact.py              # ~20 MB, 5 runs
    .venv/bin/python bench/redact.py --mb 5 --runs 3
"""

import os
import random
import statistics
import string
import time

import harness  # puts the repository on sys.path

from library.ingest import redact as redact_module

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


def measure(texts, runs):
    """(wall seconds, CPU seconds) per run to redact every text in `texts`, one call each.
    CPU time is printed too because wall time is inflated when other work shares the cores."""
    redact = redact_module.redact
    wall, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        for text in texts:
            redact(text)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return wall, cpu


def main(argv=None):
    parser = harness.parser(__doc__)
    parser.add_argument("--mb", type=float, default=20.0, help="size of the text in MB (default 20)")
    parser.add_argument("--runs", type=int, default=5, help="runs; the median is reported (default 5)")
    args = parser.parse_args(argv)

    blocks = make_blocks(int(args.mb * 1_000_000))
    joined = "\n\n".join(blocks)
    total = len(joined.encode()) / 1e6
    counts = redact_module.default.count(joined)
    print(f"redact VERSION {redact_module.VERSION}; {len(blocks):,} blocks (mean {len(joined) // len(blocks)} chars), "
          f"{total:.1f} MB; cpus: {os.cpu_count()}")
    print(f"secrets found: {sum(counts.values())} ({', '.join(f'{k} {n}' for k, n in sorted(counts.items()))})")
    for label, texts in (("block by block", blocks), ("as one text", [joined])):
        wall, cpu = measure(texts, args.runs)
        print(f"{label}: {total / statistics.median(wall):.1f} MB/s (median of {args.runs} runs: "
              f"{', '.join(f'{t:.2f}' for t in wall)} s); CPU time: {total / statistics.median(cpu):.1f} MB/s")


if __name__ == "__main__":
    main()
