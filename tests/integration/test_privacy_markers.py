"""The author's markers honoured by every connector type and by uploads (docs/design.md "Kept out"):
a `<private>` span never reaches the model, an item, the database file or a log; a unit with
the line `jezero: skip` in a user block leaves nothing but a count in the run report.

Each connector type reads its own fixture (as tests/integration/test_connectors_end_to_end.py
does); the markers are written into the fixture's own storage — the file, or the agent's
database — inside the text of a user block, the way a person types them."""

import json
import logging
import re
import sqlite3
from pathlib import Path

import pytest
from django.core.management import call_command

from connectors import registry
from jezero_site.config import validate
from library.ingest import pipeline
from library.models import InboxSession, Item, RunReport
from tests.integration.test_api import token_for, upload
from tests.integration.test_connectors_end_to_end import FOLDERS, _copy

pytestmark = pytest.mark.django_db

TYPES = sorted(FOLDERS) + ["hermes", "opencode"]
PRIVATE = "Quokkavelt-Harrowgate diagnosis 7731"   # in no fixture: found anywhere, it leaked
# How a line break is written inside a user block's text in each type's storage.
NEWLINE = {"claude_code": "\\n", "codex": "\\n", "gemini_cli": "\\n", "pi": "\\n", "opencode": "\\n",
           "specstory": "\n", "markdown": "\n", "hermes": "\n"}
NEEDLE = re.compile(r"[A-Za-z][A-Za-z0-9 ,]{11,40}")


def storage(ctype, folder, unit):
    return Path(folder) if ctype in ("hermes", "opencode") else Path(unit.path)


def _raw(path):
    """Every text a database or file holds, as one string (to find a needle in)."""
    if path.suffix == ".db":
        with sqlite3.connect(path) as db:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            return "\n".join(str(v) for t in tables for row in db.execute(f'SELECT * FROM "{t}"') for v in row)
    return path.read_text(encoding="utf-8")


def _replace(path, needle, text):
    if path.suffix == ".db":
        with sqlite3.connect(path) as db:
            for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                for column in [c[1] for c in db.execute(f'PRAGMA table_info("{table}")')]:
                    db.execute(f'UPDATE "{table}" SET "{column}" = replace("{column}", ?, ?) '
                               f'WHERE typeof("{column}") = \'text\'', (needle, text))
        return
    raw = path.read_text(encoding="utf-8")
    path.write_text(raw.replace(needle, text, 1), encoding="utf-8")


def _landed(connector, unit):
    """Whether what `plant` wrote is in a user block as the connector reads it."""
    return any(entry.role == "user" and ("<private>" in entry.text or "jezero: skip" in entry.text.lower())
               for entry in connector.read(unit).entries)


def plant(ctype, folder, addition):
    """Write `addition(needle, newline)` after a stretch of a user block's text (`needle`) in
    the storage of one unit of the fixture, where the connector reads it back as part of a
    user block (not a title or a field); returns that unit's id."""
    connector = registry.make(ctype, {"path": str(folder)})
    for unit in connector.discover():
        where = storage(ctype, folder, unit)
        raw = _raw(where)
        for entry in connector.read(unit).entries:
            if entry.role != "user":
                continue
            for needle in NEEDLE.findall(entry.text):
                if raw.count(needle) != 1:
                    continue
                before = where.read_bytes()
                _replace(where, needle, addition(needle, NEWLINE[ctype]))
                if _landed(connector, unit):
                    return unit.id
                where.write_bytes(before)
    raise AssertionError(f"no user text of {ctype} found in its storage")


def configure(settings, ctype, folder, model):
    name = f"src-{ctype.replace('_', '-')}"
    settings.JEZERO = {**settings.JEZERO, **validate({
        "summarizer": {"provider": "openai", "model": "test-model", "base_url": model.url},
        "connectors": [{"name": name, "type": ctype, "path": str(folder), "settle_minutes": 0, "min_chars": 0}],
    })}
    return name


def database_bytes():
    """Every row of every stored table of the (test, in-memory) database, the indexes' shadow
    tables included, as bytes. The file itself is grepped by tests/e2e/test_privacy_cli.py."""
    from django.db import connection

    out = []
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'")
        for (table,) in cursor.fetchall():
            cursor.execute(f'SELECT * FROM "{table}"')
            out += [v if isinstance(v, bytes) else str(v).encode() for row in cursor.fetchall() for v in row]
    assert len(out) > 100   # the items and their indexes are there
    return b"\n".join(out)


@pytest.mark.parametrize("ctype", TYPES)
def test_a_private_span_is_hidden_by_every_connector_type(ctype, tmp_path, settings, model, caplog):
    folder = _copy(ctype, tmp_path)
    plant(ctype, folder, lambda needle, nl: f"{needle} <private>{nl}{PRIVATE}{nl}</private> ")
    name = configure(settings, ctype, folder, model)
    caplog.set_level(logging.DEBUG)

    report = pipeline.run(name)

    assert report.units_stored >= 1 and report.units_kept_out == 0, report.as_dict()
    originals = " ".join(Item.objects.filter(source=name).values_list("original", flat=True))
    assert "[private]" in originals
    sent = json.dumps([request.body for request in model.requests])
    assert "[private]" in sent
    for where in (originals, sent, caplog.text, json.dumps(list(Item.objects.values()), default=str)):
        assert "Quokkavelt" not in where
    assert PRIVATE.encode() not in database_bytes()


@pytest.mark.parametrize("ctype", TYPES)
def test_a_skip_line_keeps_the_whole_unit_out_of_every_connector_type(ctype, tmp_path, settings, model, caplog):
    folder = _copy(ctype, tmp_path)
    kept_out = plant(ctype, folder, lambda needle, nl: f"{needle}{nl}JeZeRo: skip{nl}{PRIVATE} ")
    name = configure(settings, ctype, folder, model)
    caplog.set_level(logging.DEBUG)
    units = list(registry.make(ctype, {"path": str(folder)}).discover())

    report = pipeline.run(name)

    assert report.units_kept_out == 1, report.as_dict()
    assert report.units_stored == len(units) - 1 - report.units_too_small
    keys = Item.objects.filter(source=name).values_list("key", flat=True)
    assert not [key for key in keys if key.startswith(f"{name}:{kept_out}")]
    assert "Quokkavelt" not in json.dumps([request.body for request in model.requests])
    assert "Quokkavelt" not in caplog.text
    assert PRIVATE.encode() not in database_bytes()
    assert RunReport.objects.get(connector=name).stats["units_kept_out"] == 1
    again = pipeline.run(name)   # the cursor moved: the unit is not read again
    assert again.units_changed == 0 and again.model_calls == 0


def test_a_session_marked_after_it_was_stored_is_removed_at_the_next_run(tmp_path, settings, model):
    folder = _copy("claude_code", tmp_path)
    name = configure(settings, "claude_code", folder, model)
    assert pipeline.run(name).units_stored >= 2
    before = Item.objects.filter(source=name).count()
    unit = plant("claude_code", folder, lambda needle, nl: f"{needle}{nl}jezero: skip{nl}")
    mine = Item.objects.filter(source=name, key__startswith=f"{name}:{unit}")
    assert mine.exists()
    stored = mine.count()

    report = pipeline.run(name)

    assert report.units_kept_out == 1
    assert not mine.exists() and Item.objects.filter(source=name).count() == before - stored


@pytest.mark.parametrize("ctype", ["claude_code", "specstory"])
def test_preview_shows_what_would_be_kept_out_and_hidden(ctype, tmp_path):
    folder = _copy(ctype, tmp_path)
    unit = plant(ctype, folder, lambda needle, nl: f"{needle} <private>{PRIVATE}</private>")
    path = next(u.path for u in registry.make(ctype, {"path": str(folder)}).discover() if u.id == unit)
    out = _preview(path, ctype)
    assert "1 private span(s) hidden as [private]" in out and "Quokkavelt" not in out

    skipped = _copy(ctype, tmp_path / "again")
    unit = plant(ctype, skipped, lambda needle, nl: f"{needle}{nl}jezero: skip{nl}{PRIVATE}")
    path = next(u.path for u in registry.make(ctype, {"path": str(skipped)}).discover() if u.id == unit)
    out = _preview(path, ctype)
    assert "kept out by marker" in out and "nothing of it would be stored" in out and "Quokkavelt" not in out
    data = json.loads(_preview(path, ctype, json=True))
    assert data["kept_out"] and data["blocks"] == [] and data["segments"] == []


def _preview(path, ctype, **options):
    import io

    out = io.StringIO()
    call_command("preview", str(path), type=ctype, stdout=out, **options)
    return out.getvalue()


# --- uploads ----------------------------------------------------------------------------------------

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "claude_7.jsonl"


def _user_line(text, session="2b4ed4c0"):
    return json.dumps({"type": "user", "uuid": "u-marker", "parentUuid": None, "sessionId": session,
                       "timestamp": "2026-01-23T18:00:00Z", "message": {"role": "user", "content": text}}).encode()


@pytest.fixture
def uploader(settings, model):
    settings.JEZERO = {**settings.JEZERO, **validate({
        "summarizer": {"provider": "openai", "model": "test-model", "base_url": model.url},
        "connectors": [{"name": "uploads-laptop", "type": "upload", "settle_minutes": 0}],
    })}
    return token_for("laptop", sources="*", scopes="read,upload", upload_source="uploads-laptop")


def test_an_upload_hides_private_spans_before_it_is_stored(uploader, model):
    body = REAL.read_bytes() + _user_line(f"the patient is <private>{PRIVATE}\nsee notes</private> thanks") + b"\n"
    response = upload(uploader, body, ended="true")
    assert response.status_code == 201, response.content
    row = InboxSession.objects.get()
    assert "Quokkavelt" not in json.dumps(row.entries) and "[private]" in json.dumps(row.entries)
    report = pipeline.run("uploads-laptop")
    assert report.units_stored == 1
    assert "Quokkavelt" not in json.dumps([r.body for r in model.requests])
    assert PRIVATE.encode() not in database_bytes()


def test_an_upload_with_a_skip_line_is_kept_out_and_a_shorter_copy_is_not_taken(uploader, model):
    body = REAL.read_bytes() + _user_line(f"{PRIVATE}\njezero: skip") + b"\n"
    response = upload(uploader, body, ended="true")
    assert response.status_code == 201, response.content
    row = InboxSession.objects.get()
    assert "Quokkavelt" not in json.dumps(row.entries) + json.dumps(row.hints)
    assert row.size == len(body)
    shorter = upload(uploader, REAL.read_bytes(), ended="true")   # an older copy, from before the line
    assert shorter.json()["stored"] is False

    report = pipeline.run("uploads-laptop")

    assert report.units_kept_out == 1 and report.units_stored == 0 and not Item.objects.exists()
    assert model.requests == []
    assert PRIVATE.encode() not in database_bytes()
