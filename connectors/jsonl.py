"""Helpers shared by the connectors that read agent transcripts stored as JSON Lines.

This module owns the bounded, line-by-line reading of a transcript file (a huge line is
skipped without ever being held whole, bad lines are counted, never raised), the
file-to-`Unit` step of discovery, timestamp parsing, and the small text helpers that turn a
tool call into one short line. No Django here.
"""

import json
import os
import re
import shlex
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from .base import Unit, UnitError

# Lines longer than this are skipped unparsed. Pasted screenshots make 0.5–1 MB lines whose
# text must survive, so the cap sits well above them.
MAX_LINE_BYTES = 4 * 1024 * 1024
# How much of an oversized line is read at a time while it is being skipped.
_SKIP_CHUNK = 1024 * 1024
TOOL_DETAIL_CHARS = 300


def iter_records(path, warnings, *, max_line_bytes=MAX_LINE_BYTES):
    """Yield each line of the JSONL file at `path` that parses as a JSON object, in order.

    Skipped and counted in `warnings` (a Counter): `oversized_line` (longer than
    `max_line_bytes`; never read whole), `invalid_utf8`, `malformed_line` (not JSON, or JSON
    that is not an object). Blank lines are ignored silently. Raises `UnitError` when the
    file cannot be opened or reading it fails part-way (vanished disk, permissions).
    """
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise UnitError(f"{path}: cannot open ({exc.strerror or exc})") from exc
    with handle:
        try:
            yield from _records(handle, warnings, max_line_bytes)
        except OSError as exc:
            raise UnitError(f"{path}: read failed ({exc.strerror or exc})") from exc


def _records(handle, warnings, max_line_bytes):
    for raw in bounded_lines(handle, warnings, max_line_bytes):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            warnings["invalid_utf8"] += 1
            continue
        try:
            record = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or absurdly deep nesting
            warnings["malformed_line"] += 1
            continue
        if not isinstance(record, dict):
            warnings["malformed_line"] += 1
            continue
        yield record


def bounded_lines(handle, warnings, limit):
    """Raw lines of at most `limit` bytes; longer ones are drained in chunks and counted."""
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            warnings["oversized_line"] += 1
            while line and not line.endswith(b"\n"):
                line = handle.readline(_SKIP_CHUNK)
            continue
        yield line


def peek_field(path, field, *, max_lines=20, max_line_bytes=256 * 1024):
    """The first string value of `"field":"…"` in the file's first lines, without parsing JSON.

    For the rare discovery step that needs one value from inside a file (the parent
    session of an old-style subagent file); None when absent or unreadable.
    """
    pattern = re.compile(rb'"' + re.escape(field.encode()) + rb'"\s*:\s*"([^"\\]+)"')
    try:
        with open(path, "rb") as handle:
            # Warnings are dropped here: read() meets the same lines and counts them.
            for count, line in enumerate(bounded_lines(handle, Counter(), max_line_bytes)):
                match = pattern.search(line)
                if match:
                    return match.group(1).decode("utf-8", "replace")
                if count + 1 >= max_lines:
                    return None
    except OSError:
        return None
    return None


def find_files(root, matches, *, skip_dirs=()):
    """Paths under `root` (recursively, not following symlinked folders) whose file name
    satisfies `matches`; `root` itself when it is a file. Sorted, so discovery is stable."""
    root = Path(root)
    if root.is_file():
        return [root]
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [name for name in dirs if name not in skip_dirs]
        found.extend(Path(folder) / name for name in files if matches(name))
    return sorted(found)


def file_unit(path, unit_id, ref):
    """A `Unit` for a file from one stat: fingerprint `size:mtime_ns`. None if it vanished."""
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    return Unit(id=unit_id, ref=ref, fingerprint=f"{stat.st_size}:{stat.st_mtime_ns}",
                modified=datetime.fromtimestamp(stat.st_mtime, tz=UTC), path=str(path))


def newest_per_id(units):
    """Keep one unit per id (the most recently modified): the same session can exist twice,
    e.g. a Codex rollout both in `sessions/` and `archived_sessions/`."""
    best = {}
    for unit in units:
        if unit is None:
            continue
        kept = best.get(unit.id)
        if kept is None or unit.modified > kept.modified:
            best[unit.id] = unit
    return sorted(best.values(), key=lambda unit: unit.path or "")


def parse_time(value):
    """An ISO 8601 string as an aware UTC datetime; naive means UTC; None when unusable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def safe_text(text):
    """`text` encodable as UTF-8: JSON may carry lone surrogates (a string cut mid-emoji),
    which would break hashing and storage later; they become U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def one_line(text, limit=TOOL_DETAIL_CHARS):
    """The first non-blank line of `text`, trimmed to `limit` characters (with an ellipsis)."""
    if not isinstance(text, str):
        return ""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def tool_line(name, detail=""):
    """`Name: detail`, or just `Name` when there is no detail."""
    detail = one_line(detail) if isinstance(detail, str) else ""
    return f"{name}: {detail}" if detail else str(name)


def first_argument(arguments):
    """A short rendering of a tool's first argument, for tools without a dedicated rule:
    a string as its first line, anything else as compact JSON."""
    if not isinstance(arguments, dict) or not arguments:
        return ""
    value = next(iter(arguments.values()))
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return ""


_SHELLS = {"bash", "sh", "zsh", "dash", "fish", "ksh"}
_POWERSHELLS = {"powershell", "powershell.exe", "pwsh", "pwsh.exe"}


def shell_command(command):
    """The command a person would have typed: `["bash", "-lc", "git status"]` → `git status`;
    other argument lists are shell-joined; a string is returned as is."""
    if isinstance(command, str):
        return command
    if not isinstance(command, list) or not all(isinstance(part, str) for part in command):
        return ""
    if len(command) >= 3:
        program = os.path.basename(command[0]).lower()
        flag = command[-2]
        if program in _SHELLS and flag.startswith("-") and "c" in flag:
            return command[-1]
        if program in _POWERSHELLS and flag.lower() in ("-command", "-c"):
            return command[-1]
    return shlex.join(command)


_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$", re.MULTILINE)


def patch_paths(patch):
    """The files an `apply_patch` envelope touches, in order, without repeats."""
    if not isinstance(patch, str):
        return []
    return list(dict.fromkeys(_PATCH_FILE.findall(patch)))


def apply_patch_line(patch):
    paths = patch_paths(patch)
    return tool_line("apply_patch", ", ".join(paths))


_UUID_AT_END = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.IGNORECASE)


def uuid_named_unit(path):
    """A unit for a file whose name ends with its session's uuid (`rollout-<ts>-<uuid>.jsonl`,
    `<ts>_<uuid>.jsonl`): id and ref are that uuid, known from the name alone; else the stem."""
    match = _UUID_AT_END.search(path.stem)
    session_id = match.group(1).lower() if match else path.stem
    return file_unit(path, session_id, session_id)


def read_records(path, builder):
    """Feed every record of the JSONL file at `path` to `builder.add(record, warnings)` and
    return the Reading made of `builder.entries()` and `builder.hints()`."""
    from .base import Reading

    reading = Reading()
    for record in iter_records(path, reading.warnings):
        builder.add(record, reading.warnings)
    reading.entries = builder.entries()
    reading.hints = builder.hints()
    return reading
