"""The `hermes` connector type: a Hermes Agent `state.db` (SQLite in WAL mode, in use).

The database. `path` is a `state.db` file or a Hermes home folder, whose `state.db` and
`profiles/*/state.db` are read. Every database is read through `sqlite.read_db`: opened
read-only (`mode=ro` + `query_only`, never `immutable`: Hermes writes while we read), one
short read transaction per read (in rollback-journal mode, Hermes' fallback where WAL is
unsupported, its shared lock lasts milliseconds and Hermes' busy timeout absorbs it),
transient "disk I/O error"/busy answers retried a few times before the unit fails; the
database is never written. Columns are looked up with `PRAGMA table_info`, so older and
newer schemas both work; messages are ordered by their autoincrement `id` (`rowid` without one).

Units. One session is one unit: id = the session id (`<profile>/<session id>` for a profile's
database). Hermes continues a compressed session under a new id with `parent_session_id`
(also used by branches and subagent runs); such a child is a unit of its own whose ref
(original_ref) is the ROOT session id of its chain, so all parts of one conversation share
it. Discovery is one aggregate query per database: the fingerprint is `messages:live:newest
id:newest time` (it moves when a message is added, rewound or compacted), `modified` the
newest message time (else ended_at, else started_at). Sessions without messages are skipped.

Reading keeps what may reach the summariser (docs/design.md "Connectors"): user and assistant text (structured
content behind a `\\0json:` prefix keeps its text parts only) and one `tool` line per tool call
(`<name>: <first argument>`, preferring a pattern, query, URL or path; `terminal`/shell tools as
`Bash: <command>`).
Dropped: tool results (role `tool`), reasoning, `session_meta`/`system` rows, rewound rows
(`active = 0`), compaction summaries (`_compressed_summary` or the summary prefixes),
`<memory-context>` blocks, agent-written rows (`display_kind` hidden, model_switch,
auto_continue, notifications) and the old background-review harness turns. In-place compaction
marks the history `active = 0, compacted = 1`: that history is real work and is read; the
copies Hermes re-inserts after it (head, summary, tail) are skipped, as are the leading copies
a continuation or branch carries over from its parent (a "copy run", see `_Session`).
Warnings: `malformed_content`, `malformed_tool_calls`, `invalid_utf8`, `unknown_role:<role>`.

Shared helpers: read-only database access in `sqlite.py` (also used by the `opencode`
connector), the tool line in `tools.call_line`, the chain's root in `units.root_session`.
"""

import hashlib
import json
import logging
import re
from datetime import UTC, datetime
from pathlib import Path

from .base import Entry, Reading, Unit, UnitError
from .sqlite import InvalidText, columns, read_db
from .text import epoch_time, safe_text
from .tools import call_line
from .units import root_session

logger = logging.getLogger(__name__)

AGENT = "hermes"
DB_NAME = "state.db"
_JSON_PREFIXES = ("\x00json:", "\x01json:")   # docs/agent-formats.md's \0; some builds write \1 (same JSON after it)
_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
_DROPPED_ROLES = frozenset({"tool", "session_meta", "system"})
# Agent-written rows (markers, notifications, delivered results): never the person's words.
_AGENT_ROWS = frozenset({"hidden", "model_switch", "auto_continue", "internal_notification",
                         "async_delegation_complete"})
_SUMMARY_PREFIXES = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]:")
_SUMMARY_END = "--- END OF CONTEXT SUMMARY"
_MERGED_DELIMITER = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]"
_MERGED_HEADER = "[PRIOR CONTEXT — for reference only; not a new message]"
_MEMORY_CONTEXT = re.compile(r"<\s*memory-context\s*>.*?<\s*/\s*memory-context\s*>", re.DOTALL | re.IGNORECASE)
_MEMORY_NOTE = re.compile(r"\[System note: The following is recalled memory context, NOT new user input\.[^\]]*\]\s*")
_REVIEW_HARNESS = ("Review the conversation above and update the skill library",
                   "Review the conversation above and consider saving to memory")


class HermesConnector:
    """Reads Hermes Agent sessions from `path` (a `state.db`, or a Hermes home folder with
    `state.db` and `profiles/*/state.db`). Unknown keyword options are accepted and ignored."""

    type_name = AGENT

    def __init__(self, path, **options):
        self.root = Path(path)

    def discover(self):
        """Yield one `Unit` per session that has messages, newest first: one aggregate query per
        database. A database that cannot be read is skipped (and logged) while another one can
        be; raises `UnitError` when none can."""
        databases = _databases(self.root)
        units, failures = [], []
        for db in databases:
            try:
                units.extend(_discover(db))
            except UnitError as exc:
                failures.append(exc)
                logger.warning("hermes database unreadable path=%s error=%s", db, exc)
        if failures and len(failures) == len(databases):
            raise failures[0]
        yield from sorted(units, key=lambda unit: unit.modified, reverse=True)   # `preview` shows the newest

    def read(self, unit):
        """The unit's entries, hints and warnings; raises `UnitError` if the database cannot be read."""
        db = Path(unit.path)
        prefix = _id_prefix(db)
        session_id = unit.id[len(prefix):] if prefix and unit.id.startswith(prefix) else unit.id
        return read_db(db, lambda conn: _read_session(conn, session_id, unit.ref, _profile(db)))


# -- discovery

def _databases(root):
    if root.is_file():
        return [root]
    if not root.is_dir():
        return []
    found = [root / DB_NAME] if (root / DB_NAME).is_file() else []
    return found + sorted(p for p in root.glob(f"profiles/*/{DB_NAME}") if p.is_file())


def _profile(db):
    return db.parent.name if db.parent.parent.name == "profiles" else None


def _id_prefix(db):
    profile = _profile(db)
    return f"{profile}/" if profile else ""


def _discover(db):
    return read_db(db, lambda conn: list(_units(conn, db)))


def _units(conn, db):
    session_cols, message_cols = columns(conn, "sessions"), columns(conn, "messages")
    if "id" not in session_cols or "session_id" not in message_cols or "role" not in message_cols:
        raise UnitError(f"{db}: not a Hermes state database (no sessions/messages tables)")
    key = "id" if "id" in message_cols else "rowid"
    live = "active" if "active" in message_cols else "1"
    stamp = "timestamp" if "timestamp" in message_cols else "NULL"
    parent = "s.parent_session_id" if "parent_session_id" in session_cols else "NULL"
    started = "s.started_at" if "started_at" in session_cols else "NULL"
    ended = "s.ended_at" if "ended_at" in session_cols else "NULL"
    # One statement; per session it reads only the (session_id, active, timestamp) index.
    rows = conn.execute(
        f"SELECT s.id, {parent}, {started}, {ended}, m.n, m.live, m.last_id, m.last_ts FROM sessions s "
        f"LEFT JOIN (SELECT session_id, COUNT(*) AS n, SUM({live}) AS live, MAX({key}) AS last_id, "
        f"MAX({stamp}) AS last_ts FROM messages GROUP BY session_id) m ON m.session_id = s.id").fetchall()
    parents = {str(row[0]): row[1] for row in rows}
    prefix = _id_prefix(db)
    for session_id, _parent, started_at, ended_at, count, live_count, last_id, last_ts in rows:
        if not count:
            continue
        modified = epoch_time(last_ts) or epoch_time(ended_at) or epoch_time(started_at) or datetime.fromtimestamp(0, UTC)
        yield Unit(id=f"{prefix}{session_id}", ref=root_session(str(session_id), parents),
                   fingerprint=f"{count}:{live_count}:{last_id}:{last_ts!r}", modified=modified, path=str(db))


# -- reading

def _read_session(conn, session_id, ref, profile):
    session_cols, message_cols = columns(conn, "sessions"), columns(conn, "messages")
    wanted = [c for c in ("id", "source", "model", "parent_session_id", "cwd", "git_branch", "git_repo_root",
                          "title", "end_reason") if c in session_cols]
    row = conn.execute(f"SELECT {', '.join(wanted)} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise UnitError(f"session {session_id} is no longer in the database")
    meta = dict(zip(wanted, row, strict=True))
    reading = Reading(hints=_hints(meta, session_id, ref, profile))
    session = _Session(reading.warnings, copy_run=bool(meta.get("parent_session_id")))
    if meta.get("parent_session_id"):
        session.known.update(_parent_keys(conn, str(meta["parent_session_id"]), message_cols))
    order = "id" if "id" in message_cols else "rowid"
    fields = ["role"] + [c for c in _MESSAGE_FIELDS if c in message_cols]
    cursor = conn.execute(f"SELECT {', '.join(fields)} FROM messages WHERE session_id = ? AND {_visible(message_cols)} "
                          f"ORDER BY {order}", (session_id,))
    for values in cursor:
        session.add(dict(zip(fields, values, strict=True)))
    reading.entries = session.entries
    return reading


_MESSAGE_FIELDS = ("content", "tool_calls", "timestamp", "active", "compacted", "_compressed_summary", "display_kind")


def _visible(message_cols):
    """Rows still part of the conversation: active ones, and history archived by in-place
    compaction (`compacted = 1`); rewound rows (`active = 0, compacted = 0`) are not."""
    if "active" not in message_cols:
        return "1"
    if "compacted" in message_cols:
        return "(active = 1 OR compacted = 1)"
    return "active = 1"


def _parent_keys(conn, parent_id, message_cols):
    """Digests of the parent's dialogue rows, to recognise what a continuation copied over."""
    calls = "tool_calls" if "tool_calls" in message_cols else "NULL"
    cursor = conn.execute(f"SELECT role, content, {calls} FROM messages WHERE session_id = ? "
                          f"AND role IN ('user', 'assistant') AND {_visible(message_cols)}", (parent_id,))
    return {_digest(role, content, tool_calls) for role, content, tool_calls in cursor}


def _digest(role, content, tool_calls):
    blob = json.dumps([role, _plain(content), _plain(tool_calls)], ensure_ascii=False)
    return hashlib.sha1(blob.encode("utf-8", "surrogatepass")).digest()


def _plain(value):
    return value.hex() if isinstance(value, bytes) else value


def _hints(meta, session_id, ref, profile):
    hints = {"agent": AGENT, "session_id": session_id}
    for column, key in (("cwd", "cwd"), ("git_repo_root", "git_root"), ("git_branch", "git_branch"),
                        ("title", "title_hint"), ("model", "model"), ("source", "session_source"),
                        ("parent_session_id", "parent_session_id")):
        value = meta.get(column)
        if isinstance(value, str) and value.strip():
            hints[key] = value.strip()
    if ref != session_id:
        hints["root_session_id"] = ref
    if profile:
        hints["profile"] = profile
    return hints


class _Session:
    """The state of one read.

    A "copy run" is a stretch of rows that repeat earlier dialogue: the start of a child
    session (its parent's protected head, the summary and tail a compression carries over, a
    branch's seed) and the live rows Hermes re-inserts after history archived by in-place
    compaction. In a run, rows whose (role, content, tool calls) were already seen, compaction
    summaries and tool rows are skipped; the first new row ends the run. Outside a run a repeated
    message is kept: people do say "continue" twice.
    """

    def __init__(self, warnings, *, copy_run):
        self.warnings = warnings
        self.entries = []
        self.known = set()            # digests of dialogue rows seen (and of the parent's)
        self.copy_run = copy_run
        self.in_archive = False       # the previous row was archived by in-place compaction
        self.skip_reply = False       # the previous row was a background-review harness prompt

    def add(self, row):
        role = row.get("role")
        archived = not row.get("active", 1) and bool(row.get("compacted"))
        if self.in_archive and not archived:
            self.copy_run = True      # Hermes re-inserts head, summary and tail after the archive
        self.in_archive = archived
        if role in _DROPPED_ROLES:
            return
        if role not in ("user", "assistant"):
            self.warnings[f"unknown_role:{str(role)[:40]}"] += 1
            return
        if isinstance(row.get("content"), InvalidText) or isinstance(row.get("tool_calls"), InvalidText):
            self.warnings["invalid_utf8"] += 1
            return
        digest = _digest(role, row.get("content"), row.get("tool_calls"))
        repeated = digest in self.known
        self.known.add(digest)
        if row.get("display_kind") in _AGENT_ROWS:
            return
        time = epoch_time(row.get("timestamp"))
        text = self._text(row.get("content"))
        if text is not None and _is_summary(text, row):
            self._summary(role, text, time)
            return
        if self.copy_run and repeated:
            return
        self.copy_run = False
        if role == "user":
            self._user(text, time)
        else:
            self._assistant(text, row.get("tool_calls"), time)

    def _text(self, content):
        """The text of a content value: a string, or the text parts of `\\0json:` content."""
        if content is None:
            return ""
        if isinstance(content, bytes) or not isinstance(content, str):
            self.warnings["malformed_content"] += 1
            return None
        if not content.startswith(_JSON_PREFIXES):
            return content
        try:
            parsed = json.loads(content[len(_JSON_PREFIXES[0]):])
        except (ValueError, RecursionError):
            self.warnings["malformed_content"] += 1
            return None
        return _parts_text(parsed)

    def _summary(self, role, text, time):
        """A compaction summary is dropped; a message riding on the carrier (after the summary's
        end marker, or merged in front of it) is kept unless it repeats one already seen."""
        remainder = _carrier_remainder(text)
        if remainder and _digest(role, remainder, None) not in self.known:
            self.known.add(_digest(role, remainder, None))
            if role == "user":
                self._user(remainder, time)
            else:
                self._assistant(remainder, None, time)
        self.copy_run = True          # the protected tail follows the summary

    def _user(self, text, time):
        if not text:
            return
        if text.lstrip().startswith(_REVIEW_HARNESS):
            self.skip_reply = True
            return
        self.skip_reply = False
        self.known.add(_digest("user", text, None))
        text = _MEMORY_NOTE.sub("", _MEMORY_CONTEXT.sub("", text)).strip()
        if text:
            self.entries.append(Entry("user", safe_text(text), time))

    def _assistant(self, text, tool_calls, time):
        if self.skip_reply:
            self.skip_reply = False
            return
        if text and text.strip():
            self.entries.append(Entry("assistant", safe_text(text.strip()), time))
        for line in self._calls(tool_calls):
            self.entries.append(Entry("tool", safe_text(line), time))

    def _calls(self, tool_calls):
        if tool_calls in (None, "", "[]"):
            return []
        try:
            calls = json.loads(tool_calls) if isinstance(tool_calls, str) else None
        except (ValueError, RecursionError):
            calls = None
        if not isinstance(calls, list):
            self.warnings["malformed_tool_calls"] += 1
            return []
        lines = []
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                self.warnings["malformed_tool_calls"] += 1
                continue
            lines.append(_call_text(function.get("name"), function.get("arguments")))
        return lines


def _parts_text(parsed):
    if isinstance(parsed, str):
        return parsed
    if isinstance(parsed, dict):
        parsed = [parsed]
    if not isinstance(parsed, list):
        return ""
    texts = []
    for part in parsed:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type") in _TEXT_PARTS and isinstance(part.get("text"), str):
            texts.append(part["text"])
        # images (image_url, base64 sources), audio and files carry no text for the library
    return "\n\n".join(text for text in texts if text.strip())


def _is_summary(text, row):
    return bool(row.get("_compressed_summary")) or text.lstrip().startswith(_SUMMARY_PREFIXES) \
        or _MERGED_DELIMITER in text


def _carrier_remainder(text):
    """The non-summary text of a compaction carrier: what follows the summary's end marker,
    or the prior message merged in front of the summary; "" when there is none."""
    if _MERGED_DELIMITER in text:
        prior = text.split(_MERGED_DELIMITER, 1)[0].strip()
        if prior.startswith(_MERGED_HEADER):
            prior = prior[len(_MERGED_HEADER):].strip()
        return prior
    if _SUMMARY_END in text:
        after = text.split(_SUMMARY_END, 1)[1]
        return after.split("\n", 1)[1].strip() if "\n" in after else ""
    return ""


def _call_text(name, arguments):
    """`arguments` is a JSON string (OpenAI shape) or, from some writers, an object."""
    raw = arguments if isinstance(arguments, str) else ""
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except (ValueError, RecursionError):
        parsed = None
    return call_line(name, parsed if isinstance(parsed, dict) else {}, raw=raw)
