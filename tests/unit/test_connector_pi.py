"""The pi connector (docs/design.md "Connectors", docs/agent-formats.md): session units, what reaches the summariser, hints,
the `parentId` tree (branches followed like Claude Code rewinds), compaction, version 1 files
and robustness. The real session is read from tests/fixtures/real; hand-made ones
under tests/fixtures/pi are laid out like `~/.pi/agent/sessions` and mark dropped text with NOISE."""

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from connectors import registry
from connectors.pi import PiConnector
from tests.conftest import everything, texts
from tests.conftest import real_fixture as shared

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / "tests" / "fixtures" / "real"   # real public transcripts (SOURCES.md there)
OWN = REPO / "tests" / "fixtures" / "pi"
MAIN = "0199c3d4-e5f6-7a8b-9c0d-1e2f3a4b5c6d"
OLD = "5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e"
SESSION = "0a1b2c3d-0000-4000-8000-00000000abcd"




def read_own():
    connector = PiConnector(OWN)
    return {unit.id: (unit, connector.read(unit)) for unit in connector.discover()}


def read_lines(tmp_path, lines):
    path = tmp_path / f"2025-10-01T08-00-00-000Z_{SESSION}.jsonl"
    header = {"type": "session", "version": 3, "id": SESSION, "timestamp": "2025-10-01T08:00:00.000Z",
              "cwd": "/home/ana/app"}
    path.write_text("".join(json.dumps(line) + "\n" for line in [header, *lines]), encoding="utf-8")
    connector = PiConnector(path)
    (unit,) = connector.discover()
    return connector.read(unit)


def msg(key, parent, role, content, **fields):
    return {"type": "message", "id": key, "parentId": parent, "timestamp": "2025-10-01T08:00:01.000Z",
            "message": {"role": role, "content": content, **fields}}


def said(key, parent, text):
    return msg(key, parent, "user", text)


def answered(key, parent, text, **fields):
    return msg(key, parent, "assistant", [{"type": "text", "text": text}], **fields)


# -- the real session

def test_a_real_session_gives_the_prompt_the_answer_and_the_header_hints():
    path = shared("pi_1.jsonl")
    connector = PiConnector(path)
    (unit,) = connector.discover()
    assert unit.id == unit.ref == "pi_1"            # not named <ts>_<uuid>: its stem
    reading = connector.read(unit)
    assert texts(reading) == [("user", "[REDACTED_PROMPT]"), ("assistant", "[REDACTED_ASSISTANT_TEXT]")]
    assert reading.hints == {"agent": "pi", "session_id": "019e963d-6bd6-7ade-8a49-256ac3391bdd",
                             "cwd": "/tmp/agent-history-real-agent/pi/workspace", "model": "gpt-5.5",
                             "title_hint": "agent-history pi smoke"}
    assert reading.entries[0].time.isoformat() == "2026-06-05T05:24:28.254000+00:00"
    assert not reading.warnings


# -- discovery

def test_discovery_names_units_by_the_session_uuid_in_the_file_name():
    units = {unit.id: unit for unit in PiConnector(OWN).discover()}
    assert set(units) == {MAIN, OLD}
    assert units[MAIN].ref == MAIN
    assert units[MAIN].path.endswith(f"--home-ana-my-shop--/2025-09-14T09-00-00-000Z_{MAIN}.jsonl")
    stat = Path(units[MAIN].path).stat()
    assert units[MAIN].fingerprint == f"{stat.st_size}:{stat.st_mtime_ns}"


# -- what reaches the summariser

def test_only_dialogue_and_tool_lines_of_the_active_branch_reach_the_summariser():
    _unit, reading = read_own()[MAIN]
    assert texts(reading) == [
        ("user", "Add a discount field to the cart total."),
        ("assistant", "Let me look at the cart first."),           # thinking dropped
        ("tool", "Read: shop/cart.py"),
        ("tool", "Bash: pytest -q"),
        ("assistant", "The total is computed in shop/cart.py; the tests pass."),
        # the percentage branch was left with /tree: gone, with its branch summary
        ("user", "Use a fixed amount discount instead."),
        ("assistant", "Done: the cart takes a fixed amount discount."),
        ("tool", "Edit: shop/cart.py"),
        ("tool", "Write: tests/test_discount.py"),
        ("tool", "Bash: git status"),                              # the person's own `!git status`
        ("user", "Run the linter."),                               # the pasted image dropped
        ("tool", "Grep: TODO"),
        ("tool", "Glob: *.py"),
        ("tool", "LS: shop"),
        ("tool", "Bash: ruff check ."),
        ("tool", "linear_create_issue: Follow up on discounts"),
        ("assistant", "Lint is clean."),
    ]
    assert "NOISE" not in everything(reading)   # tool results, summaries, injected and extension text


def test_hints_come_from_the_header_never_from_the_folder_name():
    _unit, reading = read_own()[MAIN]
    assert reading.hints == {"agent": "pi", "session_id": MAIN, "cwd": "/home/ana/my-shop",
                             "model": "claude-sonnet-4-5", "title_hint": "Cart discount (fixed amount)"}


def test_the_last_model_change_names_the_model_and_assistant_messages_are_the_fallback(tmp_path):
    changed = read_lines(tmp_path, [
        {"type": "model_change", "id": "m1", "parentId": None, "provider": "openai", "modelId": "gpt-5"},
        answered("a1", "m1", "hi", model="claude-opus-4"),
        {"type": "model_change", "id": "m2", "parentId": "a1", "provider": "google", "modelId": "gemini-2.5-pro"}])
    assert changed.hints["model"] == "gemini-2.5-pro"
    assert read_lines(tmp_path, [answered("a1", None, "hi", model="claude-opus-4")]).hints["model"] == "claude-opus-4"


def test_a_forked_session_names_its_parent(tmp_path):
    path = tmp_path / f"2025-10-01T08-00-00-000Z_{SESSION}.jsonl"
    path.write_text(json.dumps({"type": "session", "version": 3, "id": SESSION, "cwd": "/w",
                                "parentSession": "/home/ana/.pi/agent/sessions/--w--/old.jsonl"}) + "\n",
                    encoding="utf-8")
    connector = PiConnector(path)
    (unit,) = connector.discover()
    assert connector.read(unit).hints["parent_session"] == "/home/ana/.pi/agent/sessions/--w--/old.jsonl"


# -- branches

def test_a_prompt_asked_again_from_the_same_point_drops_the_first_attempt(tmp_path):
    reading = read_lines(tmp_path, [said("u1", None, "plan the migration"), answered("a1", "u1", "Three steps."),
                                    said("u2", "a1", "NOISE do step one"), answered("a2", "u2", "NOISE done"),
                                    said("u3", "a1", "do step one, but back up first"), answered("a3", "u3", "Done.")])
    assert texts(reading) == [("user", "plan the migration"), ("assistant", "Three steps."),
                              ("user", "do step one, but back up first"), ("assistant", "Done.")]


def test_the_active_branch_ends_at_the_last_entry_even_when_it_is_not_a_message(tmp_path):
    """Going back with /tree writes a branch summary; quitting right after leaves it the leaf."""
    reading = read_lines(tmp_path, [said("u1", None, "try approach A"), answered("a1", "u1", "Sure."),
                                    said("u2", "a1", "NOISE go deeper"), answered("a2", "u2", "NOISE deeper"),
                                    {"type": "branch_summary", "id": "b1", "parentId": "a1", "fromId": "a2",
                                     "summary": "NOISE summary of the abandoned branch"}])
    assert texts(reading) == [("user", "try approach A"), ("assistant", "Sure.")]


def test_a_branch_that_was_left_and_returned_to_is_followed_and_the_detour_kept(tmp_path):
    """Only a branch replaced by a later one counts as abandoned; a detour the person came
    back from is real work and is kept, in file order."""
    reading = read_lines(tmp_path, [said("u1", None, "write the parser"), answered("a1", "u1", "Parser written."),
                                    said("u2", "a1", "add tests"), answered("a2", "u2", "Tests added."),
                                    said("u3", "a1", "what about a lexer?"), answered("a3", "u3", "A lexer helps."),
                                    said("u4", "a2", "run the tests"), answered("a4", "u4", "All green.")])
    assert [text for _role, text in texts(reading)] == [
        "write the parser", "Parser written.", "add tests", "Tests added.", "what about a lexer?",
        "A lexer helps.", "run the tests", "All green."]


def test_a_broken_chain_loses_nothing(tmp_path):
    reading = read_lines(tmp_path, [said("u1", None, "first"), answered("a1", "u1", "one"),
                                    said("u2", "missing-entry", "second"), answered("a2", "u2", "two")])
    assert [text for _role, text in texts(reading)] == ["first", "one", "second", "two"]


def test_messages_before_a_compaction_are_kept_and_its_summary_is_not(tmp_path):
    reading = read_lines(tmp_path, [said("u1", None, "refactor the auth module"), answered("a1", "u1", "Refactored."),
                                    {"type": "compaction", "id": "c1", "parentId": "a1", "firstKeptEntryId": "a1",
                                     "summary": "NOISE the user asked to refactor…", "tokensBefore": 90_000},
                                    msg("s1", "c1", "compactionSummary", None, summary="NOISE again"),
                                    said("u2", "s1", "now add tests")])
    assert texts(reading) == [("user", "refactor the auth module"), ("assistant", "Refactored."),
                              ("user", "now add tests")]
    assert not reading.warnings


def test_a_version_1_session_without_ids_is_one_linear_branch():
    _unit, reading = read_own()[OLD]
    assert texts(reading) == [("user", "Summarise my meeting notes."),
                              ("assistant", "Three decisions, two open questions."), ("user", "And the action items?")]
    assert reading.hints == {"agent": "pi", "session_id": OLD, "cwd": "/home/ana/notes", "model": "gpt-4.1"}
    assert reading.entries[2].time.isoformat() == "2025-03-01T08:00:20+00:00"   # from the message's epoch ms


# -- robustness

def test_bad_and_unknown_lines_are_counted_not_raised():
    _unit, reading = read_own()[MAIN]
    assert reading.warnings == {"malformed_line": 1, "unknown_type:future_entry": 1,
                                "unknown_type:message.narrator": 1}


def test_an_entry_written_twice_is_read_once_and_odd_content_is_skipped(tmp_path):
    reading = read_lines(tmp_path, [said("u1", None, "once"), said("u1", None, "once"),
                                    {"type": "message", "id": "x1", "parentId": "u1", "message": "NOISE not an object"},
                                    msg("a1", "x1", "assistant", [{"type": "toolCall", "name": "bash", "arguments": "NOISE"},
                                                                  {"type": "text"}, "NOISE", None]),
                                    {"id": "no-type"}])
    assert texts(reading) == [("user", "once"), ("tool", "Bash")]
    assert reading.warnings == {"malformed_line": 2}


def test_preview_reads_one_file_through_the_registry(monkeypatch):
    monkeypatch.setitem(registry.CONNECTOR_TYPES, "pi", PiConnector)
    connector, unit = registry.for_file("pi", shared("pi_1.jsonl"))
    assert unit.id == "pi_1" and len(connector.read(unit).entries) == 2


# -- end to end

@pytest.mark.django_db
def test_a_run_stores_one_item_per_session_with_its_prompts_and_no_noise(tmp_path, settings, monkeypatch):
    """Through `library.ingest.pipeline.run` with the extractive summariser."""
    from jezero_site.config import validate
    from library.ingest import pipeline
    from library.ingest.summarize.extractive import ExtractiveSummarizer
    from library.models import Item

    monkeypatch.setitem(registry.CONNECTOR_TYPES, "pi", PiConnector)
    folder = tmp_path / "sessions"
    shutil.copytree(OWN, folder)
    old = time.time() - 2 * 86_400
    for path in folder.rglob("*.jsonl"):
        os.utime(path, (old, old))
    config = {"name": "agent-pi", "type": "pi", "path": str(folder), "min_chars": 0}
    settings.JEZERO = {**settings.JEZERO, "connectors": validate({"connectors": [config]})["connectors"]}

    report = pipeline.run("agent-pi", summarizer=ExtractiveSummarizer())
    assert (report.units_seen, report.units_stored, report.units_failed) == (2, 2, 0)
    items = {item.key: item for item in Item.objects.all()}
    assert set(items) == {f"agent-pi:{MAIN}#0", f"agent-pi:{OLD}#0"}
    main = items[f"agent-pi:{MAIN}#0"]
    assert main.original_ref == MAIN and main.trust == "own"
    assert "user: Add a discount field to the cart total." in main.original
    assert "tool: Bash: ruff check ." in main.original
    assert {"kind": "command", "text": "ruff check ."} in main.atoms
    assert main.hints["cwd"] == "/home/ana/my-shop"
    assert not any("NOISE" in item.original for item in items.values())
    assert pipeline.run("agent-pi", summarizer=ExtractiveSummarizer()).units_changed == 0
