"""The `gemini_cli` connector type: a folder laid out like `~/.gemini/tmp`.

Units. Every `<project>/chats/session-<ts>-<id8>.jsonl` is one unit, and so is every legacy
`session-*.json` (Gemini CLI wrote one whole JSON document per session before it switched to
JSON Lines). Its id and original_ref are the session id, peeked from the file's first lines
(the file name holds only 8 of its characters), else the file stem. Resuming a legacy session
writes a `.jsonl` copy beside the old `.json`; both carry the same session id, so they are one
unit read from the newer file. A subagent's file `chats/<parent session id>/<id>.jsonl` is a
unit of its own with id `<parent>/<id>` and the parent's session id as original_ref, as for
Claude Code. Nothing else under the folder is read (`logs.json`, `checkpoint-*.json`,
`tool-outputs/`).

Lines. The JSONL file is an append-only log that Gemini CLI replays on resume, and it is read
the same way: a metadata line {sessionId, projectHash, startTime, …}; message lines (a
message written again with the same `id` replaces the earlier copy in place: that is how tool
calls and token counts are added after the fact); `$set` lines update the metadata; a
`$rewindTo` line drops the message it names and everything after it (the user rewound). A
`$set` that carries `messages` (Gemini CLI writes one whenever it rewrites its in-memory
history: start-up, compression, output masking) updates the messages it names by id and
nothing else: ids it introduces are synthetic turns (compression summaries, bootstrapped
context) and messages it leaves out were compressed away, not undone, so they stay.

Reading keeps what may reach the summariser (docs/design.md "Connectors"): user text (`displayContent`, what the
person typed, when present; the `--- Content from referenced files ---` expansion of
`@path` and `<session_context>` preambles are removed), the model's text without thoughts,
and one `tool` line per tool call, named like the other agents' (`run_shell_command` →
`Bash: <command>`, `read_file` → `Read: <path>`, `replace` → `Edit: <path>`, …). Tool
results, thoughts, token counts, images and `info`/`error`/`warning` notices are dropped.

Hints. The file names the project only by `projectHash` (sha256 of its root path), which is
given as `project_hash`. `cwd` is given only when one of the session's `directories` hashes to
exactly that value: the path is then known, not guessed. `summary` (Gemini's one-line title
of the session) is the title hint; the model is the last message's `model`.
"""

import codecs
import hashlib
import json
import re
from pathlib import Path

from .base import Entry, Reading, UnitError
from .files import MAX_LINE_BYTES, find_files, iter_records, peek_field
from .text import parse_time, safe_text
from .tools import command_field, first_field, mapped_tool_line
from .units import file_unit, newest_per_id

AGENT = "gemini_cli"
_SESSION_PREFIX = "session-"
_CHATS = "chats"
_NOTICES = frozenset({"info", "error", "warning"})   # CLI messages shown to the user, not dialogue

# What the CLI wraps around a prompt: the files an `@path` mention pulled in, and the
# environment block newer versions record as the first user turn.
_REFERENCED_FILES = re.compile(r"\n*--- Content from referenced files ---.*?(?:--- End of content ---|\Z)",
                               re.DOTALL)
_SESSION_CONTEXT = re.compile(r"<session_context>.*?(?:</session_context>|\Z)", re.DOTALL)
_CONTEXT_SETUP = "This is the Gemini CLI. We are setting up the context for our chat."
_URL = re.compile(r"https?://\S+")


class GeminiCliConnector:
    """Reads Gemini CLI sessions under `path` (`~/.gemini/tmp`, one project folder, its
    `chats` folder, or a single session file). Unknown keyword options are accepted and ignored."""

    type_name = AGENT

    def __init__(self, path, **options):
        self.root = Path(path)

    def discover(self):
        """Yield one `Unit` per session file; each is stat'ed and its first lines peeked at."""
        given_file = self.root.is_file()
        paths = find_files(self.root, lambda name: name.endswith((".jsonl", ".json")), skip_dirs={"tool-outputs"})
        yield from newest_per_id(_unit_for(path) for path in paths if given_file or _is_session_file(path))

    def read(self, unit):
        """The unit's entries, hints and warnings; raises `UnitError` if the file cannot be read."""
        path = Path(unit.path)
        reading = Reading()
        session = _Session()
        if path.suffix == ".json":
            for key, value in _legacy_records(path, reading.warnings):
                if key == "messages":
                    session.add_message(value, reading.warnings)
                else:
                    session.meta[key] = value
        else:
            for record in iter_records(path, reading.warnings):
                session.add(record, reading.warnings)
        reading.entries = session.entries(reading.warnings)
        reading.hints = session.hints()
        if _is_subagent(path):
            reading.hints["parent_session_id"] = path.parent.name
        return reading


# -- discovery

def _is_subagent(path):
    return path.parent.parent.name == _CHATS and not path.name.startswith(_SESSION_PREFIX)


def _is_session_file(path):
    if path.name.startswith(_SESSION_PREFIX):
        return True
    return path.suffix == ".jsonl" and _is_subagent(path)


def _unit_for(path):
    if _is_subagent(path):
        parent = path.parent.name
        return file_unit(path, f"{parent}/{path.stem}", parent)
    session_id = peek_field(path, "sessionId") or path.stem
    return file_unit(path, session_id, session_id)


# -- reading

class _Session:
    """The replayed log: messages by id in order (as Gemini CLI holds them) and the metadata."""

    def __init__(self):
        self.messages = {}       # id → message record; replacing a key keeps its position
        self.meta = {}
        self.synthetic = 0       # messages without an id (legacy files)

    def add(self, record, warnings):
        if isinstance(record.get("$rewindTo"), str):
            self._rewind(record["$rewindTo"], warnings)
        elif isinstance(record.get("id"), str):
            self.messages[record["id"]] = record
        elif "$set" in record:
            if isinstance(record["$set"], dict):
                self._set(record["$set"])
            else:
                warnings["malformed_line"] += 1
        elif isinstance(record.get("sessionId"), str):
            self.meta.update(record)     # the metadata line
        else:
            warnings["unknown_line"] += 1

    def add_message(self, message, warnings):
        """A message from a legacy file; they are final (rewinds rewrote the whole file)."""
        if not isinstance(message, dict):
            warnings["malformed_line"] += 1
            return
        key = message.get("id")
        if not isinstance(key, str):
            self.synthetic += 1
            key = f"#{self.synthetic}"
        self.messages[key] = message

    def _rewind(self, target, warnings):
        if target not in self.messages:
            warnings["unknown_rewind_target"] += 1   # a lost line; keep what we have
            return
        ids = list(self.messages)
        for key in ids[ids.index(target):]:
            del self.messages[key]

    def _set(self, update):
        """Metadata fields are replaced; a `messages` list only updates messages already known."""
        for key, value in update.items():
            if key != "messages":
                self.meta[key] = value
                continue
            for message in value if isinstance(value, list) else ():
                message_id = message.get("id") if isinstance(message, dict) else None
                if message_id in self.messages:
                    self.messages[message_id] = {**self.messages[message_id], **message}

    def entries(self, warnings):
        entries = []
        for message in self.messages.values():
            kind = message.get("type")
            time = parse_time(message.get("timestamp"))
            if kind == "user":
                text = _user_text(message)
                if text:
                    entries.append(Entry("user", text, time))
            elif kind == "gemini":
                text = _parts_text(message.get("content")).strip()
                if text:
                    entries.append(Entry("assistant", safe_text(text), time))
                calls = message.get("toolCalls")
                for call in calls if isinstance(calls, list) else ():
                    if isinstance(call, dict):
                        line = gemini_tool_line(call.get("name"), call.get("args"))
                        entries.append(Entry("tool", safe_text(line), parse_time(call.get("timestamp")) or time))
            elif kind not in _NOTICES:
                warnings[f"unknown_type:{str(kind)[:40]}"] += 1
        return entries

    def hints(self):
        meta = self.meta
        hints = {"agent": AGENT}
        for key, source in (("session_id", "sessionId"), ("project_hash", "projectHash")):
            if isinstance(meta.get(source), str) and meta[source]:
                hints[key] = meta[source]
        models = [message.get("model") for message in self.messages.values() if message.get("type") == "gemini"]
        model = next((name for name in reversed(models) if isinstance(name, str) and name), None)
        if model:
            hints["model"] = model
        cwd = _project_root(meta.get("directories"), meta.get("projectHash"))
        if cwd:
            hints["cwd"] = cwd
        if isinstance(meta.get("summary"), str) and meta["summary"].strip():
            hints["title_hint"] = meta["summary"].strip()
        return hints


def _project_root(directories, project_hash):
    """The directory whose sha256 is the session's project hash, if the session lists it."""
    if not isinstance(directories, list) or not isinstance(project_hash, str):
        return None
    for directory in directories:
        if isinstance(directory, str) and hashlib.sha256(directory.encode()).hexdigest() == project_hash:
            return directory
    return None


def _parts_text(content):
    """The text of a `PartListUnion` (a string, a part, or a list of them), without thought
    parts, function calls/responses and inline data. Parts are joined as Gemini joins them."""
    if isinstance(content, str):
        return content
    parts = [content] if isinstance(content, dict) else content if isinstance(content, list) else ()
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and not part.get("thought") and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "".join(texts)


def _user_text(message):
    text = _parts_text(message.get("displayContent"))
    if not text.strip():
        text = _parts_text(message.get("content"))
    text = _SESSION_CONTEXT.sub("", _REFERENCED_FILES.sub("", text)).strip()
    if text.startswith(_CONTEXT_SETUP):
        return None
    return safe_text(text) or None


# -- tool lines: Gemini CLI's tools under Claude Code's names where one exists

def _paths(arguments):
    for name in ("include", "paths", "file_paths"):
        value = arguments.get(name)
        if isinstance(value, list):
            return ", ".join(str(item) for item in value if isinstance(item, str))
        if isinstance(value, str):
            return value
    return ""


def _fetched(arguments):
    """web_fetch takes a prompt that contains the URLs; show the first URL."""
    if isinstance(arguments.get("url"), str):
        return arguments["url"]
    match = _URL.search(arguments.get("prompt") or "") if isinstance(arguments.get("prompt"), str) else None
    return match.group(0) if match else arguments.get("prompt", "")


def _todos(arguments):
    todos = arguments.get("todos")
    return f"{len(todos)} items" if isinstance(todos, list) else ""


_PATH = first_field("file_path", "absolute_path", "path")
_GEMINI_TOOLS = {
    "run_shell_command": ("Bash", command_field("command")),
    "read_file": ("Read", _PATH),
    "read_many_files": ("Read", _paths),
    "write_file": ("Write", _PATH),
    "replace": ("Edit", _PATH),
    "edit": ("Edit", _PATH),
    "list_directory": ("LS", first_field("dir_path", "path", "absolute_path")),
    "glob": ("Glob", first_field("pattern")),
    "search_file_content": ("Grep", first_field("pattern")),
    "grep_search": ("Grep", first_field("pattern")),
    "google_web_search": ("WebSearch", first_field("query")),
    "web_fetch": ("WebFetch", _fetched),
    "write_todos": ("write_todos", _todos),
}


def gemini_tool_line(name, arguments):
    """`Bash: pytest -q`, `Edit: src/app.py`, `WebFetch: https://…`, `save_memory: <fact>`."""
    return mapped_tool_line(name, arguments, _GEMINI_TOOLS)


# -- legacy whole-file sessions, streamed

_END = object()       # the document ended inside a value
_SKIPPED = object()   # a value was skipped (and counted)
_STRUCTURE = re.compile(r'["{}\[\]]')
_IN_STRING = re.compile(r'["\\]')
_SCALAR = re.compile(r"[^,:\]}\s]*")
_SPACE = re.compile(r"\s*")
_BAD_BYTES = re.compile("[\udc80-\udcff]")   # invalid UTF-8, kept as surrogates while scanning
_CHUNK_BYTES = 1024 * 1024


def _legacy_records(path, warnings, *, max_value_chars=MAX_LINE_BYTES, chunk_bytes=_CHUNK_BYTES):
    """Yield `(key, value)` for each top-level field of a legacy session document and
    `("messages", message)` for each of its messages; a document that is a bare array is
    all messages. At most one value (up to `max_value_chars`) is held at a time; a longer
    one is skipped and counted like an oversized line. Raises `UnitError` when the file
    cannot be opened or read."""
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise UnitError(f"{path}: cannot open ({exc.strerror or exc})") from exc
    with handle:
        try:
            yield from _document(_JsonStream(handle, warnings, max_value_chars, chunk_bytes), warnings)
        except OSError as exc:
            raise UnitError(f"{path}: read failed ({exc.strerror or exc})") from exc


def _document(stream, warnings):
    start = stream.peek()
    if start == "[":
        stream.pos += 1
        yield from _messages(stream, warnings)
        return
    if start != "{":
        warnings["malformed_file"] += 1
        return
    stream.pos += 1
    while True:
        char = stream.peek()
        if char is None:
            warnings["truncated_file"] += 1
            return
        if char == "}":
            return
        if char == ",":
            stream.pos += 1
            continue
        key = stream.value()
        if not isinstance(key, str) or stream.peek() != ":":
            if key is not _END:
                warnings["malformed_file"] += 1   # the structure is lost; keep what was read
            return
        stream.pos += 1
        if key == "messages" and stream.peek() == "[":
            stream.pos += 1
            if not (yield from _messages(stream, warnings)):
                return
            continue
        value = stream.value()
        if value is _END:
            return
        if value is not _SKIPPED:
            yield key, value


def _messages(stream, warnings):
    """Yield the elements of an array whose `[` was consumed; False if the document ended."""
    while True:
        char = stream.peek()
        if char is None:
            warnings["truncated_file"] += 1
            return False
        if char == "]":
            stream.pos += 1
            return True
        if char == ",":
            stream.pos += 1
            continue
        value = stream.value()
        if value is _END:
            return False
        if value is not _SKIPPED:
            yield "messages", value


class _JsonStream:
    """One JSON document read a value at a time. The buffer holds the value being read and
    one chunk; `pos` is where reading continues."""

    def __init__(self, handle, warnings, max_chars, chunk_bytes):
        self.handle, self.warnings = handle, warnings
        self.max_chars, self.chunk_bytes = max_chars, chunk_bytes
        self.decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self.buf, self.pos, self.eof = "", 0, False

    def _more(self):
        """Drop what precedes `pos`, append the next chunk; the number of characters dropped,
        or None at the end of the file."""
        if self.eof:
            return None
        data = self.handle.read(self.chunk_bytes)
        self.eof = not data
        shift = self.pos
        self.buf = self.buf[shift:] + self.decoder.decode(data, final=self.eof)
        self.pos = 0
        return shift

    def peek(self):
        """The next non-blank character (not consumed), or None at the end of the file."""
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if self._more() is None:
                return None

    def value(self):
        """The next value, parsed; `_SKIPPED` when it was too long, not JSON or not UTF-8
        (counted); `_END` when the file ends inside it (counted)."""
        if self.peek() is None:
            self.warnings["truncated_file"] += 1
            return _END
        end = self._scan()
        if end is None:
            self.warnings["truncated_file"] += 1
            return _END
        if end is _SKIPPED:
            self.warnings["oversized_line"] += 1
            return _SKIPPED
        text, self.pos = self.buf[self.pos:end], end
        if _BAD_BYTES.search(text):
            self.warnings["invalid_utf8"] += 1
            return _SKIPPED
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            self.warnings["malformed_line"] += 1
            return _SKIPPED

    def _scan(self):
        """The end of the value at `pos` (reading more as needed); `_SKIPPED` after passing
        over a value longer than `max_chars` (then `pos` is after it); None at the end of file."""
        first = self.buf[self.pos]
        if first not in '{["':
            return self._scan_scalar()
        in_string = first == '"'
        depth = 0 if in_string else 1
        index, oversized = self.pos + 1, False
        while True:
            match = (_IN_STRING if in_string else _STRUCTURE).search(self.buf, index)
            if match is None or (match.group() == "\\" and match.end() == len(self.buf)):
                # Read on; an escape cut off by the chunk boundary is scanned again whole.
                index = len(self.buf) if match is None else match.start()
                oversized = oversized or index - self.pos > self.max_chars
                if oversized:
                    self.pos = index   # forget what was scanned; only the scanner state matters
                shift = self._more()
                if shift is None:
                    return None
                index -= shift
                continue
            char, index = match.group(), match.end()
            if in_string:
                if char == "\\":
                    index += 1         # the escaped character, whatever it is
                    continue
                in_string = False
                if depth == 0:
                    break
            elif char == '"':
                in_string = True
            elif char in "{[":
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    break
        if oversized:
            self.pos = index
            return _SKIPPED
        return index

    def _scan_scalar(self):
        while True:
            end = _SCALAR.match(self.buf, self.pos).end()
            if end < len(self.buf) or self.eof:
                return max(end, self.pos + 1)   # always consume something, even a stray character
            shift = self._more()
            if shift is None:
                return max(end, self.pos + 1)
