#!/usr/bin/env python
"""Extractive summariser throughput: segments per second on one core, over real sessions.

A benchmark script, not a test. It reads every session it can find the way `jezero preview`
does — the connector reads the file, `library.ingest.pipeline.clean` numbers and redacts the blocks,
`library.ingest.segments.segment` cuts them at `--max-input-chars` (default 60,000) — and builds the
request the pipeline would send (`Run.request`: the segment's text, its blocks, the title
hint with " (part n/m)"). Only `ExtractiveSummarizer.summarize` is timed, one segment after
the other in this one thread, over `--runs` runs (default 5); it prints the median run's
segments/s for all segments and for the largest ones (at least 50,000 characters), and
checks that every run wrote the same records (the summariser is deterministic).

Sessions: every unit of tests/fixtures (one folder per connector type, and the sessions/
folder of SpecStory exports) and, when present, the SpecStory exports in ../shared/corpus
(read only). `--corpus DIR` points elsewhere.

    .venv/bin/python bench/extractive.py
    .venv/bin/python bench/extractive.py --runs 9 --max-input-chars 20000
"""

import statistics
import sys
import tempfile
import time
from pathlib import Path

import harness
from harness import REPO_DIR

FIXTURES = REPO_DIR / "tests" / "fixtures"
CORPUS = REPO_DIR.parent / "shared" / "corpus"
# tests/fixtures: (connector type, folder) as the connector and summariser tests read them.
FOLDERS = (
    ("claude_code", "claude_code"),
    ("codex", "codex"),
    ("gemini_cli", "gemini_cli"),
    ("pi", "pi"),
    ("specstory", "specstory"),
    ("specstory", "sessions"),
    ("markdown", "markdown/board"),
)
LARGE = 50_000


def setup_django():
    """Settings from a throw-away data folder with no configuration file (defaults); no
    database is touched."""
    data = Path(tempfile.mkdtemp(prefix="jezero-bench-extractive-"))
    (data / "static").mkdir()
    harness.setup_django(data)


def sources(corpus):
    """(connector type, connector) for each place sessions are read from."""
    from connectors import registry

    for ctype, folder in FOLDERS:
        if (FIXTURES / folder).is_dir():
            yield ctype, registry.make(ctype, {"path": str(FIXTURES / folder)})
    if corpus is not None and corpus.is_dir():
        yield "specstory", registry.make("specstory", {"path": str(corpus)})


def requests(corpus, limit):
    """The SummaryRequests the pipeline would build, as `jezero preview` reads the files."""
    from django.conf import settings

    from connectors.base import UnitError
    from library.ingest import pipeline, redact
    from library.ingest.segments import segment
    from library.ingest.summarize import SummaryRequest
    from library.ingest.summarize.prompt import context_line

    redactor = redact.Redactor(settings.JEZERO["redaction"]["extra_patterns"])
    out = []
    for ctype, connector in sources(corpus):
        for unit in connector.discover():
            try:
                reading = connector.read(unit)
            except UnitError:
                continue
            blocks, hints = pipeline.clean(reading, {}, redactor)
            for seg in segment(unit.id, blocks, limit) if blocks else ():
                out.append(SummaryRequest(
                    document=seg.text,
                    title_hint=seg.title_hint(hints.get("title_hint")),
                    context=context_line(f"bench-{ctype}", hints, ctype),
                    blocks=tuple((b.role, b.text) for b in seg.blocks),
                ))
    return out


def timed_run(summarizer, reqs):
    """(seconds for all, seconds for the large ones, the records) for one pass."""
    total = large = 0.0
    records = []
    for request in reqs:
        start = time.perf_counter()
        summary = summarizer.summarize(request)
        spent = time.perf_counter() - start
        total += spent
        if len(request.document) >= LARGE:
            large += spent
        records.append(summary.record)
    return total, large, records


def main():
    parser = harness.parser(__doc__)
    parser.add_argument("--runs", type=int, default=5, help="timed runs (default 5); the median is reported")
    parser.add_argument("--max-input-chars", type=int, default=60_000, help="segment size (default 60,000)")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="a folder of SpecStory exports")
    args = parser.parse_args()

    setup_django()
    from library.ingest.summarize.extractive import ExtractiveSummarizer

    reqs = requests(args.corpus, args.max_input_chars)
    if not reqs:
        sys.exit("no sessions found")
    n_large = sum(1 for request in reqs if len(request.document) >= LARGE)
    chars = sum(len(request.document) for request in reqs)
    summarizer = ExtractiveSummarizer()
    timed_run(summarizer, reqs)        # warm-up: regular expressions compiled, caches filled
    runs, first = [], None
    for _ in range(args.runs):
        total, large, records = timed_run(summarizer, reqs)
        if first is None:
            first = records
        elif records != first:
            sys.exit("the records differ between runs: the summariser is not deterministic")
        runs.append((total, large))
    total = statistics.median(run[0] for run in runs)
    large = statistics.median(run[1] for run in runs)
    print(f"segments: {len(reqs)} ({chars / 1e6:.1f} M characters, max_input_chars {args.max_input_chars:,}); "
          f"{args.runs} runs, median")
    print(f"all segments:        {len(reqs) / total:8.1f} segments/s   {chars / total / 1e6:5.2f} M chars/s   "
          f"{total / len(reqs) * 1000:6.2f} ms/segment")
    if n_large:
        print(f"segments >= {LARGE:,} chars ({n_large}): {n_large / large:6.1f} segments/s   "
              f"{large / n_large * 1000:6.2f} ms/segment")
    print("records identical in every run: yes")


if __name__ == "__main__":
    main()
