"""The gemini_cli connector (docs/design.md "Connectors", docs/agent-formats.md): session units, the replayed JSONL log
(`$set`, `$rewindTo`, rewritten messages), legacy whole-file sessions, what reaches the
summariser, hints and robustness. Hand-made sessions under tests/fixtures/gemini_cli are laid
out like `~/.gemini/tmp` and mark every dropped text with NOISE."""

import hashlib
import json
import os
import shutil
import time
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest

from connectors import registry
from connectors.base import UnitError
from connectors.gemini_cli import GeminiCliConnector, _legacy_records, gemini_tool_line
from tests.conftest import everything, texts

REPO = Path(__file__).resolve().parents[2]
OWN = REPO / "tests" / "fixtures" / "gemini_cli"
SHOP_HASH = hashlib.sha256(b"/home/ana/shop").hexdigest()
CHATS = OWN / SHOP_HASH / "chats"
MAIN = "3f2a1b0c-5d6e-4f70-8a9b-0c1d2e3f4a5b"
LEGACY = "7c8d9e0f-1a2b-4c3d-8e4f-5a6b7c8d9e0f"
SUB = "9a8b7c6d-1111-4222-8333-444455556666"
LEGACY_FILE = CHATS / "session-2025-08-01T09-30-7c8d9e0f.json"


def read_own():
    connector = GeminiCliConnector(OWN)
    return {unit.id: (unit, connector.read(unit)) for unit in connector.discover()}


def read_lines(tmp_path, lines, name="session-2025-10-01T08-00-0a0b0c0d.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    connector = GeminiCliConnector(path)
    (unit,) = connector.discover()
    return connector.read(unit)


META = {"sessionId": "0a0b0c0d-0000-4000-8000-000000000001", "projectHash": SHOP_HASH,
        "startTime": "2025-10-01T08:00:00.000Z"}


def user(key, content, **fields):
    return {"id": key, "timestamp": "2025-10-01T08:00:01.000Z", "type": "user", "content": content, **fields}


def gemini(key, content, **fields):
    return {"id": key, "timestamp": "2025-10-01T08:00:02.000Z", "type": "gemini", "content": content, **fields}


# -- discovery

def test_discovery_finds_sessions_legacy_files_and_subagents_by_session_id():
    units = {unit.id: unit for unit in GeminiCliConnector(OWN).discover()}
    assert set(units) == {MAIN, LEGACY, f"{MAIN}/{SUB}"}
    assert units[MAIN].ref == MAIN and units[LEGACY].ref == LEGACY
    assert units[f"{MAIN}/{SUB}"].ref == MAIN          # a subagent points back to its parent session
    stat = Path(units[MAIN].path).stat()
    assert units[MAIN].fingerprint == f"{stat.st_size}:{stat.st_mtime_ns}"
    assert units[MAIN].path.endswith(f"{SHOP_HASH}/chats/session-2025-09-14T10-00-3f2a1b0c.jsonl")
    # logs.json, checkpoint-*.json and tool-outputs/ beside the chats are not sessions
    assert all("/chats/" in unit.path for unit in units.values())


def test_a_resumed_legacy_session_is_one_unit_read_from_the_newer_jsonl(tmp_path):
    """Resuming a legacy session writes `<name>.jsonl` beside the old `<name>.json`."""
    chats = tmp_path / "chats"
    chats.mkdir()
    legacy = chats / LEGACY_FILE.name
    shutil.copy(LEGACY_FILE, legacy)
    migrated = legacy.with_suffix(".jsonl")
    migrated.write_text(json.dumps({"sessionId": LEGACY, "projectHash": SHOP_HASH}) + "\n"
                        + json.dumps(user("l9", "And the signup test?")) + "\n", encoding="utf-8")
    os.utime(legacy, (1_750_000_000, 1_750_000_000))
    os.utime(migrated, (1_760_000_000, 1_760_000_000))
    connector = GeminiCliConnector(tmp_path)
    (unit,) = connector.discover()
    assert unit.id == LEGACY and unit.path == str(migrated)
    assert texts(connector.read(unit)) == [("user", "And the signup test?")]


def test_a_file_without_a_session_id_is_named_by_its_stem_and_a_single_file_is_read_whatever_its_name(tmp_path):
    reading = read_lines(tmp_path, [user("u1", "hello there")], name="copied-from-laptop.jsonl")
    assert texts(reading) == [("user", "hello there")]
    (unit,) = GeminiCliConnector(tmp_path / "copied-from-laptop.jsonl").discover()
    assert unit.id == unit.ref == "copied-from-laptop"


# -- what reaches the summariser

def test_only_dialogue_and_tool_lines_reach_the_summariser():
    _unit, reading = read_own()[MAIN]
    assert texts(reading) == [
        ("user", "Explain how @shop/cart.py computes the total."),      # without the referenced file
        ("tool", "Read: shop/cart.py"),                                 # m2, rewritten with a second call
        ("tool", "Bash: pytest -q tests/test_cart.py"),
        ("assistant", "The total is the sum of the line items, in cents."),   # updated by $set.messages
        ("user", "Add a percentage discount field to the cart total."),       # displayContent, after the rewind
        ("assistant", "I added the percentage discount field."),              # parts joined, thought part dropped
        ("tool", "Edit: shop/cart.py"),
        ("tool", "Write: tests/test_discount.py"),
        ("tool", "Read: docs/pricing.md, docs/cart.md"),
        ("tool", "LS: shop"),
        ("tool", "Glob: **/*.py"),
        ("tool", "Grep: def total"),
        ("tool", "WebSearch: python decimal rounding"),
        ("tool", "WebFetch: https://docs.python.org/3/library/decimal.html"),
        ("tool", "write_todos: 3 items"),
        ("tool", "save_memory: Prices are stored in cents."),
        ("tool", "mcp_linear_create_issue: Follow up on discounts"),
        ("user", "Thanks, that works."),
    ]
    assert "NOISE" not in everything(reading)
    assert reading.entries[0].time.isoformat() == "2025-09-14T10:00:01+00:00"
    assert reading.entries[1].time.isoformat() == "2025-09-14T10:01:02+00:00"   # the tool call's own time


def test_hints_give_the_project_hash_and_a_cwd_only_when_a_directory_hashes_to_it(tmp_path):
    _unit, reading = read_own()[MAIN]
    assert reading.hints == {"agent": "gemini_cli", "session_id": MAIN, "project_hash": SHOP_HASH,
                             "cwd": "/home/ana/shop", "model": "gemini-2.5-flash",
                             "title_hint": "Cart percentage discount"}
    unverified = read_lines(tmp_path, [{**META, "directories": ["/home/ana/elsewhere"]}, user("u1", "hi")])
    assert "cwd" not in unverified.hints and unverified.hints["project_hash"] == SHOP_HASH


def test_a_rewind_drops_the_message_it_names_and_everything_after(tmp_path):
    reading = read_lines(tmp_path, [META, user("u1", "first ask"), gemini("g1", "first answer"),
                                    user("u2", "NOISE second ask"), gemini("g2", "NOISE second answer"),
                                    {"$rewindTo": "u2"}, user("u3", "second ask, reworded"), gemini("g3", "done")])
    assert texts(reading) == [("user", "first ask"), ("assistant", "first answer"),
                              ("user", "second ask, reworded"), ("assistant", "done")]


def test_a_rewind_to_an_unknown_message_keeps_everything_and_is_counted(tmp_path):
    reading = read_lines(tmp_path, [META, user("u1", "keep me"), {"$rewindTo": "lost"}, gemini("g1", "and me")])
    assert texts(reading) == [("user", "keep me"), ("assistant", "and me")]
    assert reading.warnings == {"unknown_rewind_target": 1}


def test_a_message_written_again_replaces_the_earlier_copy_in_place(tmp_path):
    reading = read_lines(tmp_path, [META, user("u1", "run the tests"),
                                    gemini("g1", "", toolCalls=[{"name": "run_shell_command", "args": {"command": "make"}}]),
                                    user("u2", "thanks"),
                                    gemini("g1", "Ran them.", toolCalls=[
                                        {"name": "run_shell_command", "args": {"command": "make"}},
                                        {"name": "run_shell_command", "args": {"command": "make test"}}])])
    assert texts(reading) == [("user", "run the tests"), ("assistant", "Ran them."), ("tool", "Bash: make"),
                              ("tool", "Bash: make test"), ("user", "thanks")]


def test_set_updates_metadata_and_a_rewritten_history_never_adds_or_removes_messages(tmp_path):
    """Gemini CLI rewrites its history after a compression: the summary turn it adds is not
    dialogue, and the turns it compressed away still happened."""
    reading = read_lines(tmp_path, [META, user("u1", "explain the parser"), gemini("g1", "It is recursive descent."),
                                    user("u2", "add error recovery"), gemini("g2", "NOISE draft"),
                                    {"$set": {"summary": "Parser work", "lastUpdated": "2025-10-01T09:00:00Z"}},
                                    {"$set": {"messages": [
                                        user("c1", "NOISE <state_snapshot> compression summary"),
                                        gemini("c2", "NOISE Got it. Thanks for the additional context!"),
                                        gemini("g2", "Added error recovery.")]}}])
    assert texts(reading) == [("user", "explain the parser"), ("assistant", "It is recursive descent."),
                              ("user", "add error recovery"), ("assistant", "Added error recovery.")]
    assert reading.hints["title_hint"] == "Parser work"


@pytest.mark.parametrize(("content", "kept"), [
    ("<session_context>\nThis is the Gemini CLI.\nMy operating system is: linux\n</session_context>\n\nFix the build",
     "Fix the build"),
    ("This is the Gemini CLI. We are setting up the context for our chat.\nToday's date is Monday.", None),
    ("Review @a.py\n--- Content from referenced files ---\nContent from @a.py:\nsecret body\n--- End of content ---\n"
     "and be brief", "Review @a.py\nand be brief"),
    ([{"text": "Look at "}, {"text": "this image"}, {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}],
     "Look at this image"),
])
def test_user_text_loses_the_preambles_and_expansions_the_cli_adds(tmp_path, content, kept):
    reading = read_lines(tmp_path, [META, user("u1", content)])
    assert texts(reading) == ([("user", kept)] if kept else [])


@pytest.mark.parametrize(("name", "arguments", "line"), [
    ("run_shell_command", {"command": "git status", "description": "Show status"}, "Bash: git status"),
    ("run_shell_command", {"command": "cat <<EOF > x\nhello\nEOF"}, "Bash: cat <<EOF > x"),
    ("read_file", {"absolute_path": "/home/ana/shop/a.py"}, "Read: /home/ana/shop/a.py"),
    ("replace", {"file_path": "a.py", "old_string": "x", "new_string": "y"}, "Edit: a.py"),
    ("web_fetch", {"prompt": "no link here"}, "WebFetch: no link here"),
    ("codebase_investigator", {"objective": "Map the auth flow"}, "codebase_investigator: Map the auth flow"),
    (None, None, "tool"),
])
def test_tool_calls_become_one_line_with_the_other_agents_names(name, arguments, line):
    assert gemini_tool_line(name, arguments) == line


def test_a_subagent_session_points_to_its_parent_and_its_directory_gives_the_cwd():
    _unit, reading = read_own()[f"{MAIN}/{SUB}"]
    assert texts(reading) == [("user", "Find where discounts are computed."),
                              ("assistant", "In shop/cart.py, function total()."), ("tool", "Grep: discount")]
    assert reading.hints["parent_session_id"] == MAIN
    assert reading.hints["session_id"] == SUB and reading.hints["cwd"] == "/home/ana/shop"


# -- legacy whole-file sessions

def test_a_legacy_session_object_is_read_like_a_jsonl_one():
    _unit, reading = read_own()[LEGACY]
    assert texts(reading) == [("user", "Why does test_login fail on CI?"),
                              ("assistant", "It depends on the wall clock; I froze time in the test."),
                              ("tool", "Bash: pytest tests/test_login.py -q")]
    assert reading.hints == {"agent": "gemini_cli", "session_id": LEGACY, "project_hash": SHOP_HASH,
                             "model": "gemini-2.5-pro", "title_hint": "Fix the flaky login test"}
    assert "NOISE" not in everything(reading) and not reading.warnings


def test_a_legacy_file_that_is_a_bare_array_of_messages_is_read(tmp_path):
    path = tmp_path / "session-2024-12-01T10-00-1234abcd.json"
    path.write_text(json.dumps([user("u1", "list the routes"), {"type": "gemini", "content": "There are four."}],
                               indent=2), encoding="utf-8")
    connector = GeminiCliConnector(tmp_path)
    (unit,) = connector.discover()
    assert unit.id == path.stem
    assert texts(connector.read(unit)) == [("user", "list the routes"), ("assistant", "There are four.")]


@pytest.mark.parametrize("chunk_bytes", [1, 2, 3, 7, 64, 1 << 20])
def test_legacy_files_are_parsed_the_same_whatever_the_chunk_size(chunk_bytes):
    """Values, strings with escapes and multi-byte characters cut at every possible place."""
    warnings = Counter()
    records = list(_legacy_records(LEGACY_FILE, warnings, chunk_bytes=chunk_bytes))
    assert records[:4] == [("sessionId", LEGACY), ("projectHash", SHOP_HASH),
                           ("startTime", "2025-08-01T09:30:00.000Z"), ("lastUpdated", "2025-08-01T09:40:00.000Z")]
    assert [value["id"] for key, value in records if key == "messages"] == ["l1", "l2", "l3"]
    assert records[-1] == ("summary", "Fix the flaky login test") and not warnings


def test_tricky_strings_survive_streaming(tmp_path):
    content = 'quote " backslash \\ brackets [{]} unicode ünïcødé \u00e9 emoji 🙂 escaped \\"'
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"sessionId": "x", "messages": [user("u1", content)]}, ensure_ascii=False),
                    encoding="utf-8")
    for chunk_bytes in range(1, 12):
        records = list(_legacy_records(path, Counter(), chunk_bytes=chunk_bytes))
        assert records[1][1]["content"] == content


def test_a_huge_legacy_message_is_skipped_without_being_held_in_memory(tmp_path):
    path = tmp_path / "session-2025-01-01T00-00-abcdabcd.json"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write('{"sessionId": "big", "messages": [')
        handle.write(json.dumps(user("u1", "before the screenshot")) + ",")
        handle.write('{"id": "u2", "type": "user", "content": [{"inlineData": {"data": "')
        for _ in range(40):
            handle.write("A" * 250_000)
        handle.write('"}}]},' + json.dumps(user("u3", "after the screenshot")) + "]}")
    assert path.stat().st_size > 10_000_000
    warnings = Counter()
    tracemalloc.start()
    try:
        records = list(_legacy_records(path, warnings, max_value_chars=1_000_000, chunk_bytes=64 * 1024))
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4_000_000, f"peak {peak} bytes"
    assert [value["content"] for key, value in records if key == "messages"] == [
        "before the screenshot", "after the screenshot"]
    assert warnings == {"oversized_line": 1}


def test_a_truncated_or_broken_legacy_file_keeps_what_was_read(tmp_path):
    path = tmp_path / "session-2025-01-01T00-00-cafecafe.json"
    path.write_bytes(b'{"sessionId": "cut", "messages": [' + json.dumps(user("u1", "still here")).encode()
                     + b', {"id": "u2", "type": "user", "content": "\xff\xfe"}, 7, {"id": "u3", "type": "user", "cont')
    connector = GeminiCliConnector(path)
    (unit,) = connector.discover()
    reading = connector.read(unit)
    assert texts(reading) == [("user", "still here")]
    assert reading.warnings == {"invalid_utf8": 1, "malformed_line": 1, "truncated_file": 1}


def test_a_file_that_is_not_a_session_document_is_counted(tmp_path):
    path = tmp_path / "session-x.json"
    path.write_text('"just a string"', encoding="utf-8")
    connector = GeminiCliConnector(path)
    (unit,) = connector.discover()
    reading = connector.read(unit)
    assert reading.entries == [] and reading.warnings == {"malformed_file": 1}


# -- robustness

def test_bad_and_unknown_lines_are_counted_not_raised():
    _unit, reading = read_own()[MAIN]
    assert reading.warnings == {"malformed_line": 2, "unknown_line": 1, "unknown_type:planner": 1}


def test_invalid_utf8_in_a_jsonl_line_skips_that_line(tmp_path):
    path = tmp_path / "session-2025-10-01T08-00-0a0b0c0d.jsonl"
    path.write_bytes(json.dumps(META).encode() + b"\n" + b'{"id":"u1","type":"user","content":"\xff"}\n'
                     + json.dumps(user("u2", "deploy it")).encode() + b"\n")
    connector = GeminiCliConnector(path)
    (unit,) = connector.discover()
    reading = connector.read(unit)
    assert texts(reading) == [("user", "deploy it")] and reading.warnings == {"invalid_utf8": 1}


def test_a_vanished_file_is_a_unit_error(tmp_path):
    reading_path = tmp_path / "session-2025-10-01T08-00-0a0b0c0d.json"
    reading_path.write_text("{}", encoding="utf-8")
    connector = GeminiCliConnector(tmp_path)
    (unit,) = connector.discover()
    reading_path.unlink()
    with pytest.raises(UnitError):
        connector.read(unit)


def test_preview_reads_one_file_through_the_registry(monkeypatch):
    monkeypatch.setitem(registry.CONNECTOR_TYPES, "gemini_cli", GeminiCliConnector)
    connector, unit = registry.for_file("gemini_cli", LEGACY_FILE)
    assert unit.id == LEGACY and len(connector.read(unit).entries) == 3


# -- end to end

@pytest.mark.django_db
def test_a_run_stores_one_item_per_session_with_its_prompts_and_no_noise(tmp_path, settings, monkeypatch):
    """Through `library.ingest.pipeline.run` with the extractive summariser."""
    from jezero_site.config import validate
    from library.ingest import pipeline
    from library.ingest.summarize.extractive import ExtractiveSummarizer
    from library.models import Item

    monkeypatch.setitem(registry.CONNECTOR_TYPES, "gemini_cli", GeminiCliConnector)
    folder = tmp_path / "tmp"
    shutil.copytree(OWN, folder)
    old = time.time() - 2 * 86_400
    for path in folder.rglob("*"):
        os.utime(path, (old, old))
    config = {"name": "agent-gemini", "type": "gemini_cli", "path": str(folder), "min_chars": 0}
    settings.JEZERO = {**settings.JEZERO, "connectors": validate({"connectors": [config]})["connectors"]}

    report = pipeline.run("agent-gemini", summarizer=ExtractiveSummarizer())
    assert (report.units_seen, report.units_stored, report.units_failed) == (3, 3, 0)
    items = {item.key: item for item in Item.objects.all()}
    assert set(items) == {f"agent-gemini:{MAIN}#0", f"agent-gemini:{LEGACY}#0", f"agent-gemini:{MAIN}/{SUB}#0"}
    main = items[f"agent-gemini:{MAIN}#0"]
    assert "user: Add a percentage discount field to the cart total." in main.original
    assert "tool: Bash: pytest -q tests/test_cart.py" in main.original
    assert {"kind": "command", "text": "pytest -q tests/test_cart.py"} in main.atoms
    assert main.hints["cwd"] == "/home/ana/shop" and main.hints["project_hash"] == SHOP_HASH
    assert items[f"agent-gemini:{MAIN}/{SUB}#0"].original_ref == MAIN
    assert not any("NOISE" in item.original for item in items.values())
    assert pipeline.run("agent-gemini", summarizer=ExtractiveSummarizer()).units_changed == 0
