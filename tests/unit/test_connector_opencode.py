"""The opencode connector (docs/design.md "Connectors", docs/agent-formats.md): OpenCode's `opencode.db` read without writing
it, sessions as units, subagent sessions sharing their root's ref, what reaches the summariser,
reverts, and the older JSON tree. The databases are built with OpenCode's schema by
tests/fakes/opencode_db.py."""

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from connectors.base import UnitError
from connectors.opencode import OpenCodeConnector
from tests.conftest import everything, texts
from tests.fakes.opencode_db import T0, OpenCodeDb, a_working_session, text, tool


@pytest.fixture
def db(tmp_path):
    database = OpenCodeDb(tmp_path / "opencode" / "opencode.db")
    yield database
    database.conn.close()


def read_all(path):
    connector = OpenCodeConnector(path)
    return {unit.id: (unit, connector.read(unit)) for unit in connector.discover()}


# -- what reaches the summariser

def test_only_dialogue_and_one_line_per_tool_call_reach_the_summariser(db):
    session = a_working_session(db)
    ((unit, reading),) = read_all(db.path).values()
    assert unit.id == unit.ref == session
    assert texts(reading) == [
        ("user", "Add a tide chart to the dashboard."),
        ("assistant", "I'll read the dashboard first."),
        ("tool", "Bash: git status"),
        ("tool", "read: /home/ana/src/tide-app/web/dashboard.tsx"),
        ("tool", "edit: /home/ana/src/tide-app/web/dashboard.tsx"),
        ("tool", "write: /home/ana/src/tide-app/web/chart.tsx"),     # the path, not the content first
        ("tool", "glob: **/*.tsx"),                                   # the pattern, not the folder
        ("tool", "todowrite: 2 items"),
        ("tool", "task: Find chart libraries"),
        ("tool", "webfetch: https://example.org/tides"),
        ("assistant", "The chart is on the dashboard."),
    ]
    assert "NOISE" not in everything(reading)
    assert not reading.warnings


def test_hints_come_from_the_session_its_project_and_its_messages(db):
    session = a_working_session(db)
    ((_unit, reading),) = read_all(db.path).values()
    assert reading.hints == {
        "agent": "opencode", "session_id": session, "cwd": "/home/ana/src/tide-app/web",
        "git_root": "/home/ana/src/tide-app", "title_hint": "Tide charts", "model": "claude-sonnet-4",
        "version": "1.2.4",
    }
    assert reading.entries[0].time.timestamp() * 1000 == pytest.approx(T0 + 1000)


def test_a_placeholder_title_and_a_folder_outside_git_give_no_hints(db):
    db.session("ses_0001", project="global", directory="/tmp/scratch", title="New session - 2026-03-01T10:00:00.000Z")
    db.message("ses_0001", "user", text("Sort these numbers."), model={"providerID": "openai", "modelID": "gpt-5"})
    _unit, reading = read_all(db.path)["ses_0001"]
    assert reading.hints == {"agent": "opencode", "session_id": "ses_0001", "cwd": "/tmp/scratch",
                             "model": "gpt-5", "version": "1.2.4"}


def test_what_a_revert_undid_is_not_read(db):
    db.session("ses_0001")
    db.message("ses_0001", "user", text("Use a bar chart."))
    db.message("ses_0001", "assistant", text("Bar chart added."), tool("bash", command="npm test"))
    reverted = db.message("ses_0001", "user", text("NOISE reverted prompt"))
    db.message("ses_0001", "assistant", text("NOISE reverted answer"))
    db.conn.execute("UPDATE session SET revert = ? WHERE id = 'ses_0001'", (json.dumps({"messageID": reverted}),))
    _unit, reading = read_all(db.path)["ses_0001"]
    assert texts(reading) == [("user", "Use a bar chart."), ("assistant", "Bar chart added."),
                              ("tool", "Bash: npm test")]


def test_a_revert_to_a_part_keeps_the_parts_before_it(db):
    db.session("ses_0001")
    db.message("ses_0001", "user", text("Rename the axis."))
    message = db.message("ses_0001", "assistant", text("Renaming."))
    cut = db.part("ses_0001", message, tool("bash", command="NOISE rm -rf build"))
    db.conn.execute("UPDATE session SET revert = ? WHERE id = 'ses_0001'",
                    (json.dumps({"messageID": message, "partID": cut}),))
    _unit, reading = read_all(db.path)["ses_0001"]
    assert texts(reading) == [("user", "Rename the axis."), ("assistant", "Renaming.")]


def test_compaction_summaries_are_dropped(db):
    db.session("ses_0001")
    db.message("ses_0001", "user", text("Add tooltips."))
    db.message("ses_0001", "assistant", text("Tooltips added."))
    db.message("ses_0001", "user", {"type": "compaction", "auto": True})
    db.message("ses_0001", "assistant", text("NOISE summary of the conversation"), summary=True)
    db.message("ses_0001", "user", text("Now dark mode."))
    _unit, reading = read_all(db.path)["ses_0001"]
    assert texts(reading) == [("user", "Add tooltips."), ("assistant", "Tooltips added."), ("user", "Now dark mode.")]


def test_a_subagent_session_is_a_unit_whose_ref_is_the_root_session(db):
    a_working_session(db, "ses_0001")
    db.session("ses_0002", parent="ses_0001", title="Find chart libraries (@general subagent)")
    db.message("ses_0002", "user", text("Find chart libraries"))
    db.message("ses_0002", "assistant", text("recharts and visx fit."), tool("grep", pattern="chart"))
    db.session("ses_0003", parent="ses_0002")
    db.message("ses_0003", "user", text("Compare bundle sizes"))
    units = read_all(db.path)
    assert {unit_id: unit.ref for unit_id, (unit, _r) in units.items()} == {
        "ses_0001": "ses_0001", "ses_0002": "ses_0001", "ses_0003": "ses_0001"}
    _unit, reading = units["ses_0002"]
    assert texts(reading) == [("user", "Find chart libraries"), ("assistant", "recharts and visx fit."),
                              ("tool", "grep: chart")]
    assert reading.hints["parent_session_id"] == "ses_0001" and reading.hints["root_session_id"] == "ses_0001"
    assert units["ses_0003"][1].hints["parent_session_id"] == "ses_0002"
    assert units["ses_0003"][1].hints["root_session_id"] == "ses_0001"


def test_malformed_data_and_unknown_parts_are_skipped_and_counted(db):
    db.session("ses_0001")
    message = db.message("ses_0001", "user", text("Plot May."), {"type": "hologram", "text": "NOISE"})
    db.part("ses_0001", message, '{"type": "text", "text": "NOISE cut off')
    db.message("ses_0001", "critic", text("NOISE unknown role"))
    db.conn.execute("INSERT INTO part VALUES ('prt_x', ?, 'ses_0001', ?, ?, CAST(X'7b22ff227d' AS TEXT))",
                    (message, db.clock, db.clock))   # invalid UTF-8
    _unit, reading = read_all(db.path)["ses_0001"]
    assert texts(reading) == [("user", "Plot May.")]
    assert reading.warnings == {"unknown_part:hologram": 1, "malformed_data": 1, "unknown_role:critic": 1,
                                "invalid_utf8": 1}


def test_explicit_columns_are_read_when_there_is_no_data_column(tmp_path):
    path = tmp_path / "opencode.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript("""
        CREATE TABLE session (id text PRIMARY KEY, directory text, title text);
        CREATE TABLE message (id text PRIMARY KEY, session_id text, role text, time_created integer);
        CREATE TABLE part (id text PRIMARY KEY, message_id text, session_id text, type text, text text);
    """)
    conn.execute("INSERT INTO session VALUES ('ses_1', '/home/ana/notes', 'Notes')")
    conn.execute("INSERT INTO message VALUES ('msg_1', 'ses_1', 'user', ?)", (T0,))
    conn.execute("INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_1', 'text', 'Summarise my notes.')")
    conn.close()
    ((unit, reading),) = read_all(path).values()
    assert texts(reading) == [("user", "Summarise my notes.")]
    assert reading.hints["cwd"] == "/home/ana/notes"
    assert unit.fingerprint == "1:None:1:None"


# -- discovery and the cursor

def test_the_fingerprint_moves_when_a_part_or_a_message_changes(db):
    db.session("ses_0001")
    message = db.message("ses_0001", "assistant", text("Working on it."))
    (before,) = OpenCodeConnector(db.path).discover()
    assert OpenCodeConnector(db.path.parent).discover().__next__().fingerprint == before.fingerprint
    db.part("ses_0001", message, tool("bash", command="npm run build"))
    (with_part,) = OpenCodeConnector(db.path).discover()
    assert with_part.fingerprint != before.fingerprint
    db.conn.execute("UPDATE message SET time_updated = ? WHERE id = ?", (db.clock + 5000, message))
    (completed,) = OpenCodeConnector(db.path).discover()
    assert completed.fingerprint != with_part.fingerprint
    assert completed.modified.timestamp() * 1000 == pytest.approx(db.clock + 5000)


def test_a_folder_without_opencode_data_finds_nothing(tmp_path):
    assert list(OpenCodeConnector(tmp_path).discover()) == []
    assert list(OpenCodeConnector(tmp_path / "nowhere").discover()) == []


def test_a_file_that_is_not_an_opencode_database_fails_the_source(tmp_path):
    junk = tmp_path / "opencode.db"
    junk.write_bytes(b"garbage" * 500)
    with pytest.raises(UnitError):
        list(OpenCodeConnector(tmp_path).discover())


def test_the_database_is_read_while_opencode_writes_and_is_never_changed(db):
    a_working_session(db)
    db.conn.execute("BEGIN IMMEDIATE")
    db.message("ses_0001", "user", text("NOISE not committed"))
    before = [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in (db.path, f"{db.path}-wal")]
    ((_unit, reading),) = read_all(db.path).values()
    assert "NOISE" not in everything(reading)
    assert [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in (db.path, f"{db.path}-wal")] == before
    db.conn.execute("COMMIT")   # timeout 0: would fail if the read had left a lock behind


# -- the JSON tree of OpenCode before 1.2

def write_json(path, value):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")


def json_tree(root):
    storage = root / "storage"
    write_json(storage / "project" / "prj_git.json", {"id": "prj_git", "worktree": "/home/ana/src/tide-app",
                                                      "vcs": "git"})
    write_json(storage / "session" / "prj_git" / "ses_A.json",
               {"id": "ses_A", "projectID": "prj_git", "directory": "/home/ana/src/tide-app", "title": "Legacy work",
                "version": "0.15.0", "time": {"created": T0, "updated": T0}})
    write_json(storage / "session" / "prj_git" / "ses_B.json",
               {"id": "ses_B", "projectID": "prj_git", "parentID": "ses_A", "directory": "/home/ana/src/tide-app",
                "title": "Child", "version": "0.15.0", "time": {"created": T0, "updated": T0}})
    messages = [("ses_A", "msg_1", "user", [text("Port the chart to canvas.")]),
                ("ses_A", "msg_2", "assistant", [text("Ported."), tool("write", filePath="src/canvas.ts")]),
                ("ses_B", "msg_3", "user", [text("Check the canvas size.")])]
    for n, (session, message, role, parts) in enumerate(messages):
        write_json(storage / "message" / session / f"{message}.json",
                   {"id": message, "sessionID": session, "role": role, "time": {"created": T0 + n}})
        for k, part in enumerate(parts):
            write_json(storage / "part" / message / f"prt_{n}{k}.json", {"id": f"prt_{n}{k}", **part})
    return storage


def test_the_json_tree_is_read_when_there_is_no_database(tmp_path):
    json_tree(tmp_path)
    units = read_all(tmp_path)
    assert {unit_id: unit.ref for unit_id, (unit, _r) in units.items()} == {"ses_A": "ses_A", "ses_B": "ses_A"}
    unit, reading = units["ses_A"]
    assert texts(reading) == [("user", "Port the chart to canvas."), ("assistant", "Ported."),
                              ("tool", "write: src/canvas.ts")]
    assert reading.hints["git_root"] == "/home/ana/src/tide-app" and reading.hints["title_hint"] == "Legacy work"
    assert unit.path.endswith("storage/session/prj_git/ses_A.json")
    (single,) = OpenCodeConnector(unit.path).discover()
    assert single.id == "ses_A"


def test_the_json_tree_is_ignored_once_a_database_exists(tmp_path):
    json_tree(tmp_path)
    database = OpenCodeDb(tmp_path / "opencode.db")
    database.session("ses_A")
    database.message("ses_A", "user", text("From the database."))
    database.conn.close()
    ((_unit, reading),) = read_all(tmp_path).values()
    assert texts(reading) == [("user", "From the database.")]


def test_a_broken_file_in_the_json_tree_is_counted(tmp_path):
    storage = json_tree(tmp_path)
    (storage / "part" / "msg_2" / "prt_10.json").write_text("{broken", encoding="utf-8")
    _unit, reading = read_all(tmp_path)["ses_A"]
    assert texts(reading) == [("user", "Port the chart to canvas."), ("tool", "write: src/canvas.ts")]
    assert reading.warnings == {"malformed_file": 1}
