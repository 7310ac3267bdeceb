"""The connector contract (`Connector`) and what every connector hands the pipeline: units,
entries and hints as plain dataclasses.

A connector type is a class that satisfies `Connector`: built from its configuration, it
`discover()`s units cheaply and `read()`s one unit into a `Reading`. `finish_blocks()` then
applies the per-connector prompt options and numbers the blocks, the same way for every
connector. Connectors are plain Python: no Django here or in any connector module.
"""

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

ROLES = ("user", "assistant", "tool", "system")


class UnitError(Exception):
    """The unit cannot be read at all; the run report records it and the cursor stays."""


@dataclass(frozen=True)
class Unit:
    """One thing a connector found at its source (a session, an email thread, a file)."""

    id: str                 # stable id, unique within the connector (a session id); keys are <source>:<id>#<n>
    ref: str                # original_ref: points back to the unit (session id, file path)
    fingerprint: str        # changes when the content may have changed; the cursor stores it
    modified: datetime      # newest activity known without reading (file mtime), aware UTC
    path: str | None = None
    # One document (an email thread), not a session: its item key is `<source>:<id>` rather
    # than `<source>:<id>#0` (docs/design.md "Items"). Only the segments after the first of a document too
    # long for one segment carry `#<first block>`.
    single_document: bool = False
    # Known to be over (an uploaded session whose agent said it ended): nothing more will be
    # appended, so it does not wait `settle_minutes` (docs/design.md "Connectors": settling is for units that may
    # still grow).
    finished: bool = False


@dataclass(frozen=True)
class Entry:
    """A block before numbering."""

    role: str               # one of ROLES
    text: str
    time: datetime | None   # aware UTC, or None when the source has no time for it


@dataclass(frozen=True)
class Block:
    index: int
    role: str
    text: str
    time: datetime | None


@dataclass
class Reading:
    """What `Connector.read` returns for one unit."""

    entries: list = field(default_factory=list)     # [Entry]
    hints: dict = field(default_factory=dict)       # cwd, git_root, git_remote, git_branch, title_hint, …
    warnings: Counter = field(default_factory=Counter)  # reason → count

    def newest_time(self):
        times = [entry.time for entry in self.entries if entry.time is not None]
        return max(times) if times else None


@runtime_checkable
class Connector(Protocol):
    """What the pipeline relies on from every connector type (the classes in
    `registry.CONNECTOR_TYPES`, and the upload inbox).

    Construction: `cls(path, **options)` for types that read a path (`~` already expanded),
    `cls(**options)` otherwise, with the connector's whole configuration as options; options
    the type does not use are accepted and ignored (configuration checking happens before).
    Constructing does no I/O.

    What a connector never does: write to its source (files, databases, mailboxes are opened
    read-only; IMAP messages are fetched with `BODY.PEEK`), write to the library (it returns
    plain dataclasses; the pipeline stores), import Django, or log document bodies or secrets.
    It keeps no cursor of its own: the pipeline stores `Unit.fingerprint`. A connector that
    holds a connection between `discover` and `read` (imap) also offers `close()` and releases
    the connection when it is garbage-collected.
    """

    type_name: str          # the configuration's `type`, e.g. "claude_code"

    def discover(self) -> Iterable[Unit]:
        """The units that exist at the source now, cheaply: a stat per file, one aggregate query,
        headers only — never a unit's content. A unit whose content may have changed has a new
        `fingerprint`. Raises `UnitError` only when the source as a whole cannot be read (a
        missing database, an unreachable server, a refused login); the run then stores nothing
        and says why. A single unreadable unit is skipped (or left for `read` to report)."""
        ...

    def read(self, unit: Unit) -> Reading:
        """The unit's entries in order, its hints and its warnings. Streams its input and never
        raises for bad content: a malformed line, an unknown line type, invalid UTF-8 or a huge
        line is skipped and counted in `Reading.warnings`. Raises `UnitError` only when the unit
        as a whole cannot be read (the file vanished, permission denied, the server went away);
        the run reports it and tries the unit again next time."""
        ...


def finish_blocks(entries, *, user_prompt_markers=(), user_prompt_drop_lines=()):
    """Apply the orchestrator-prompt options and number what is left from 0.

    A user entry containing any marker is dropped whole; lines of user entries containing
    any drop-line string are removed; entries left empty are dropped. The numbering
    depends only on the unit's content and these options.
    """
    blocks = []
    for entry in entries:
        text = entry.text
        if entry.role == "user":
            if any(marker in text for marker in user_prompt_markers):
                continue
            if user_prompt_drop_lines:
                text = "\n".join(line for line in text.split("\n")
                                 if not any(drop in line for drop in user_prompt_drop_lines))
        text = text.strip()
        if not text:
            continue
        blocks.append(Block(index=len(blocks), role=entry.role, text=text, time=entry.time))
    return blocks
