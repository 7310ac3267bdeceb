"""Making `Unit`s: from a file and one stat, one per session when a session exists twice, and
the original_ref of a session that continues another one. Pure functions over paths and
ids; no Django here.
"""

import re
from datetime import UTC, datetime
from pathlib import Path

from .base import Unit


def file_unit(path, unit_id, ref, *, single_document=False):
    """A `Unit` for a file from one stat: fingerprint `size:mtime_ns`. None if it vanished.
    `single_document`: a task or a note, keyed `<source>:<unit>` (docs/design.md "Items"), not a session."""
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    return Unit(id=unit_id, ref=ref, fingerprint=f"{stat.st_size}:{stat.st_mtime_ns}",
                modified=datetime.fromtimestamp(stat.st_mtime, tz=UTC), path=str(path),
                single_document=single_document)


_UUID_AT_END = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.IGNORECASE)


def uuid_named_unit(path):
    """A unit for a file whose name ends with its session's uuid (`rollout-<ts>-<uuid>.jsonl`,
    `<ts>_<uuid>.jsonl`): id and ref are that uuid, known from the name alone; else the stem.
    None if the file vanished."""
    match = _UUID_AT_END.search(path.stem)
    session_id = match.group(1).lower() if match else path.stem
    return file_unit(path, session_id, session_id)


def newest_per_id(units):
    """Keep one unit per id (the most recently modified), sorted by path; `None`s are
    dropped. The same session can exist twice, e.g. a Codex rollout both in `sessions/` and
    `archived_sessions/`."""
    best = {}
    for unit in units:
        if unit is None:
            continue
        kept = best.get(unit.id)
        if kept is None or unit.modified > kept.modified:
            best[unit.id] = unit
    return sorted(best.values(), key=lambda unit: unit.path or "")


def root_session(session_id, parents):
    """The first session of a `parent` chain (`parents`: id → parent id or None): the
    original_ref shared by a session and its continuations or subagents (Hermes, OpenCode).
    A parent that no longer exists still names the chain's origin; a cycle stops where it
    closes."""
    seen = {session_id}
    current = session_id
    while True:
        parent = parents.get(current)
        if parent is None or str(parent) in seen or str(parent) == "":
            return current
        current = str(parent)
        seen.add(current)
