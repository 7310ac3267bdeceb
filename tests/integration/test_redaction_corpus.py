"""The planted-secret corpus (docs/design.md "Secrets never land") end to end: the planted corpus as a Claude Code session through a real connector run
(the real extractive summariser) into the database — no secret in what is sent to the
summariser, in any stored field, in either full-text index or in the JSONL export; the benign
strings arrive intact — and `redact-stored` taking secrets that older rules missed out of a
library, both indexes included, with a dry run that only counts."""

import io
import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from library import records, store
from library.ingest import maintenance, pipeline
from library.models import Item
from library.search import ALL_SOURCES, search
from tests import secrets_corpus as corpus
from tests.conftest import Counting, make_item
from tests.integration.conftest import age, configure

pytestmark = pytest.mark.django_db

SEED = 12
_RUN = re.compile(r"[A-Za-z0-9]{8,}")


# Here all secrets and benign strings share one text, where two random base64 strings share 6
# characters now and then; 10 characters of a secret found elsewhere are that secret.
WINDOW = 10


def _window_index(text):
    """Every WINDOW-character substring of `text` (markers left out), for quick look-ups."""
    text = re.sub(r"\[REDACTED:[^\]\n]*\]", "\0", text)
    return {text[i:i + WINDOW] for i in range(len(text) - WINDOW + 1)}


def _leaks(planted, text):
    windows = _window_index(text)
    return [s for s in planted if len(s.core) >= WINDOW
            and any(s.core[i:i + WINDOW] in windows for i in range(len(s.core) - WINDOW + 1))]


def _runs(sample):
    """The words of 8+ letters and digits (with a digit) that hold part of the secret's random
    part, as they stand in the text: what a search for the secret would type."""
    start = sample.text.index(sample.secret) + sample.public
    end = start + len(sample.core)
    return [m.group() for m in _RUN.finditer(sample.text)
            if m.start() < end and m.end() > start and any(c.isdigit() for c in m.group())]


def _matches(table, run):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH %s", [f'"{run}"'])
        return cursor.fetchone()[0]


def _session_file(tmp_path, texts):
    """A Claude Code session in which each (kind, text) is a user message, or a Bash call for a
    tool line's tail."""
    folder = tmp_path / "projects" / "-home-ana-shop"
    folder.mkdir(parents=True)
    start, lines, parent = datetime(2026, 3, 2, 10, 0, tzinfo=UTC), [], None
    for n, (context, text) in enumerate(texts):
        common = {"uuid": f"u{n}", "parentUuid": parent, "sessionId": "5f0c1a2b", "cwd": "/home/ana/shop",
                  "timestamp": (start + timedelta(seconds=n)).isoformat().replace("+00:00", "Z")}
        if context == "tool-tail":
            lines.append({**common, "type": "assistant", "message": {"id": f"m{n}", "role": "assistant", "content": [
                {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": text}}]}})
        else:
            lines.append({**common, "type": "user", "message": {"role": "user", "content": text}})
        parent = f"u{n}"
    path = folder / "5f0c1a2b.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    age(path)
    return tmp_path / "projects"


def test_no_planted_secret_reaches_the_model_the_database_the_indexes_or_the_export(settings, tmp_path):
    planted, benign = corpus.planted(SEED), corpus.benign(SEED)
    texts = [(s.context, s.text) for s in planted] + [("benign", b.text) for b in benign]
    configure(settings, {"name": "secrets-laptop", "type": "claude_code", "path": str(_session_file(tmp_path, texts))})
    model = Counting()
    report = pipeline.run("secrets-laptop", summarizer=model)
    assert report.units_stored == 1 and report.segments_summarised == len(model.requests) > 1

    sent = "\n".join(request.document + "\n" + "\n".join(text for _, text in request.blocks) for request in model.requests)
    assert not _leaks(planted, sent)
    items = list(Item.objects.filter(source="secrets-laptop"))
    stored = "\n".join(json.dumps([i.title, i.summary, i.questions, i.atoms, i.original, i.hints]) for i in items)
    assert [s.kind for s in _leaks(planted, stored)] == []
    export = io.StringIO()
    records.export_jsonl(export, source="secrets-laptop")
    assert [s.kind for s in _leaks(planted, export.getvalue())] == []
    runs = [run for sample in planted for run in _runs(sample)]
    assert len(runs) > 300
    assert [run for run in runs if _matches("items_fts", run) or _matches("items_original_fts", run)] == []

    originals = "\n".join(i.original for i in items)
    kept = [b for b in benign if b.text.strip() in originals]
    assert len(kept) / len(benign) > 0.99, [b.text[:100] for b in benign if b not in kept][:5]


def test_redact_stored_takes_what_older_rules_missed_out_of_both_indexes_with_a_dry_run_first():
    """Items stored before these rules (here: stored raw) hold secrets; the dry run counts them
    and changes nothing; the run redacts them, after which no search finds them, through the
    record index or the original-text index; a second run changes nothing."""
    planted = [s for s in corpus.planted(SEED) if _runs(s)][::4]
    items = [make_item(title="Deploy notes", summary=f"The setup used {s.text[:200]}", original=f"user: {s.text}",
                       hints={"cwd": "/home/ana/shop", "note": s.text[:300]}) for s in planted]
    probe = _runs(planted[0])[0]
    assert items[0].pk in [hit.id for hit in search(probe, allowed_sources=ALL_SOURCES).hits]

    dry = maintenance.redact_stored(dry_run=True)
    assert dry.changed == len(items)
    assert Item.objects.get(pk=items[0].pk).original == f"user: {planted[0].text}"

    assert maintenance.redact_stored().changed == len(items)
    for sample in planted:
        for run in _runs(sample):
            assert _matches("items_original_fts", run) == 0 and _matches("items_fts", run) == 0, (sample.kind, run)
            assert search(run, allowed_sources=ALL_SOURCES).hits == [], (sample.kind, run)
    stored = "\n".join(json.dumps([i.title, i.summary, i.original, i.hints]) for i in Item.objects.all())
    assert _leaks(planted, stored) == []
    # The vectors of what was said were made again, from the redacted text (by digest).
    assert store.check().ok
    assert maintenance.redact_stored().changed == 0
