"""The tool calls of a SpecStory export: reading one (`ToolBlock`, `WrittenCall`) and naming
it in one line such as `Bash: git status`, `Read: ./src/app.py`, `Edit: /x/y.py`,
`TodoWrite: 3 items`.

An export shows a call as a `<summary>Tool use: **Name** …</summary>` line followed by a body
(v2 `<tool-use>` blocks), as a `Tool use: **Name** …` line followed by its output (early
Cursor exports; calls written as text into sessions SpecStory resumed in another agent; the
legacy Claude Code format), or, in the oldest exports, as a `---`-separated piece of an agent
turn (`<details><summary>Searched codebase "x"…`, `Read file: path`, a shell fence, a `diff`
fence). Only a call's first lines are kept, to name it; the output is never kept, except the
path an Edit/Write result names. Part of the `specstory` connector (see its docstring for
where each kind of call ends).
"""

import html
import re

from ..markup import Fences
from ..text import one_line, whole_words
from ..tools import TOOL_LINE_BOUND, tool_line

# Lines of a tool call kept to name it (its output is never kept), each whole up to the tool
# line's bound (cut between words: see `text.whole_words`; redaction comes later).
TOOL_HEAD_LINES = 40
# Files named on the tool line of one patch, at most.
MAX_PATCHED_FILES = 50

_TOOL_NAME = re.compile(r'data-tool-name="(?P<name>[^"]*)"')
_LONG_FENCE = re.compile(r"^ {0,3}(?:`{4,}|~{4,})")
_BARE_FENCE = re.compile(r"^ {0,3}(?:`{3,}|~{3,})\s*$")

SUMMARY = re.compile(r"<summary>(?P<text>.*?)</summary>")
# A call's summary line: `Tool use: **exec_command** `rg --files docs``, `Tool use: **Bash**`.
SUMMARY_TOOL = re.compile(r"^Tool use:\s*\*\*(?P<name>[^*]+)\*\*\s*(?:•\s*)?(?P<detail>.*)$")
BARE_TOOL = re.compile(r"^Tool use: \*\*(?P<name>[^*]+)\*\*\s*$")
_INLINE_CODE_LINE = re.compile(r"^\s*(?P<ticks>`+)(?P<code>.+?)(?P=ticks)\s*$")
_INLINE_CODE = re.compile(r"`(?P<code>[^`\n]+)`")
_PATTERN = re.compile(r"\bpattern `(?P<code>[^`]+)`")
_PATCH_FILE = re.compile(r"^\*\*(?:Add|Update|Modify|Delete): `(?P<path>[^`]+)`\*\*\s*$")
_CHECKBOX = re.compile(r"^\s*- \[.\]")
_RESULT_PATH = re.compile(r"^(?:The file (?P<updated>.+?) has been (?:updated|created)"
                          r"|File created successfully at: (?P<created>.+?)\s*$)")
_LABEL = re.compile(r"^[A-Z][A-Za-z]*(?: [a-z]+){0,2}: (?P<rest>.+)$")
_READ_FILE = re.compile(r"^Read file: (?P<path>.+)$")
_FENCE_INFO = re.compile(r"^ {0,3}(?:`{3,}|~{3,})(?P<info>.*)$")
_OUTPUT_LABEL = re.compile(r"^\s*\**(?:Result|Output):")
_WRAPPER_LINES = frozenset({"<details>", "</details>", "</tool-use>", "</details></tool-use>", "</summary>"})
_DROPPED_NOTES = re.compile(r"^(?:Cancelled|Could not find file .*)$")

_SHELL_TOOLS = frozenset({"bash", "run_terminal_cmd", "shell", "shell_command", "exec_command", "local_shell",
                          "run_shell_command", "run_command", "terminal", "command", "powershell"})
_SHELL_LANGS = frozenset({"bash", "sh", "shell", "zsh", "console", "powershell", "pwsh", "ps1", "cmd", "fish"})
_TASK_LISTS = frozenset({"todowrite", "todo_write", "update_plan", "write_todos"})


# -- calls being read

class ToolBlock:
    """A `<tool-use>` block being read: its first lines and the nesting depth."""

    def __init__(self, opener):
        found = _TOOL_NAME.search(opener)
        self.name = html.unescape(found.group("name")) if found else ""
        self.head = [whole_words(opener, TOOL_LINE_BOUND)]
        self.depth = 1
        self.fences = Fences()          # only fences of 4+ characters are tracked here
        self.result_path = None
        self.closed = opener.rstrip().endswith("</tool-use>")

    def feed(self, line):
        if len(self.head) < TOOL_HEAD_LINES:
            self.head.append(whole_words(line, TOOL_LINE_BOUND))
        if self.result_path is None:
            self.result_path = result_file(line)
        if self.fences.inside or _LONG_FENCE.match(line):
            self.fences.feed(line)
            return
        if line.startswith("<tool-use"):
            self.depth += 1
        if line.rstrip().endswith("</tool-use>"):
            self.depth -= 1
        self.closed = self.depth <= 0

    def text(self):
        summary, body = split_summary(self.head)
        return tool_text(self.name, summary, body, self.result_path)


class WrittenCall:
    """A tool call written as text, not in a `<tool-use>` block: its `Tool use: **Name** …`
    line (or, for a patch, its first `**Update: `file`**` line), then its output up to the end
    of the turn. Only what names the call is kept (see `may_end` for where it ends)."""

    def __init__(self, line, *, patch=False):
        self.line = whole_words(line, TOOL_LINE_BOUND)
        self.patch = patch
        self.head = []
        self.fences = Fences()
        self.fenced = None              # whether the output opens with a fence (known at its first line)
        self.last = line                # the last non-blank line
        self.result_path = None
        self.patched = [patch_file(line)] if patch else []

    def feed(self, line):
        if len(self.head) < TOOL_HEAD_LINES:
            self.head.append(whole_words(line, TOOL_LINE_BOUND))
        if self.result_path is None:
            self.result_path = result_file(line)
        if self.patch and not self.fences.inside and len(self.patched) < MAX_PATCHED_FILES:
            found = patch_file(line)
            if found and found not in self.patched:
                self.patched.append(found)
        if self.fenced is None and line.strip():
            self.fenced = self.fences.feed(line)
        else:
            self.fences.feed(line)
        if line.strip():
            self.last = line

    def may_end(self):
        """Whether a turn header here ends the output. Outputs quote fences of their own
        (```mermaid … ``` inside the ``` around a Codex command's output) that break fence
        tracking, and may quote an export's turn headers. So an output that opens with a
        fence ends only right after a closing fence or a `---` line (SpecStory closes an
        agent turn before a user turn with one); any other output ends outside fenced code
        too."""
        after_fence = bool(_BARE_FENCE.match(self.last)) or self.last.strip() == "---"
        return after_fence if self.fenced else after_fence or not self.fences.inside

    def text(self):
        if self.patch:
            return tool_line("apply_patch", ", ".join(self.patched))
        said = SUMMARY_TOOL.match(self.line.strip())
        name = said.group("name").strip() if said else ""
        command = command_before_output(self.head) if is_shell(name) else None
        if command:     # the legacy format puts a description on the tool line, the command below
            return tool_line("Bash", command)
        return tool_text("", self.line, self.head, self.result_path)


# -- naming a call from its first lines

def patch_file(line):
    """The file a patch header line names (`**Update: `a.py`**`, as SpecStory renders an
    `apply_patch` call), else None."""
    found = _PATCH_FILE.match(line)
    return found.group("path") if found else None


def result_file(line):
    """The file an Edit/Write result line names (`The file x has been updated…`), else None."""
    found = _RESULT_PATH.match(line)
    return (found.group("updated") or found.group("created")) if found else None


def classify_piece(lines):
    """("text", text), ("tool", tool line) or ("drop", None) for one `---`-separated piece."""
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    if not lines:
        return "drop", None
    first = lines[0].strip()
    bare = BARE_TOOL.match(first)
    if bare:
        summary, body = split_summary(lines[1:])
        return "tool", tool_text(bare.group("name"), summary, body, _result_path(lines))
    if first.startswith("<details"):
        summary, _body = split_summary(lines[:4])
        if summary:
            return "tool", tool_text("", summary, [], None)
    if len(lines) == 1:
        read = _READ_FILE.match(first)
        if read:
            return "tool", tool_line("Read", read.group("path"))
        if _DROPPED_NOTES.match(first):
            return "drop", None
    fenced = _only_fences(lines)
    if fenced is not None:
        info, code = fenced
        if info in _SHELL_LANGS:
            return "tool", tool_line("Bash", code)
        if info == "diff" or info.startswith("diff:"):
            return "tool", tool_line("Edit", info.partition(":")[2])
    return "text", "\n".join(lines)


def command_before_output(lines):
    """The command a shell call's body shows before its output (an inline-code line or the
    first line of a shell fence), or None when the output (`Result:`, `Output:`, another
    fence) comes first."""
    fences = Fences()
    for index, line in enumerate(lines):
        if fences.feed(line):
            info = _FENCE_INFO.match(line).group("info").strip().lower()
            if info in _SHELL_LANGS and index + 1 < len(lines) and lines[index + 1].strip():
                return lines[index + 1].strip()
            return None
        if _OUTPUT_LABEL.match(line):
            return None
        code = _INLINE_CODE_LINE.match(line)
        if code:
            return code.group("code").strip()
    return None


def is_shell(name):
    """Whether a tool of this name runs a shell command (its line says `Bash: <command>`)."""
    return name.lower() in _SHELL_TOOLS


def _only_fences(lines):
    """(info of the first fence, lowercased; its first code line) when `lines` are fenced
    blocks and blank lines only, else None."""
    fences, info, code, blocks = Fences(), None, None, 0
    for line in lines:
        if fences.inside:
            if not fences.feed(line) and blocks == 1 and code is None and line.strip():
                code = line
            continue
        if fences.feed(line):
            blocks += 1
            if info is None:
                info = _FENCE_INFO.match(line).group("info").strip().lower()
            continue
        if line.strip():
            return None
    return None if info is None else (info, code or "")


def _result_path(lines):
    return next((path for line in lines if (path := result_file(line))), None)


def split_summary(lines):
    """(the text of the first `<summary>…</summary>`, the lines after it)."""
    for index, line in enumerate(lines):
        found = SUMMARY.search(line)
        if found:
            return found.group("text"), lines[index + 1:]
    return "", lines


def tool_text(name, summary, body, result_path):
    """One line for a tool call: `Bash: git status`, `Read: ./src/app.py`, `Edit: /x/y.py`,
    `TodoWrite: 3 items`, `grep: Grep for "x"`; other tools show what their block shows first."""
    summary = " ".join(html.unescape(summary or "").split())
    detail = ""
    said = SUMMARY_TOOL.match(summary)
    if said:
        name = name or said.group("name").strip()
        detail = _summary_detail(said.group("detail") or "")
    elif summary:
        detail = _summary_detail(summary)       # a custom summary (Codex: "`git status`")
    shell = is_shell(name)
    if not detail:
        detail = _body_detail(name, body, result_path, shell=shell)
    if not name:
        return one_line(detail, TOOL_LINE_BOUND)
    return tool_line("Bash" if shell else name, detail)


def _summary_detail(text):
    text = text.split(" • ")[0].replace("**", "").strip()
    code = _INLINE_CODE_LINE.match(text)
    if code:
        return code.group("code").strip()
    label = _LABEL.match(text)
    return label.group("rest").strip() if label else text


def _body_detail(name, body, result_path, *, shell):
    lower = name.lower()
    body = [line for line in body if line.strip() not in _WRAPPER_LINES]
    if lower in _TASK_LISTS or any("Agent task list" in line for line in body[:3]):
        count = sum(1 for line in body if _CHECKBOX.match(line))
        return f"{count} steps" if lower == "update_plan" else f"{count} items"   # as the codex connector says
    patched = [path for line in body if (path := patch_file(line))]
    if patched:
        return ", ".join(dict.fromkeys(patched))
    fences, plain, spans = Fences(), [], []
    for index, line in enumerate(body):
        if fences.inside:
            fences.feed(line)
            continue
        if fences.feed(line):
            info = _FENCE_INFO.match(line).group("info").strip().lower()
            if shell and info in _SHELL_LANGS and index + 1 < len(body):
                return body[index + 1]
            continue
        code = _INLINE_CODE_LINE.match(line)
        if code and (shell or not plain):
            return code.group("code").strip()
        if line.strip() and not line.lstrip().startswith(("**", "<")):
            plain.append(line.strip())
            spans.extend(found.group("code") for found in _INLINE_CODE.finditer(line))
    if result_path:
        return result_path
    if lower in ("grep", "glob"):
        pattern = next((found.group("code") for line in plain if (found := _PATTERN.search(line))), None)
        if pattern:
            return pattern
    if spans:
        return spans[0]
    if plain:
        label = _LABEL.match(plain[0])
        return label.group("rest") if label else plain[0]
    return ""
