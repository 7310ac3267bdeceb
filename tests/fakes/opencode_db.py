"""An OpenCode `opencode.db` built the way OpenCode writes it, for the tests of the opencode
connector and of a run end to end: its drizzle tables `project`, `session`, `message`,
`part` (info and parts as `data` JSON), WAL mode, ascending ids; `a_working_session` fills
in one session with every kind of part."""

import json
import sqlite3
import time
from pathlib import Path

T0 = int((time.time() - 3 * 86_400) * 1000)   # epoch milliseconds, settled

SCHEMA = """
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, vcs text, name text,
    time_created integer NOT NULL, time_updated integer NOT NULL, sandboxes text NOT NULL);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL REFERENCES project(id), parent_id text,
    slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL, revert text,
    time_created integer NOT NULL, time_updated integer NOT NULL, time_archived integer);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL REFERENCES session(id),
    time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL REFERENCES message(id),
    session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX part_session_idx ON part (session_id);
"""


class OpenCodeDb:
    """An opencode.db written the way OpenCode writes it (WAL, ascending ids, JSON data)."""

    def __init__(self, path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=0)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.executescript(SCHEMA)
        self.clock = T0
        self.counter = 0
        self.project("prj_git", "/home/ana/src/tide-app")
        self.project("global", "/", vcs=None)

    def next_id(self, prefix):
        self.counter += 1
        self.clock += 1000
        return f"{prefix}_{self.counter:06d}"

    def project(self, project_id, worktree, vcs="git"):
        self.conn.execute("INSERT INTO project VALUES (?, ?, ?, NULL, ?, ?, '[]')", (project_id, worktree, vcs, T0, T0))

    def session(self, session_id, project="prj_git", directory="/home/ana/src/tide-app/web", title="Tide charts",
                parent=None, revert=None):
        self.conn.execute("INSERT INTO session VALUES (?, ?, ?, ?, ?, ?, '1.2.4', ?, ?, ?, NULL)",
                          (session_id, project, parent, "slug", directory, title,
                           json.dumps(revert) if revert else None, T0, self.clock))
        return session_id

    def message(self, session_id, role, *parts, **info):
        message_id = self.next_id("msg")
        data = {"role": role, "time": {"created": self.clock}, **info}
        if role == "assistant":
            data = {"modelID": "claude-sonnet-4", "providerID": "anthropic",
                    "path": {"cwd": "/home/ana/src/tide-app/web", "root": "/home/ana/src/tide-app"}, **data}
        self.conn.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                          (message_id, session_id, self.clock, self.clock, json.dumps(data)))
        for part in parts:
            self.part(session_id, message_id, part)
        return message_id

    def part(self, session_id, message_id, part):
        part_id = self.next_id("prt")
        data = part if isinstance(part, str) else json.dumps(part)
        self.conn.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                          (part_id, message_id, session_id, self.clock, self.clock, data))
        return part_id


def text(value, **extra):
    return {"type": "text", "text": value, **extra}


def tool(name, output="NOISE output", **arguments):
    return {"type": "tool", "callID": f"call_{name}", "tool": name,
            "state": {"status": "completed", "input": arguments, "output": output, "title": "NOISE title",
                      "metadata": {}, "time": {"start": T0, "end": T0}}}


def a_working_session(db, session_id="ses_0001"):
    db.session(session_id)
    db.message(session_id, "user", text("Add a tide chart to the dashboard."),
               text("Called the Read tool with the following input: NOISE inlined file", synthetic=True),
               {"type": "file", "mime": "text/plain", "filename": "chart.ts", "url": "file:///NOISE"})
    db.message(session_id, "assistant", {"type": "step-start"}, {"type": "reasoning", "text": "NOISE thinking",
                                                                  "time": {"start": T0}},
               text("I'll read the dashboard first."),
               tool("bash", command="git status", description="NOISE description"),
               tool("read", filePath="/home/ana/src/tide-app/web/dashboard.tsx"),
               tool("edit", filePath="/home/ana/src/tide-app/web/dashboard.tsx", oldString="NOISE", newString="NOISE"),
               tool("write", content="NOISE file body", filePath="/home/ana/src/tide-app/web/chart.tsx"),
               tool("glob", pattern="**/*.tsx", path="/home/ana/src/tide-app/web"),
               tool("todowrite", todos=[{"content": "NOISE a"}, {"content": "NOISE b"}]),
               tool("task", description="Find chart libraries", prompt="NOISE prompt", subagent_type="general"),
               tool("webfetch", url="https://example.org/tides", format="markdown"),
               {"type": "step-finish", "reason": "tool-calls", "cost": 0, "tokens": {}},
               {"type": "patch", "hash": "NOISE", "files": ["NOISE"]})
    db.message(session_id, "assistant", text("The chart is on the dashboard.<system-reminder>NOISE</system-reminder>"))
    return session_id
