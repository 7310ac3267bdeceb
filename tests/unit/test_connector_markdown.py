"""The markdown connector (docs/design.md "Connectors"): a Backlog.md-style board and a notes folder under
tests/fixtures/markdown/board — units, the glob option, front matter, sections, titles,
times, hints and robustness. Files that must never be read say NOISE."""

import os
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from connectors.base import UnitError
from connectors.markdown import MarkdownConnector, glob_matcher, parse_front_matter
from tests.conftest import texts

REPO = Path(__file__).resolve().parents[2]
BOARD = REPO / "tests" / "fixtures" / "markdown" / "board"
TASK_1 = "backlog/tasks/task-1 - Set-up-the-login-page.md"
TASK_2 = "backlog/tasks/task-2 - Rate-limit-the-login-endpoint.md"
TASK_3 = "backlog/tasks/task-3 - Write-the-privacy-page.md"
MEETING = "notes/Meeting with the bank.md"
TODO = "notes/todo.md"


def read_board(**options):
    connector = MarkdownConnector(BOARD, **options)
    return {unit.id: (unit, connector.read(unit)) for unit in connector.discover()}


def read_text(tmp_path, text, name="note.md"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    connector = MarkdownConnector(path)
    (unit,) = connector.discover()
    return unit, connector.read(unit)


def at(text):
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# -- discovery

def test_every_visible_markdown_file_is_a_unit_named_by_its_relative_path():
    units = list(MarkdownConnector(BOARD).discover())
    assert [unit.id for unit in units] == [TASK_1, TASK_2, TASK_3, MEETING, TODO]   # no .obsidian, no .trash
    task = units[0]
    assert task.ref == str(BOARD / TASK_1) and task.path == str(BOARD / TASK_1)
    stat = (BOARD / TASK_1).stat()
    assert task.fingerprint == f"{stat.st_size}:{stat.st_mtime_ns}"


def test_the_glob_option_chooses_the_files():
    assert list(read_board(glob="backlog/tasks/*.md")) == [TASK_1, TASK_2, TASK_3]
    assert list(read_board(glob="*/*/task-[12]*")) == [TASK_1, TASK_2]
    assert list(read_board(glob="notes/**")) == [MEETING, TODO]
    assert list(read_board(glob="**/*.yml")) == ["backlog/config.yml"]


def test_glob_matching_follows_path_parts():
    matches = glob_matcher("**/*.md")
    assert matches("a.md") and matches("x/y/a.md") and not matches("a.md.bak")
    assert not glob_matcher("*.md")("x/a.md")
    assert glob_matcher("docs/?.md")("docs/a.md") and not glob_matcher("docs/?.md")("docs/ab.md")
    assert glob_matcher("[!x]*.md")("a.md") and not glob_matcher("[!x]*.md")("x.md")


# -- a task board

def test_a_backlog_task_gives_a_field_block_and_one_block_per_section():
    unit, reading = read_board()[TASK_1]
    assert texts(reading) == [
        ("system", "id: task-1; status: Done; assignee: @ana; reporter: @bob; labels: frontend, auth; priority: high"),
        ("user", "# Set up the login page\n\n## Description\n\nUsers sign in with their email address and a password."),
        ("user", '## Acceptance Criteria\n- [x] #1 The form rejects an invalid email address\n'
                 '- [x] #2 A wrong password shows "Invalid credentials"'),
        ("user", "## Implementation Notes\n\nUsed the session middleware; see `auth/views.py`."),
    ]
    assert {entry.time for entry in reading.entries} == {at("2025-06-03T17:45")}   # updated_date
    assert reading.hints == {"title_hint": "Set up the login page", "path": TASK_1, "status": "Done",
                             "labels": ["frontend", "auth"]}
    assert not reading.warnings


def test_inline_lists_quotes_comments_and_block_text_in_front_matter():
    _unit, reading = read_board()[TASK_2]
    assert texts(reading)[0] == (
        "system", "id: task-2; status: In Progress; labels: security, api, public; dependencies: task-1; "
                  "milestone: v1.0; description: Five failed attempts lock the account for fifteen minutes.")
    assert reading.hints["labels"] == ["security", "api, public"]
    assert reading.hints["title_hint"] == "Rate-limit the login endpoint"
    assert reading.entries[0].time == at("2025-06-04T10:15")                         # created_date


def test_deeper_headings_stay_in_their_section_and_empty_sections_are_dropped():
    _unit, reading = read_board()[TASK_2]
    assert texts(reading)[1:] == [
        ("user", "# Rate-limit the login endpoint\n\n## Description\n\n"
                 "Too many failed logins from one address must slow the attacker down."),
        ("user", "## Implementation Plan\n\n1. Count failures per IP in the cache\n"
                 "2. Return HTTP 429 with a Retry-After header\n\n### Open questions\n\n"
                 "Should a locked account notify its owner?"),
    ]                                                                                  # no empty "Implementation Notes"


def test_a_task_dated_by_day_only_and_without_labels():
    _unit, reading = read_board()[TASK_3]
    assert texts(reading)[0] == ("system", "id: task-3; status: To Do")
    assert reading.entries[0].time == at("2025-06-05T00:00")
    assert "labels" not in reading.hints


# -- notes

def test_a_note_is_split_at_its_top_two_heading_levels_but_not_inside_code():
    unit, reading = read_board()[MEETING]
    assert texts(reading) == [
        ("user", "# Meeting with the bank\n\nTuesday, with Marta from the bank."),
        ("user", "## Decisions\n\n- Move the shop's payouts to the new account.\n"
                 "- Keep the old account open until March.\n\n```markdown\n"
                 "# Not a heading: an example inside a fence\n## Nor this one\n```\n\n"
                 "### Follow-up\n\nSend the signed form by Friday."),
        ("user", "# Open points\n\nThe card reader contract still runs for a year."),
    ]
    assert {entry.time for entry in reading.entries} == {unit.modified}            # no front matter: mtime
    assert reading.hints == {"title_hint": "Meeting with the bank", "path": MEETING}


def test_a_note_without_headings_is_one_block_titled_by_its_file_name():
    _unit, reading = read_board()[TODO]
    assert texts(reading) == [("user", "Buy stamps.\nCall the plumber about the kitchen tap.")]
    assert reading.hints["title_hint"] == "todo"


def test_a_title_from_the_first_heading_opens_the_first_block(tmp_path):
    _unit, reading = read_text(tmp_path, "Some intro text.\n\n# Release plan\n\n## Steps\n\nTag v2.\n")
    assert texts(reading) == [("user", "# Release plan\n\nSome intro text."), ("user", "## Steps\n\nTag v2.")]
    assert reading.hints["title_hint"] == "Release plan"


def test_a_date_in_the_future_never_beats_the_modification_time(tmp_path):
    unit, reading = read_text(tmp_path, "---\ntitle: Plan\ndate: 2999-01-01\n---\n\nSomeday.\n")
    assert reading.entries[0].time == unit.modified


def test_an_unclosed_front_matter_is_body_text(tmp_path):
    _unit, reading = read_text(tmp_path, "---\nNot front matter after all.\n\n# Heading\n\nText.\n")
    assert texts(reading) == [("user", "---\nNot front matter after all."), ("user", "# Heading\n\nText.")]
    assert reading.hints["title_hint"] == "Heading"


def test_the_front_matter_reader_is_tolerant():
    assert parse_front_matter([
        "# a comment", "title: 'It''s here'", 'quote: "say \\"hi\\""', "empty:", "nothing: ~",
        "nested:", "  child: NOISE", "tags:", "- one", "  - two", "not a key line", "url: https://x.y/z",
    ]) == {"title": "It's here", "quote": 'say "hi"', "empty": "", "nothing": "", "nested": "",
           "tags": ["one", "two"], "url": "https://x.y/z"}


# -- robustness

def test_bad_lines_are_skipped_and_counted(tmp_path):
    path = tmp_path / "bad.md"
    path.write_bytes(b"# Title\n\nkept line\nbroken \xff line NOISE\n" + b"y" * (1024 * 1024) + b"\nlast line\n")
    connector = MarkdownConnector(path)
    (unit,) = connector.discover()
    reading = connector.read(unit)
    assert texts(reading) == [("user", "# Title\n\nkept line\nlast line")]
    assert reading.warnings == {"invalid_utf8": 1, "oversized_line": 1}


def test_a_vanished_file_is_a_unit_error(tmp_path):
    path = tmp_path / "gone.md"
    path.write_text("# Gone\n", encoding="utf-8")
    connector = MarkdownConnector(tmp_path)
    (unit,) = connector.discover()
    path.unlink()
    with pytest.raises(UnitError):
        connector.read(unit)


# -- end to end

@pytest.mark.django_db
def test_a_run_stores_one_item_per_file_with_the_extractive_summariser(settings, monkeypatch, tmp_path):
    from connectors import registry
    from jezero_site.config import validate
    from library import store
    from library.ingest import pipeline
    from library.ingest.summarize.extractive import ExtractiveSummarizer
    from library.models import Item

    monkeypatch.setitem(registry.CONNECTOR_TYPES, "markdown", MarkdownConnector)
    shutil.copytree(BOARD, tmp_path / "board")
    old = time.time() - 2 * 86_400
    for path in (tmp_path / "board").rglob("*"):
        os.utime(path, (old, old))
    config = {"name": "board", "type": "markdown", "path": str(tmp_path / "board"), "glob": "backlog/**/*.md"}
    settings.JEZERO = {**settings.JEZERO, "connectors": validate({"connectors": [config]})["connectors"]}

    report = pipeline.run("board", summarizer=ExtractiveSummarizer())
    assert (report.units_seen, report.units_stored, report.units_failed) == (3, 3, 0)
    item = Item.objects.get(key=f"board:{TASK_1}")   # a task is a single document (docs/design.md "Items")
    assert item.title == "Set up the login page" and item.trust == "own"
    assert item.original_ref == str(tmp_path / "board" / TASK_1)
    assert item.original.startswith("system: id: task-1; status: Done;")
    assert item.occurred_at == at("2025-06-03T17:45")
    assert item.hints["status"] == "Done" and item.hints["labels"] == ["frontend", "auth"]
    assert store.check().ok


def test_a_long_front_matter_field_is_cut_between_words_so_no_part_of_a_key_is_kept(tmp_path):
    """Fields are cut to 200 characters before redaction runs: a key the cut falls in is left
    out whole, never kept minus its last characters where no rule would know it (docs/design.md "Redaction")."""
    key = "sk-proj-" + "Qm4vXr8TzK2LwP9sNd3YhB6jFc1GaE5uRo7i" * 2
    notes = "word " * 37 + key + " more words"
    _unit, reading = read_text(tmp_path, f"---\ntitle: Deploy\nnotes: {notes}\n---\n\nBody.\n")
    fields = texts(reading)[0][1]
    assert fields.startswith("notes: word word") and fields.endswith("word…")
    assert "sk-proj" not in fields and "Qm4v" not in fields
