"""The `opencode` connector type: OpenCode's data folder (`~/.local/share/opencode`).

Sources. OpenCode ≥ 1.2 keeps everything in the SQLite database `opencode.db` (WAL, in use):
tables `session` (id, project_id, parent_id, directory, title, version, revert, time_* in
epoch milliseconds), `message` and `part` (id, session_id[, message_id], time_created,
time_updated, and a `data` JSON column holding the message info or the part). It is opened
read-only through `sqlite.read_db`, as the hermes database is (`mode=ro` + `query_only`, one
short read transaction, retried on transient errors). Columns are looked up with `PRAGMA
table_info`; a row's explicit columns and its `data` JSON are merged, so a schema that moves a
field out of `data` still reads. Older versions wrote a JSON tree, `storage/session/<project>/
<session>.json`, `storage/message/<session>/<message>.json`, `storage/part/<message>/<part>
.json`; it is read only when there is no `opencode.db` (OpenCode 1.2 copies that tree into the
database on first start and leaves it behind, so reading both would count sessions twice).
`path` may be the data folder, the database file, the `storage` folder or one session file.

Units. One session is one unit, id = the session id. A subagent session (`parent_id`, from the
task tool) is a unit of its own whose ref (original_ref) is the root session of its chain, as
for hermes. Discovery is one aggregate query (fingerprint: messages, their newest update,
parts, the session's update time; `modified` the newest of those times); for the JSON tree one
stat per message file plus a peek at each session file's first lines for `parentID`.

Reading keeps what may reach the summariser (docs/design.md "Connectors"): text parts (user and assistant) and one
`tool` line per tool part (`Bash: <command>` for the shell tool, else `<tool>: <pattern, query,
URL or path>` or `<tool>: <first argument>`); a user's subtask part becomes `task: <description>`.
Dropped: tool outputs, reasoning, step/snapshot/patch/retry/compaction/agent/file parts,
synthetic and ignored text parts (file contents OpenCode inlines, reminders),
`<system-reminder>` blocks, compaction summaries (assistant messages with `summary: true`),
and what a revert undid (the session's `revert` message/part and everything after it).
Warnings: `malformed_data`, `invalid_utf8`, `unknown_part:<type>`, `unknown_role:<role>`, and for the JSON tree
`malformed_file`/`oversized_file`.
"""

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

from .base import Entry, Reading, Unit, UnitError
from .files import MAX_LINE_BYTES, peek_field
from .sqlite import InvalidText, columns, read_db
from .text import epoch_time, safe_text
from .tools import call_line, tool_line
from .units import root_session

AGENT = "opencode"
DB_NAME = "opencode.db"
_DROPPED_PARTS = frozenset({"reasoning", "step-start", "step-finish", "snapshot", "patch", "retry", "compaction",
                            "agent", "file"})
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_PLACEHOLDER_TITLE = re.compile(r"^(New session|Child session) - \d{4}-\d{2}-\d{2}T")


class OpenCodeConnector:
    """Reads OpenCode sessions under `path` (see the module docstring). Unknown keyword
    options are accepted and ignored."""

    type_name = AGENT

    def __init__(self, path, **options):
        self.root = Path(path)

    def discover(self):
        """Yield one `Unit` per session with messages, newest first: one aggregate query on `opencode.db`,
        or one stat per message file of the JSON tree. Raises `UnitError` when the database
        cannot be read at all."""
        db, storage = _sources(self.root)
        if db is not None:
            units = read_db(db, lambda conn: list(_db_units(conn, db)))
        elif storage is not None:
            units = list(_json_units(storage, only=self.root if self.root.suffix == ".json" else None))
        else:
            units = []
        yield from sorted(units, key=lambda unit: unit.modified, reverse=True)   # `preview` shows the newest

    def read(self, unit):
        """The unit's entries, hints and warnings; raises `UnitError` if the unit cannot be read."""
        path = Path(unit.path)
        if path.suffix == ".json":
            return _read_json_session(path, unit)
        return read_db(path, lambda conn: _read_db_session(conn, unit))


def _sources(root):
    """(database, storage folder): which one to read; at most one is set."""
    if root.is_file():
        if root.suffix == ".json":   # one session file of the JSON tree
            return None, root.parents[2]
        return root, None
    if (root / DB_NAME).is_file():
        return root / DB_NAME, None
    for storage in (root / "storage", root):
        if (storage / "session").is_dir():
            return None, storage
    return None, None


# -- the database

def _db_units(conn, db):
    session_cols, message_cols, part_cols = columns(conn, "session"), columns(conn, "message"), columns(conn, "part")
    if "id" not in session_cols or "session_id" not in message_cols:
        raise UnitError(f"{db}: not an OpenCode database (no session/message tables)")
    parent = "s.parent_id" if "parent_id" in session_cols else "NULL"
    updated = "s.time_updated" if "time_updated" in session_cols else "NULL"
    message_time = "MAX(time_updated)" if "time_updated" in message_cols else "NULL"
    parts = ("LEFT JOIN (SELECT session_id, COUNT(*) AS n FROM part GROUP BY session_id) p ON p.session_id = s.id"
             if "session_id" in part_cols else "LEFT JOIN (SELECT NULL AS n) p")
    rows = conn.execute(
        f"SELECT s.id, {parent}, {updated}, m.n, m.t, p.n FROM session s "
        f"LEFT JOIN (SELECT session_id, COUNT(*) AS n, {message_time} AS t FROM message GROUP BY session_id) m "
        f"ON m.session_id = s.id {parts}").fetchall()
    parents = {str(row[0]): row[1] for row in rows}
    for session_id, _parent, session_time, messages, message_time_max, part_count in rows:
        if not messages:
            continue
        newest = max((t for t in (message_time_max, session_time) if isinstance(t, int | float)), default=None)
        yield Unit(id=str(session_id), ref=root_session(str(session_id), parents),
                   fingerprint=f"{messages}:{message_time_max}:{part_count}:{session_time}",
                   modified=epoch_time(newest, millis=True) or datetime.fromtimestamp(0, UTC), path=str(db))


def _read_db_session(conn, unit):
    cursor = conn.execute("SELECT * FROM session WHERE id = ?", (unit.id,))
    row = cursor.fetchone()
    if row is None:
        raise UnitError(f"session {unit.id} is no longer in the database")
    reading = Reading()
    session = _record([d[0] for d in cursor.description], row, reading.warnings) or {}
    project = {}
    if session.get("project_id") and {"id", "worktree"} <= set(columns(conn, "project")):
        found = conn.execute("SELECT worktree FROM project WHERE id = ?", (session["project_id"],)).fetchone()
        project = {"worktree": found[0]} if found else {}
    conversation = _Conversation(session, reading.warnings)
    message_names, part_names = columns(conn, "message"), columns(conn, "part")
    order = "m.time_created, m.id" if "time_created" in message_names else "m.rowid"
    link = "p.message_id = m.id" if "message_id" in part_names else "0"
    rows = conn.execute(f"SELECT m.*, p.* FROM message m LEFT JOIN part p ON {link} WHERE m.session_id = ? "
                        f"ORDER BY {order}, p.id", (unit.id,))
    id_at = message_names.index("id") if "id" in message_names else None
    started, current_id, info, parts = False, None, None, []
    for values in rows:   # one row per part, grouped by message
        message_id = values[id_at] if id_at is not None else None
        if not started or message_id != current_id:
            if info is not None:
                conversation.add(info, parts)
            started, current_id, parts = True, message_id, []
            info = _record(message_names, values[: len(message_names)], reading.warnings)
        part = values[len(message_names):]
        if any(value is not None for value in part) and (record := _record(part_names, part, reading.warnings)):
            parts.append(record)
    if info is not None:
        conversation.add(info, parts)
    reading.entries = conversation.entries
    reading.hints = conversation.hints(unit, project)
    return reading


def _record(names, values, warnings):
    """A row as one dict: its explicit columns, overlaid with its `data` JSON object; None
    (counted as `malformed_data` or `invalid_utf8`) when `data` is not a usable JSON object."""
    record = {name: value for name, value in zip(names, values, strict=True) if name != "data"}
    data = dict(zip(names, values, strict=True)).get("data")
    if isinstance(data, InvalidText):
        warnings["invalid_utf8"] += 1
        return None
    if isinstance(data, str | bytes):
        try:
            parsed = json.loads(data)
        except (ValueError, RecursionError):
            parsed = None
        if not isinstance(parsed, dict):
            warnings["malformed_data"] += 1
            return None
        record.update(parsed)
    return record


# -- the JSON tree (OpenCode before 1.2)

def _json_units(storage, *, only=None):
    files = [only] if only else sorted((storage / "session").glob("*/*.json"))
    parents = {path.stem: peek_field(path, "parentID", max_lines=60) for path in files}
    for path in files:
        unit = _json_unit(storage, path, root_session(path.stem, parents))
        if unit is not None:
            yield unit


def _json_unit(storage, path, ref):
    try:
        stat = path.stat()
        entries = [entry for entry in os.scandir(storage / "message" / path.stem) if entry.name.endswith(".json")]
        times = [entry.stat().st_mtime_ns for entry in entries]
    except OSError:
        return None   # vanished, or no messages folder: nothing to read
    if not times:
        return None
    newest = max(times + [stat.st_mtime_ns])
    return Unit(id=path.stem, ref=ref, fingerprint=f"{len(times)}:{max(times)}:{stat.st_size}:{stat.st_mtime_ns}",
                modified=datetime.fromtimestamp(newest / 1e9, tz=UTC), path=str(path))


def _read_json_session(path, unit):
    reading = Reading()
    storage = path.parents[2]
    session = _load(path, reading.warnings)
    if session is None:
        raise UnitError(f"{path}: cannot read the session file")
    project = _load(storage / "project" / f"{session.get('projectID') or path.parent.name}.json", reading.warnings,
                    missing_ok=True) or {}
    conversation = _Conversation(session, reading.warnings)
    messages = []
    for file in sorted((storage / "message" / path.stem).glob("*.json")):
        info = _load(file, reading.warnings)
        if info is not None:
            info.setdefault("id", file.stem)
            messages.append(info)
    messages.sort(key=lambda info: (_created(info) or 0, str(info.get("id"))))
    for info in messages:
        parts = [part for file in sorted((storage / "part" / str(info["id"])).glob("*.json"))
                 if (part := _load(file, reading.warnings)) is not None]
        conversation.add(info, parts)
    reading.entries = conversation.entries
    reading.hints = conversation.hints(unit, project)
    return reading


def _load(path, warnings, *, missing_ok=False, limit=MAX_LINE_BYTES):
    """One JSON object from a file of at most `limit` bytes; None (counted) when unusable."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError:
        if not missing_ok:
            warnings["malformed_file"] += 1
        return None
    if len(raw) > limit:
        warnings["oversized_file"] += 1
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        warnings["malformed_file"] += 1
        return None
    return value


# -- what a session says

class _Conversation:
    """Messages (info + parts) in order → entries and hints, the same for both sources."""

    def __init__(self, session, warnings):
        self.session = session
        self.warnings = warnings
        self.entries = []
        self.facts = {}
        revert = _json_value(session.get("revert"))
        self.revert_message = revert.get("messageID") if isinstance(revert, dict) else None
        self.revert_part = revert.get("partID") if isinstance(revert, dict) else None

    def add(self, info, parts):
        message_id = str(info.get("id") or "")
        if self.revert_message and message_id and message_id > self.revert_message:
            return   # undone by a revert (ids ascend with time)
        if self.revert_message and message_id == self.revert_message:
            if not self.revert_part:
                return
            parts = [part for part in parts if str(part.get("id") or "") < self.revert_part]
        role = info.get("role")
        time = epoch_time(_created(info), millis=True) or epoch_time(info.get("time_created"), millis=True)
        self._note(info)
        if role == "user":
            self._message("user", parts, time)
        elif role == "assistant":
            if info.get("summary") is True:
                return   # a compaction summary
            self._message("assistant", parts, time)
        else:
            self.warnings[f"unknown_role:{str(role)[:40]}"] += 1

    def _note(self, info):
        model = info.get("modelID")   # assistant messages; user messages carry {providerID, modelID}
        if not model and isinstance(info.get("model"), dict):
            model = info["model"].get("modelID")
        if isinstance(model, str) and model:
            self.facts["model"] = model
        path = info.get("path") if isinstance(info.get("path"), dict) else {}
        for key, fact in (("cwd", "cwd"), ("root", "worktree")):
            if isinstance(path.get(key), str) and path[key]:
                self.facts.setdefault(fact, path[key])

    def _message(self, role, parts, time):
        """Text parts join into one entry per run; each tool call (and, in a user message, each
        subtask it starts) becomes a tool line; a subtask part on an assistant message is the
        bookkeeping of the call already listed."""
        texts = []
        for part in parts:
            kind = part.get("type")
            if kind == "text":
                if not part.get("synthetic") and not part.get("ignored"):
                    texts.append(_clean(part.get("text")))
            elif kind == "subtask" and role == "user":
                self._flush(role, texts, time)
                self.entries.append(Entry("tool", safe_text(tool_line("task", part.get("description") or "")), time))
            elif kind == "tool":
                self._flush(role, texts, time)
                self._tool(part, time)
            elif kind not in _DROPPED_PARTS and kind != "subtask":
                self.warnings[f"unknown_part:{str(kind)[:40]}"] += 1
        self._flush(role, texts, time)

    def _flush(self, role, texts, time):
        text = "\n\n".join(t for t in texts if t)
        texts.clear()
        if text:
            self.entries.append(Entry(role, safe_text(text), time))

    def _tool(self, part, time):
        state = part.get("state") if isinstance(part.get("state"), dict) else {}
        arguments = state.get("input") if isinstance(state.get("input"), dict) else {}
        name = part.get("tool")
        if name == "todowrite" and isinstance(arguments.get("todos"), list):
            line = f"todowrite: {len(arguments['todos'])} items"
        elif name == "task":
            line = tool_line("task", arguments.get("description") or arguments.get("prompt") or "")
        else:
            line = call_line(name, arguments, raw=state.get("raw") if isinstance(state.get("raw"), str) else "")
        self.entries.append(Entry("tool", safe_text(line), time))

    def hints(self, unit, project):
        session = self.session
        hints = {"agent": AGENT, "session_id": unit.id}
        cwd = session.get("directory") or self.facts.get("cwd")
        if isinstance(cwd, str) and cwd:
            hints["cwd"] = cwd
        roots = ((project or {}).get("worktree"), self.facts.get("worktree"))
        root = next((r for r in roots if isinstance(r, str) and r and r != "/"), None)
        if root:   # OpenCode's worktree is the git repository; "/" outside one
            hints["git_root"] = root
        title = session.get("title")
        if isinstance(title, str) and title.strip() and not _PLACEHOLDER_TITLE.match(title):
            hints["title_hint"] = title.strip()
        if self.facts.get("model"):
            hints["model"] = self.facts["model"]
        if isinstance(session.get("version"), str) and session["version"]:
            hints["version"] = session["version"]
        parent = session.get("parent_id") or session.get("parentID")
        if isinstance(parent, str) and parent:
            hints["parent_session_id"] = parent
        if unit.ref != unit.id:
            hints["root_session_id"] = unit.ref
        return hints


def _created(info):
    time = info.get("time")
    return time.get("created") if isinstance(time, dict) else None


def _json_value(value):
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return None
    return value


def _clean(text):
    if not isinstance(text, str):
        return ""
    return _REMINDER.sub("", text).strip()
