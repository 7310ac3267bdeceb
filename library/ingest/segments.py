"""Blocks → segments → hashes (docs/design.md "Blocks and segments"). Pure functions: no database, no model.

A segment's text is its blocks rendered as `role: text`, separated by one blank line. With
`L = max_input_chars`, a block whose rendered length exceeds L is cut in the middle around
the marker `[... N characters omitted ...]`; blocks are then grouped greedily while the
rendered segment stays within L. Boundaries depend only on the blocks, so a session that
grows keeps its earlier segments byte-identical and only its last segment changes.
"""

import hashlib
import re
from dataclasses import dataclass, replace
from datetime import datetime

from connectors.base import ROLES

SEPARATOR = "\n\n"
MARKER = "[... {n} characters omitted ...]"
# A block starts at the beginning of the text or after SEPARATOR, with "<role>: ".
_BLOCK_BREAK_RE = re.compile(re.escape(SEPARATOR) + "(?=(?:%s): )" % "|".join(ROLES))
_LEADING_ROLE_RE = re.compile("(%s): " % "|".join(ROLES))


def render_block(block):
    return f"{block.role}: {block.text}"


def parse_blocks(text):
    """The `(role, text)` pairs of a rendered segment: the inverse of joining
    `render_block()` renderings with SEPARATOR.

    A block ends where SEPARATOR is followed by `<role>: ` (roles: user, assistant, tool,
    system), so a block whose own text holds a blank line and then such a prefix would
    be cut there: the rendering cannot tell the two apart. Text before the first role
    prefix (an original that was never rendered from blocks, e.g. an imported record)
    becomes a `user` block. Returns a list; empty text gives an empty list.
    """
    if not text:
        return []
    blocks = []
    for part in _BLOCK_BREAK_RE.split(text):
        match = _LEADING_ROLE_RE.match(part)
        if match:
            blocks.append((match.group(1), part[match.end():]))
        else:
            blocks.append(("user", part))
    return blocks


def shorten(block, limit):
    """The block itself when its rendering fits in `limit`, else a copy whose text keeps its
    head and tail around the marker so that the rendering is exactly `limit` characters
    (at most). N in the marker is the number of characters removed."""
    prefix = len(block.role) + 2
    if prefix + len(block.text) <= limit:
        return block
    text = block.text
    for digits in range(1, 20):
        keep = limit - prefix - len(MARKER.format(n="")) - digits
        removed = len(text) - keep
        if len(str(removed)) == digits:
            break
    else:  # pragma: no cover - 19 digits of text cannot exist
        raise AssertionError("unreachable")
    keep = max(keep, 0)
    head, tail = text[: (keep + 1) // 2], text[len(text) - keep // 2:]
    return replace(block, text=f"{head}{MARKER.format(n=len(text) - len(head) - len(tail))}{tail}")


@dataclass(frozen=True)
class Segment:
    unit_id: str
    blocks: tuple           # the (possibly shortened) blocks, in order
    text: str               # the rendering that is hashed, stored as `original` and sent
    part: int               # 1-based
    parts: int

    @property
    def first_block(self):
        return self.blocks[0].index

    @property
    def last_block(self):
        return self.blocks[-1].index

    @property
    def id(self):
        return f"{self.unit_id}#{self.first_block}"

    @property
    def hash(self):
        return text_hash(self.text)

    @property
    def occurred_at(self) -> datetime | None:
        """The time of the last block (None when no block in it has a time)."""
        for block in reversed(self.blocks):
            if block.time is not None:
                return block.time
        return None

    def title_hint(self, hint):
        """The title hint given to the model (never part of the hash)."""
        return part_hint(hint, self.part, self.parts)


def part_hint(hint, part, parts):
    """`hint (part n/m)` when a unit has several segments; the hint alone otherwise."""
    if parts <= 1:
        return hint or None
    label = f"(part {part}/{parts})"
    return f"{hint} {label}" if hint else label


def text_hash(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def segment(unit_id, blocks, limit):
    """Cut numbered, redacted blocks into Segments of at most `limit` rendered characters."""
    groups, current, length = [], [], 0
    for block in blocks:
        block = shorten(block, limit)
        size = len(render_block(block))
        if current and length + len(SEPARATOR) + size > limit:
            groups.append(current)
            current, length = [], 0
        length += size + (len(SEPARATOR) if current else 0)
        current.append(block)
    if current:
        groups.append(current)
    return [
        Segment(unit_id=unit_id, blocks=tuple(group), text=SEPARATOR.join(render_block(b) for b in group),
                part=n, parts=len(groups))
        for n, group in enumerate(groups, start=1)
    ]
