"""What a person writes in a session to keep something out of Jezero (docs/design.md "Kept out"),
applied to what a connector read before anything else sees it: before redaction, hashing,
storage, logging or any model call.

- `<private>` … `</private>` in any block's text (and in any hint: a title, a subject) is
  replaced by `[private]`. The tags nest and may span lines; an unclosed `<private>` hides to
  the end of the block; a `</private>` with nothing open is plain text. Only these exact
  spellings are markers: `<Private>`, `< private >` or `<private x>` are plain text.
- A line that is exactly `jezero: skip` (any case, spaces around allowed) in any user block
  keeps the whole unit out: no item, no original, no hash of its text (`Marked.kept_out`).

Pure functions, no Django: the pipeline, the upload inbox and `jezero preview` call `apply`
on every Reading they get (`library.ingest.pipeline.read_marked`).
"""

import re
from dataclasses import dataclass, replace

HIDDEN = "[private]"
_TAG_RE = re.compile(r"<(/?)private>")
_SKIP_RE = re.compile(r"^[ \t]*jezero:[ \t]*skip[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)
SKIP_LINE = "jezero: skip"


@dataclass(frozen=True)
class Marked:
    """A Reading after its author's markers: `reading` with every private span hidden, or
    None when a user block asks to keep the unit out (`skip_block`: that block's number among
    the user blocks, 0-based; no text is kept). `hidden` counts the spans hidden."""

    reading: object
    skip_block: int | None = None
    hidden: int = 0

    @property
    def kept_out(self):
        return self.skip_block is not None


def hide(text):
    """`text` with every `<private>` span replaced by `[private]`, and how many spans."""
    if "<private>" not in text:
        return text, 0
    out, depth, spans, position = [], 0, 0, 0
    for tag in _TAG_RE.finditer(text):
        closing = bool(tag.group(1))
        if not closing:
            if depth == 0:
                out.append(text[position:tag.start()])
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                out.append(HIDDEN)
                spans += 1
                position = tag.end()
    if depth:   # unclosed: hidden to the end of the block
        out.append(HIDDEN)
        spans += 1
    else:
        out.append(text[position:])
    return "".join(out), spans


def asks_to_skip(text):
    """Whether a user block's text holds the line `jezero: skip`."""
    return "skip" in text.lower() and _SKIP_RE.search(text) is not None


def _hidden_value(value):
    """A hint with its private spans hidden (strings inside lists and dicts too)."""
    if isinstance(value, str):
        return hide(value)[0]
    if isinstance(value, list):
        return [_hidden_value(item) for item in value]
    if isinstance(value, dict):
        return {key: _hidden_value(item) for key, item in value.items()}
    return value


def apply(reading):
    """The Reading's Marked: its private spans hidden (in its entries and hints), or kept out
    when a user block holds the line `jezero: skip`. Idempotent."""
    entries, user_blocks, hidden = [], 0, 0
    for entry in reading.entries:
        if entry.role == "user":
            if asks_to_skip(entry.text):
                return Marked(reading=None, skip_block=user_blocks)
            user_blocks += 1
        text, spans = hide(entry.text)
        hidden += spans
        entries.append(replace(entry, text=text) if spans else entry)
    if not hidden and "<private>" not in repr(reading.hints):
        return Marked(reading=reading)
    return Marked(reading=replace(reading, entries=entries, hints=_hidden_value(dict(reading.hints))), hidden=hidden)
