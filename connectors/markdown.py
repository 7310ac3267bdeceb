"""The `markdown` connector type: a folder of Markdown files — a task board such as
Backlog.md (`backlog/tasks/*.md`), a notes folder or vault.

Units. Every file under `path` whose path relative to `path` matches `glob` (default
`**/*.md`; `**/` matches any number of folders, `*` and `?` stay inside one folder) is one
unit. Hidden folders and files (`.git`, `.obsidian`, `.trash`) are skipped. Its id is that
relative path (POSIX separators), so the same file keeps its items; its original_ref is the
file's full path. A file given as `path` is one unit named after itself. Fingerprint: size +
mtime. (A Backlog.md task renamed or moved to `completed/` is a new unit: its id is its path.)

Reading. Optional front matter (`---` on the first line … `---` or `...`) is parsed by a small
tolerant reader (no YAML dependency): `key: value`, quoted values, `[a, b]` lists, `- item`
lists below a key, `|`/`>` block text; anything else (nested maps) is ignored, never raised.
Blocks, all written by a person:
- one `system` block with the front-matter fields, `key: value` joined by `; ` (lists joined
  by `, `), without the title and the dates (they become the title hint and the time);
- one `user` block per section: the text before the first heading, then every `#` or `##`
  heading with what follows it up to the next one (deeper headings stay inside; headings in
  fenced code do not count). HTML-comment lines (Backlog.md's `<!-- SECTION:…:BEGIN -->`
  markers) are dropped, and a heading with no text under it is dropped. When the title
  comes from the front matter or an `#` heading and no block opens with that heading, the
  first block starts with `# <title>`, so that every summariser (the extractive one titles a
  record by the first user line) sees what the document is called.
Every block has one time: the front matter's `updated_date`, else `updated`, `created_date`,
`created`, `date`, but never later than the file's modification time (a date in the future
would keep the unit settling forever); without one, the modification time.

Hints: `title_hint` (front-matter `title`, else the first `#` heading, else the file name),
`status`, `labels` (front-matter `labels`, else `tags`; always a list) and `path` (the
relative path). No `cwd`: a document has no working folder.
"""

import os
import re
from pathlib import Path

from .base import Entry, Reading
from .files import iter_lines
from .markup import Fences
from .text import one_line, parse_time, safe_text
from .units import file_unit

TYPE = "markdown"
# Front matter longer than this is not front matter (an unclosed `---` opening a document).
MAX_FRONT_MATTER_LINES = 200
# Front-matter values longer than this are cut in the system block (it stays short).
FIELD_CHARS = 200
DATE_KEYS = ("updated_date", "updated", "created_date", "created", "date")

_HEADING = re.compile(r"^#{1,2}(?:\s+(?P<text>.*?))?(?:\s+#+)?\s*$")
_H1 = re.compile(r"^#(?:\s+(?P<text>.*?))?(?:\s+#+)?\s*$")
_HTML_COMMENT_LINE = re.compile(r"^\s*<!--.*-->\s*$")
_KEY = re.compile(r"^(?P<key>[A-Za-z_][\w .-]*?)\s*:(?:\s+(?P<value>.*?))?\s*$")
_LIST_ITEM = re.compile(r"^\s*-\s*(?P<value>.*?)\s*$")


# -- the connector

class MarkdownConnector:
    """Reads the Markdown files under `path` that match `glob`. Unknown keyword options are
    accepted and ignored."""

    type_name = TYPE

    def __init__(self, path, glob="**/*.md", **options):
        self.root = Path(path)
        self.glob = glob or "**/*.md"
        self._matches = glob_matcher(self.glob)

    def discover(self):
        """Yield one `Unit` per matching file (one stat each), sorted by relative path."""
        if self.root.is_file():
            unit = file_unit(self.root, self.root.name, str(self.root), single_document=True)
            if unit is not None:
                yield unit
            return
        for relative, path in sorted(_walk(self.root)):
            if self._matches(relative):
                unit = file_unit(path, relative, str(path), single_document=True)
                if unit is not None:
                    yield unit

    def read(self, unit):
        """The unit's entries, hints and warnings; raises `UnitError` if the file cannot be read."""
        reading = Reading()
        lines = iter_lines(unit.path, reading.warnings)
        front, body = _split_front_matter(lines)
        sections = _sections(body)
        title = _title(front, sections, unit)
        time = _document_time(front, unit.modified)

        entries = []
        fields = _field_line(front)
        if fields:
            entries.append(Entry("system", fields, time))
        blocks = [text for text in (_section_text(lines) for lines in sections) if text]
        if blocks and title.source != "file" and not any(_opens_with_title(text, title.text) for text in blocks):
            blocks[0] = f"# {title.text}\n\n{blocks[0]}"
        entries.extend(Entry("user", safe_text(text), time) for text in blocks)
        reading.entries = entries
        reading.hints = _hints(front, title.text, unit)
        return reading


# -- discovery

def glob_matcher(pattern):
    """A predicate on POSIX relative paths for a glob: `**` is any number of folders
    (including none), `*` and `?` stay within one path part, `[…]` is a character class."""
    parts = [part for part in pattern.strip().lstrip("/").split("/") if part]
    regex = ""
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            regex += ".*" if last else "(?:[^/]+/)*"
        else:
            regex += _part_regex(part) + ("" if last else "/")
    compiled = re.compile(regex or ".*")
    return lambda relative: compiled.fullmatch(relative) is not None


def _part_regex(part):
    out, index = [], 0
    while index < len(part):
        char = part[index]
        end = part.find("]", index + 2) if char == "[" else -1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif end != -1:
            body = part[index + 1:end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            index = end
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def _walk(root):
    """(relative POSIX path, path) of every visible file under `root`; hidden folders and
    symlinked folders are not entered."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        for name in files:
            if name.startswith("."):
                continue
            path = Path(folder) / name
            yield path.relative_to(root).as_posix(), path


# -- front matter

def _split_front_matter(lines):
    """(front-matter dict, iterator over the body lines). A `---` first line without a
    closing line within MAX_FRONT_MATTER_LINES is body text, not front matter."""
    lines = iter(lines)
    first = next(lines, None)
    if first is None:
        return {}, iter(())
    if first.strip() != "---":
        return {}, _chain([first], lines)
    held = []
    for line in lines:
        if line.strip() in ("---", "..."):
            return parse_front_matter(held), lines
        held.append(line)
        if len(held) > MAX_FRONT_MATTER_LINES:
            break
    return {}, _chain([first, *held], lines)


def _chain(head, tail):
    yield from head
    yield from tail


def parse_front_matter(lines):
    """A dict from YAML-ish `lines`: strings and lists of strings only; never raises."""
    data, key, block = {}, None, None     # block: (key, style) while reading `|`/`>` text
    for line in lines:
        if block is not None:
            if line.startswith((" ", "\t")) or not line.strip():
                data[block[0]].append(line.strip())
                continue
            data[block[0]] = _join_block(data[block[0]], block[1])
            block = None
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = _LIST_ITEM.match(line) if key is not None else None
        if item is not None and (line.startswith((" ", "\t", "-"))):
            if not isinstance(data.get(key), list):
                data[key] = []
            value = _scalar(item.group("value"))
            if value:
                data[key].append(value)
            continue
        if line.startswith((" ", "\t")):
            continue                      # a nested map or a continuation: not kept
        match = _KEY.match(line)
        if match is None:
            key = None
            continue
        key, raw = match.group("key").strip(), (match.group("value") or "").strip()
        if raw in ("|", ">", "|-", ">-", "|+", ">+"):
            data[key] = []
            block = (key, raw[0])
        elif raw.startswith("[") and raw.endswith("]"):
            data[key] = [value for value in (_scalar(part) for part in _split_list(raw[1:-1])) if value]
        else:
            data[key] = _scalar(raw)
    if block is not None:
        data[block[0]] = _join_block(data[block[0]], block[1])
    return data


def _join_block(lines, style):
    while lines and not lines[-1]:
        lines.pop()
    return ("\n" if style == "|" else " ").join(lines)


def _split_list(text):
    """Items of an inline `[a, "b, c"]` list, respecting quotes."""
    items, current, quote = [], [], None
    for char in text:
        if quote:
            current.append(char)
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
            current.append(char)
        elif char == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return items


def _scalar(text):
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        inner = text[1:-1]
        return inner.replace("''", "'") if text[0] == "'" else inner.replace('\\"', '"')
    if " #" in text:
        text = text.split(" #", 1)[0].rstrip()   # a trailing YAML comment
    return "" if text in ("~", "null") else text


def _field_line(front):
    parts = []
    for key, value in front.items():
        if key == "title" or key in DATE_KEYS:
            continue
        if isinstance(value, list):
            value = ", ".join(value)
        value = one_line(" ".join(value.split()), FIELD_CHARS)
        if value and value != "[]":
            parts.append(f"{key}: {value}")
    return safe_text("; ".join(parts))


def _document_time(front, modified):
    for key in DATE_KEYS:
        value = front.get(key)
        moment = parse_time(value.strip()) if isinstance(value, str) else None
        if moment is not None:
            return min(moment, modified) if modified else moment
    return modified


# -- sections

def _sections(body):
    """The body as a list of sections, each a list of lines, split at `#`/`##` headings
    outside fenced code."""
    sections, current, fences = [], [], Fences()
    for line in body:
        if not fences.inside and _HEADING.match(line) and current:
            sections.append(current)
            current = []
        fences.feed(line)
        current.append(line)
    if current:
        sections.append(current)
    return sections


def _section_text(lines):
    kept = [line for line in lines if not _HTML_COMMENT_LINE.match(line)]
    text = "\n".join(kept).strip()
    heading = _HEADING.match(kept[0]) if kept else None
    if heading is not None and not "\n".join(kept[1:]).strip():
        return ""                             # a heading with nothing under it
    return re.sub(r"\n{3,}", "\n\n", text)


class _Title:
    def __init__(self, text, source):
        self.text, self.source = text, source


def _title(front, sections, unit):
    title = front.get("title")
    if isinstance(title, str) and title.strip():
        return _Title(" ".join(title.split()), "front matter")
    fences = Fences()
    for section in sections:
        for line in section:
            if not fences.inside:
                match = _H1.match(line)
                if match and (match.group("text") or "").strip():
                    return _Title(match.group("text").strip(), "heading")
            fences.feed(line)
    return _Title(Path(unit.path).stem, "file")


def _opens_with_title(text, title):
    match = _H1.match(text.split("\n", 1)[0])
    return match is not None and (match.group("text") or "").strip() == title


def _hints(front, title, unit):
    hints = {"title_hint": safe_text(title), "path": unit.id}
    status = front.get("status")
    if isinstance(status, str) and status:
        hints["status"] = status
    labels = front.get("labels") or front.get("tags")
    if isinstance(labels, str):
        labels = [labels]
    if isinstance(labels, list) and labels:
        hints["labels"] = [safe_text(label) for label in labels]
    return hints

