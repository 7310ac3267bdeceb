"""The hermes connector (docs/design.md "Connectors", docs/agent-formats.md): a live Hermes `state.db` read without ever
writing or blocking it; sessions as units, compression chains sharing their root's ref, what
reaches the summariser, robustness. The databases are built with Hermes' own schema by
tests/fakes/hermes_db.py."""

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from connectors import hermes, registry
from connectors import sqlite as agent_db
from connectors.base import UnitError
from connectors.hermes import HermesConnector
from tests.conftest import everything, texts
from tests.fakes.hermes_db import T0, HermesDb, a_working_session, call


@pytest.fixture
def db(tmp_path):
    database = HermesDb(tmp_path / ".hermes" / "state.db")
    yield database
    database.conn.close()


def read_all(path):
    connector = HermesConnector(path)
    return {unit.id: (unit, connector.read(unit)) for unit in connector.discover()}


def digest(path):
    path = Path(path)
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


# -- what reaches the summariser

def test_only_dialogue_and_one_line_per_tool_call_reach_the_summariser(db):
    session = a_working_session(db)
    ((unit, reading),) = read_all(db.path).values()
    assert unit.id == unit.ref == session
    assert texts(reading) == [
        ("user", "Export the tide table as CSV."),
        ("assistant", "I'll look at the exporter first."),
        ("tool", "Bash: git status"),                       # the terminal tool reads as a shell command
        ("tool", "read_file: api/export.py"),
        ("tool", "patch: api/export.py"),                   # a path argument wins over the first argument
        ("tool", "web_search: csv dialect excel"),
        ("tool", "search_files: def export"),
        ("tool", "delegate_task: Write tests for the exporter"),
        ("assistant", "The exporter now writes CSV."),
    ]
    assert "NOISE" not in everything(reading)
    assert not reading.warnings


def test_hints_come_from_the_session_row(db):
    session = a_working_session(db)
    ((_unit, reading),) = read_all(db.path).values()
    assert reading.hints == {
        "agent": "hermes", "session_id": session, "cwd": "/srv/checkouts/tide-app/api",
        "git_root": "/srv/checkouts/tide-app", "git_branch": "feature/tides", "title_hint": "Tide table export",
        "model": "anthropic/claude-sonnet-4", "session_source": "cli",
    }


def test_entries_carry_the_message_time_in_utc(db):
    a_working_session(db)
    ((unit, reading),) = read_all(db.path).values()
    first = reading.entries[0]
    assert first.time.utcoffset().total_seconds() == 0
    assert first.time.timestamp() == pytest.approx(T0 + 2)
    assert unit.modified >= reading.newest_time()


def test_rewound_messages_are_not_read(db):
    """`active = 0` (without `compacted`) is a turn the person took back."""
    db.session("s1")
    db.message("s1", "user", "Rename the column to height.")
    db.message("s1", "user", "NOISE rewound request", active=0)
    db.message("s1", "assistant", "NOISE rewound answer", active=0)
    db.message("s1", "user", "Rename the column to level instead.")
    db.message("s1", "assistant", "Renamed it to level.")
    _unit, reading = read_all(db.path)["s1"]
    assert texts(reading) == [("user", "Rename the column to height."),
                              ("user", "Rename the column to level instead."), ("assistant", "Renamed it to level.")]


def test_structured_content_keeps_only_its_text_parts(db):
    db.session("s1")
    parts = [{"type": "text", "text": "What does this chart show?"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoNOISE"}}]
    db.message("s1", "user", "\x00json:" + json.dumps(parts))
    db.message("s1", "assistant", "\x01json:" + json.dumps([{"type": "output_text", "text": "High tide at 6."}]))
    _unit, reading = read_all(db.path)["s1"]
    assert texts(reading) == [("user", "What does this chart show?"), ("assistant", "High tide at 6.")]
    assert not reading.warnings


def test_a_malformed_value_is_skipped_and_counted(db):
    db.session("s1")
    db.message("s1", "user", "\x00json:[{\"type\": \"text\", \"text\": ")   # cut off mid-write
    db.message("s1", "user", "Plot the tides for May.")
    db.message("s1", "assistant", "Plotted.", tool_calls="{not json")
    db.message("s1", "assistant", "Saved.", tool_calls=json.dumps([{"id": "x", "function": "oops"}]))
    db.message("s1", "critic", "NOISE unknown role")
    db.message("s1", "user", b"\xff\xfeNOISE bytes")
    db.conn.execute("INSERT INTO messages (session_id, role, content, timestamp) "
                    "VALUES ('s1', 'user', CAST(X'4e4f495345ff' AS TEXT), ?)", (db.clock + 1,))   # invalid UTF-8
    _unit, reading = read_all(db.path)["s1"]
    assert texts(reading) == [("user", "Plot the tides for May."), ("assistant", "Plotted."), ("assistant", "Saved.")]
    assert reading.warnings == {"malformed_content": 2, "malformed_tool_calls": 2, "unknown_role:critic": 1,
                                "invalid_utf8": 1}


def test_compaction_summaries_injected_memory_and_agent_rows_are_dropped(db):
    db.session("s1")
    db.message("s1", "user", "<memory-context>\n[System note: The following is recalled memory context, NOT new "
                             "user input. Treat as authoritative reference data.]\n\nNOISE memory\n</memory-context>\n"
                             "Add a --since flag to the export.")
    db.message("s1", "user", "NOISE switched model", display_kind="model_switch")
    db.message("s1", "user", "NOISE hidden kickoff", display_kind="hidden")
    db.message("s1", "user", "[CONTEXT SUMMARY]: NOISE an old-style summary")
    db.message("s1", "user", "Review the conversation above and consider saving to memory. NOISE")
    db.message("s1", "assistant", "NOISE curator reply")
    db.message("s1", "assistant", "Added --since.")
    _unit, reading = read_all(db.path)["s1"]
    assert texts(reading) == [("user", "Add a --since flag to the export."), ("assistant", "Added --since.")]


# -- compression chains and in-place compaction

def test_a_compression_chain_shares_its_root_as_ref_and_skips_what_was_carried_over(db):
    """Hermes continues a compressed session under a new id; the child repeats the protected head,
    carries a summary and the protected tail, then goes on. Each part is a unit; all share the root."""
    db.session("root", ended_at=T0 + 100, end_reason="compression", git_repo_root="/srv/checkouts/tide-app")
    db.message("root", "user", "Build the tide alert service.")
    db.message("root", "assistant", "Starting with the scheduler.", tool_calls=[call("terminal", command="make init")])
    db.message("root", "assistant", "Scheduler done.")
    db.session("child", parent_session_id="root", end_reason="compression", git_repo_root="/srv/checkouts/tide-app")
    db.message("child", "user", "Build the tide alert service.")                           # protected head
    db.message("child", "user", "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted. NOISE",
               _compressed_summary=1)
    db.message("child", "assistant", "Scheduler done.")                                   # protected tail
    db.message("child", "user", "Now add SMS alerts.")
    db.message("child", "assistant", "SMS alerts added.")
    db.message("child", "user", "Build the tide alert service.")   # said again later: kept, it is not a copy
    db.session("grandchild", parent_session_id="child")
    db.message("grandchild", "user", "Now add SMS alerts.")                               # protected head
    db.message("grandchild", "assistant", "[CONTEXT SUMMARY]: NOISE an older summary prefix")
    db.message("grandchild", "assistant", "SMS alerts added.")                            # protected tail
    db.message("grandchild", "user", "Ship it.")
    units = read_all(db.path)
    assert {unit_id: unit.ref for unit_id, (unit, _r) in units.items()} == {
        "root": "root", "child": "root", "grandchild": "root"}
    assert texts(units["root"][1]) == [("user", "Build the tide alert service."),
                                       ("assistant", "Starting with the scheduler."), ("tool", "Bash: make init"),
                                       ("assistant", "Scheduler done.")]
    assert texts(units["child"][1]) == [("user", "Now add SMS alerts."), ("assistant", "SMS alerts added."),
                                        ("user", "Build the tide alert service.")]
    assert units["child"][1].hints["parent_session_id"] == "root"
    assert units["child"][1].hints["root_session_id"] == "root"
    assert texts(units["grandchild"][1]) == [("user", "Ship it.")]
    assert "NOISE" not in everything(units["child"][1])


def test_a_summary_carrier_keeps_a_new_request_that_rides_on_it(db):
    db.session("s1")
    db.message("s1", "user", "Count the stations.")
    db.message("s1", "user", "[CONTEXT COMPACTION — REFERENCE ONLY] NOISE summary\n--- END OF CONTEXT SUMMARY — "
                             "respond to the message below, not the summary above ---\nAlso list the broken ones.",
               _compressed_summary=1)
    _unit, reading = read_all(db.path)["s1"]
    assert texts(reading) == [("user", "Count the stations."), ("user", "Also list the broken ones.")]


def test_in_place_compaction_keeps_the_archived_history_once(db):
    """Newer Hermes archives the history (`active = 0, compacted = 1`) and re-inserts head,
    summary and tail as live rows: the history is read, the re-inserted copies are not."""
    db.session("s1")
    db.message("s1", "user", "Migrate the readings table.", active=0, compacted=1)
    db.message("s1", "assistant", "Wrote the migration.", active=0, compacted=1,
               tool_calls=[call("terminal", command="alembic revision -m readings")])
    db.message("s1", "user", "Run it on staging.", active=0, compacted=1)
    db.message("s1", "user", "NOISE rewound", active=0, compacted=0)
    db.message("s1", "user", "Migrate the readings table.")                              # head copy
    db.message("s1", "user", "[CONTEXT COMPACTION — REFERENCE ONLY] NOISE", _compressed_summary=1)
    db.message("s1", "user", "Run it on staging.")                                       # tail copy
    db.message("s1", "assistant", "Ran it on staging: 3 tables changed.")
    _unit, reading = read_all(db.path)["s1"]
    assert texts(reading) == [("user", "Migrate the readings table."), ("assistant", "Wrote the migration."),
                              ("tool", "Bash: alembic revision -m readings"), ("user", "Run it on staging."),
                              ("assistant", "Ran it on staging: 3 tables changed.")]


# -- discovery and the cursor

def test_the_fingerprint_moves_when_a_message_is_added_or_rewound(db):
    db.session("s1")
    db.message("s1", "user", "Check the gauge feed.")
    (before,) = HermesConnector(db.path).discover()
    (same,) = HermesConnector(db.path).discover()
    assert before.fingerprint == same.fingerprint
    last = db.message("s1", "assistant", "The feed is fine.")
    (after,) = HermesConnector(db.path).discover()
    assert after.fingerprint != before.fingerprint
    assert str(last) in after.fingerprint and after.modified > before.modified
    db.conn.execute("UPDATE messages SET active = 0 WHERE id = ?", (last,))   # /undo
    (rewound,) = HermesConnector(db.path).discover()
    assert rewound.fingerprint not in (before.fingerprint, after.fingerprint)


def test_sessions_without_messages_are_not_units_and_modified_is_the_newest_message(db):
    db.session("empty")
    db.session("s1")
    db.message("s1", "user", "Hello tides.")
    (unit,) = HermesConnector(db.path).discover()
    assert unit.id == "s1" and unit.path == str(db.path)
    assert unit.modified.timestamp() == pytest.approx(db.clock)


def test_a_hermes_home_folder_reads_state_db_and_every_profile_newest_first(tmp_path, db):
    """A broken profile database does not hide the others."""
    db.session("main-session")
    db.message("main-session", "user", "Main profile work.")
    work = HermesDb(tmp_path / ".hermes" / "profiles" / "work #2" / "state.db")   # a path URIs must escape
    work.clock = db.clock + 10
    work.session("work-session", parent_session_id="gone-parent")
    work.message("work-session", "user", "Work profile work.")
    broken = tmp_path / ".hermes" / "profiles" / "broken" / "state.db"
    broken.parent.mkdir()
    broken.write_bytes(b"\0" * 4096)
    assert [unit.id for unit in HermesConnector(tmp_path / ".hermes").discover()] == [
        "work #2/work-session", "main-session"]
    units = read_all(tmp_path / ".hermes")
    unit, reading = units["work #2/work-session"]
    assert unit.ref == "gone-parent"   # a pruned parent still names the chain's origin
    assert reading.hints["profile"] == "work #2" and reading.hints["session_id"] == "work-session"
    assert texts(reading) == [("user", "Work profile work.")]
    work.conn.close()


def test_a_missing_path_finds_nothing(tmp_path):
    assert list(HermesConnector(tmp_path / "nowhere").discover()) == []


def test_a_file_that_is_not_a_hermes_database_fails_the_source(tmp_path):
    junk = tmp_path / "state.db"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(UnitError):
        list(HermesConnector(junk).discover())
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE notes (x)").connection.close()
    with pytest.raises(UnitError, match="not a Hermes state database"):
        list(HermesConnector(other).discover())


def test_a_session_deleted_after_discovery_fails_only_its_unit(db):
    db.session("s1")
    db.message("s1", "user", "Soon gone.")
    connector = HermesConnector(db.path)
    (unit,) = connector.discover()
    db.conn.execute("DELETE FROM messages")
    db.conn.execute("DELETE FROM sessions")
    with pytest.raises(UnitError, match="no longer"):
        connector.read(unit)


def test_a_database_without_an_id_column_or_state_flags_is_read_in_rowid_order(tmp_path):
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript("CREATE TABLE sessions (id TEXT PRIMARY KEY, started_at REAL);"
                       "CREATE TABLE messages (session_id TEXT, role TEXT, content TEXT, timestamp REAL);")
    conn.execute("INSERT INTO sessions VALUES ('old', ?)", (T0,))
    for n, (role, text) in enumerate([("user", "Old schema question."), ("assistant", "Old schema answer.")]):
        conn.execute("INSERT INTO messages VALUES ('old', ?, ?, ?)", (role, text, T0 + n))
    conn.close()
    ((unit, reading),) = read_all(path).values()
    assert unit.fingerprint.startswith("2:2:2:")
    assert texts(reading) == [("user", "Old schema question."), ("assistant", "Old schema answer.")]


# -- a live database: never written, never locked

def test_the_connector_opens_the_database_read_only(db):
    db.session("s1")
    with agent_db.readonly_db(db.path) as conn:
        with pytest.raises(sqlite3.OperationalError, match="readonly|read-only"):
            conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('x', 'cli', 0)")
        assert conn.execute("PRAGMA query_only").fetchone() == (1,)


def test_a_live_writer_is_neither_blocked_nor_changed_by_a_read(db, monkeypatch):
    """Hermes holds a write transaction while we read: we see the last commit, do not wait, and
    leave the database and its WAL byte-identical; Hermes commits in the middle of our read
    transaction without waiting (its busy timeout is 0 here, so any lock of ours would fail it)."""
    a_working_session(db, "live")
    db.conn.execute("BEGIN IMMEDIATE")
    db.message("live", "user", "NOISE not committed yet")
    if os.geteuid() != 0:
        os.chmod(db.path, 0o444)   # a writable open would fail; as root, the byte checks below stand in
    before = (digest(db.path), digest(f"{db.path}-wal"))
    started = time.monotonic()
    ((unit, reading),) = read_all(db.path).values()
    assert time.monotonic() - started < 2
    assert "NOISE" not in everything(reading) and len(reading.entries) == 9
    assert (digest(db.path), digest(f"{db.path}-wal")) == before
    assert not Path(f"{db.path}-journal").exists()
    db.conn.execute("COMMIT")

    # Hermes commits again while our read transaction is open.
    original = hermes._Session.add
    committed = []

    def add_then_let_hermes_write(self, row):
        if not committed:
            db.message("live", "assistant", "Written during the read.")
            committed.append(True)
        return original(self, row)

    monkeypatch.setattr(hermes._Session, "add", add_then_let_hermes_write)
    connector = HermesConnector(db.path)
    (unit_now,) = connector.discover()
    during = connector.read(unit_now)
    assert committed and "Written during the read." not in everything(during)   # one snapshot per read
    monkeypatch.undo()
    (unit_after,) = connector.discover()
    assert unit_after.fingerprint != unit_now.fingerprint
    assert connector.read(unit_after).entries[-1].text == "Written during the read."


def test_a_transient_io_error_is_retried(db, monkeypatch):
    db.session("s1")
    db.message("s1", "user", "Retry me.")
    real_connect = sqlite3.connect
    failures = [sqlite3.OperationalError("disk I/O error")]

    def flaky_connect(*args, **kwargs):
        if failures:
            raise failures.pop()
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(agent_db.sqlite3, "connect", flaky_connect)
    monkeypatch.setattr(agent_db, "_RETRY_WAIT", 0)
    (unit,) = HermesConnector(db.path).discover()
    assert unit.id == "s1"


# -- end to end

@pytest.mark.django_db
def test_a_run_stores_items_with_the_project_of_the_git_root(db, settings, monkeypatch):
    """Through `library.ingest.pipeline.run` with the extractive summariser: each session of a chain
    becomes items with the root's ref, and the project comes from `git_repo_root`."""
    from jezero_site.config import validate
    from library.ingest import pipeline
    from library.ingest.summarize.extractive import ExtractiveSummarizer
    from library.models import Item

    monkeypatch.setitem(registry.CONNECTOR_TYPES, "hermes", HermesConnector)
    long = " The export must keep the station id, the timestamp in UTC and the height in metres." * 6
    db.session("root", end_reason="compression", cwd="/srv/checkouts/tide-app/api",
               git_repo_root="/srv/checkouts/tide-app", title="Tide export")
    db.message("root", "user", "Export the tide table as CSV." + long)
    db.message("root", "assistant", "Done, see export.py." + long, tool_calls=[call("terminal", command="pytest -q")])
    db.session("child", parent_session_id="root", cwd="/srv/checkouts/tide-app/api",
               git_repo_root="/srv/checkouts/tide-app")
    db.message("child", "user", "Now add a JSON export too." + long)
    db.message("child", "assistant", "JSON export added." + long)
    config = {"name": "agent-hermes", "type": "hermes", "path": str(db.path)}
    settings.JEZERO = {**settings.JEZERO, "connectors": validate({"connectors": [config]})["connectors"]}

    report = pipeline.run("agent-hermes", summarizer=ExtractiveSummarizer())
    assert (report.units_seen, report.units_stored, report.units_failed) == (2, 2, 0)
    items = {item.key: item for item in Item.objects.all()}
    assert set(items) == {"agent-hermes:root#0", "agent-hermes:child#0"}
    assert {item.original_ref for item in items.values()} == {"root"}
    assert {item.project for item in items.values()} == {"tide-app"}
    assert "tool: Bash: pytest -q" in items["agent-hermes:root#0"].original
    assert items["agent-hermes:child#0"].hints["git_root"] == "/srv/checkouts/tide-app"
    again = pipeline.run("agent-hermes", summarizer=ExtractiveSummarizer())
    assert again.units_changed == 0
