"""A Hermes `state.db` built the way Hermes writes it, for the tests of the hermes connector
and of a run end to end: Hermes' own schema (the columns the connector touches, as Hermes'
SCHEMA_SQL declares them), WAL mode, one writer connection; `a_working_session` fills in
one CLI session with every kind of row."""

import json
import sqlite3
import time
from pathlib import Path

DAY = 86_400
T0 = time.time() - 3 * DAY          # old enough to be settled

SCHEMA = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT, parent_session_id TEXT,
    started_at REAL NOT NULL, ended_at REAL, end_reason TEXT, cwd TEXT, git_branch TEXT,
    git_repo_root TEXT, title TEXT, archived INTEGER NOT NULL DEFAULT 0,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id));
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
    timestamp REAL NOT NULL, reasoning TEXT, reasoning_content TEXT,
    _compressed_summary INTEGER NOT NULL DEFAULT 0, active INTEGER NOT NULL DEFAULT 1,
    compacted INTEGER NOT NULL DEFAULT 0, display_kind TEXT);
CREATE INDEX idx_messages_session ON messages(session_id, timestamp);
CREATE INDEX idx_messages_session_active ON messages(session_id, active, timestamp);
"""


class HermesDb:
    """A Hermes state.db the test writes to, the way Hermes does: WAL, one writer connection."""

    def __init__(self, path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=0)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.executescript(SCHEMA)
        self.clock = T0

    def session(self, session_id, **columns):
        row = {"id": session_id, "source": "cli", "started_at": self.clock, **columns}
        names = ", ".join(row)
        self.conn.execute(f"INSERT INTO sessions ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
        return session_id

    def message(self, session_id, role, content=None, **columns):
        self.clock += 1
        row = {"session_id": session_id, "role": role, "content": content, "timestamp": self.clock, **columns}
        if isinstance(row.get("tool_calls"), list):
            row["tool_calls"] = json.dumps(row["tool_calls"])
        names = ", ".join(row)
        cursor = self.conn.execute(f"INSERT INTO messages ({names}) VALUES ({', '.join('?' * len(row))})",
                                   list(row.values()))
        return cursor.lastrowid


def call(name, **arguments):
    return {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def a_working_session(db, session_id="20260301_101500_a1b2c3"):
    """One CLI session with every kind of row; text that must not reach the summariser says NOISE."""
    db.session(session_id, model="anthropic/claude-sonnet-4", cwd="/srv/checkouts/tide-app/api",
               git_branch="feature/tides", git_repo_root="/srv/checkouts/tide-app", title="Tide table export")
    db.message(session_id, "session_meta", "NOISE session meta")
    db.message(session_id, "user", "Export the tide table as CSV.")
    db.message(session_id, "assistant", "I'll look at the exporter first.", reasoning_content="NOISE thinking",
               tool_calls=[call("terminal", command="git status"), call("read_file", path="api/export.py", offset=1)])
    db.message(session_id, "tool", "NOISE tool output", tool_call_id="call_terminal", tool_name="terminal")
    db.message(session_id, "tool", "NOISE file body", tool_call_id="call_read_file", tool_name="read_file")
    db.message(session_id, "assistant", None, tool_calls=[
        call("patch", mode="replace", path="api/export.py", old_string="NOISE old", new_string="NOISE new"),
        call("web_search", query="csv dialect excel"),
        call("search_files", pattern="def export", target="content", path="api"),
        call("delegate_task", goal="Write tests for the exporter")])
    db.message(session_id, "tool", "NOISE results")
    db.message(session_id, "assistant", "The exporter now writes CSV.", reasoning="NOISE more thinking")
    return session_id
