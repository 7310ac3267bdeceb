"""Finding a source's files and reading them line by line within bounds.

This module owns the bounded, streaming reading every file-based connector shares: a line
longer than the bound is drained in chunks and counted, never held whole; invalid UTF-8 and
malformed JSON lines are counted in the reading's warnings, never raised. It reads JSON Lines
transcripts (`iter_records`, `read_records`) and UTF-8 text files (`iter_lines`), peeks at one
value in a file's first lines (`peek_field`) and lists a folder's files (`find_files`). Only an
unreadable file as a whole raises `UnitError`. No Django here.
"""

import json
import os
import re
from collections import Counter
from pathlib import Path

from .base import Reading, UnitError

# Lines longer than this are skipped unparsed. Pasted screenshots make 0.5–1 MB lines whose
# text must survive, so the cap sits well above them.
MAX_LINE_BYTES = 4 * 1024 * 1024
# The same cap for Markdown text: no line a person writes comes near it; a pasted blob does.
TEXT_LINE_BYTES = 256 * 1024
# How much of an oversized line is read at a time while it is being skipped.
_SKIP_CHUNK = 1024 * 1024


def bounded_lines(handle, warnings, limit):
    """Raw lines of at most `limit` bytes from the binary `handle`; longer ones are drained in
    chunks and counted as `oversized_line`."""
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


# -- JSON Lines

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


def read_records(path, builder):
    """Feed every record of the JSONL file at `path` to `builder.add(record, warnings)` and
    return the Reading made of `builder.entries()` and `builder.hints()`. Raises `UnitError`
    as `iter_records` does."""
    reading = Reading()
    for record in iter_records(path, reading.warnings):
        builder.add(record, reading.warnings)
    reading.entries = builder.entries()
    reading.hints = builder.hints()
    return reading


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


# -- text files

def iter_lines(path, warnings, *, max_line_bytes=TEXT_LINE_BYTES):
    """Yield each line of the UTF-8 text file at `path`, in order, without its line ending
    (a leading byte-order mark is dropped).

    Skipped and counted in `warnings` (a Counter): `oversized_line` (longer than
    `max_line_bytes`; never read whole) and `invalid_utf8`. Raises `UnitError` when the file
    cannot be opened or reading fails part-way.
    """
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise UnitError(f"{path}: cannot open ({exc.strerror or exc})") from exc
    with handle:
        first = True
        try:
            for raw in bounded_lines(handle, warnings, max_line_bytes):
                if first:
                    raw, first = raw.removeprefix(b"\xef\xbb\xbf"), False
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    warnings["invalid_utf8"] += 1
                    continue
                yield text.rstrip("\r\n")
        except OSError as exc:
            raise UnitError(f"{path}: read failed ({exc.strerror or exc})") from exc


# -- finding files

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
