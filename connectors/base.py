"""What every connector hands the pipeline: units, blocks and hints as plain dataclasses.

A connector type is a class with two methods:

- `discover()` yields `Unit`s: what exists at the source, cheaply (a stat per file, no
  parsing). `Unit.fingerprint` changes whenever the unit's content may have changed (for
  files: size + mtime); the pipeline stores it as the cursor once the unit is fully stored.
- `read(unit)` returns a `Reading`: the unit's `Entry`s in order (role, text, time) and
  its hints. It streams its input line by line and never raises for bad content: a
  malformed line, an unknown line type, invalid UTF-8 or a huge line is skipped and
  counted in `Reading.warnings`. It raises `UnitError` only when the unit as a whole
  cannot be read (the file vanished, permission denied).

`finish_blocks()` applies the per-connector prompt options and numbers the blocks, the same
way for every connector. No Django here: connectors are plain Python.
"""

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

ROLES = ("user", "assistant", "tool", "system")


class UnitError(Exception):
    """The unit cannot be read at all; the run report records it and the cursor stays."""


@dataclass(frozen=True)
class Unit:
    id: str                 # stable id, unique within the connector (a session id); keys are <source>:<id>#<n>
    ref: str                # original_ref: points back to the unit (session id, file path)
    fingerprint: str        # changes when the content may have changed; the cursor stores it
    modified: datetime      # newest activity known without reading (file mtime), aware UTC
    path: str | None = None


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
    entries: list = field(default_factory=list)     # [Entry]
    hints: dict = field(default_factory=dict)       # cwd, git_root, git_remote, git_branch, title_hint, …
    warnings: Counter = field(default_factory=Counter)  # reason → count

    def newest_time(self):
        times = [entry.time for entry in self.entries if entry.time is not None]
        return max(times) if times else None


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
