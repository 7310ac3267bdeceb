"""The extractive summariser: no model, deterministic, works offline (SPEC §5).

The title is the first user request's first line; the summary joins the opening request
and the agent's final answer; three questions are derived from the title (and the first
error, if any); atoms are copied verbatim: shell tool calls (`tool: Bash: …`) become
`command` atoms, lines that look like errors become `error` atoms. Its records say
`summarizer = extractive` and are meant to be upgraded later by `jezero resummarize`.

It reads the request's blocks; without them (re-summarising a stored original) it splits
the rendered document back into `role: text` blocks. Whatever the input, the record has
a title and a summary, so it always passes `check_answer`.
"""

import re

from library.summarize.base import Summarizer, Summary
from library.summarize.schema import check_answer

NAME = "extractive"
TITLE_CHARS = 80
OPENING_CHARS = 300
OUTCOME_CHARS = 400
ATOM_CHARS = 300
MAX_COMMANDS = 10
MAX_ERRORS = 8

# Tool names under which the connectors report shell commands (Claude Code, Codex, Gemini
# CLI, OpenCode, pi, Hermes).
SHELL_TOOLS = frozenset({
    "bash", "shell", "sh", "zsh", "exec", "exec_command", "local_shell", "run_shell_command",
    "terminal", "command", "run_command", "powershell",
})
_ROLE_SPLIT_RE = re.compile(r"(?:^|\n\n)(?=(?:user|assistant|tool|system): )")
_TOOL_LINE_RE = re.compile(r"^([\w.-]+):\s+(.+)$", re.DOTALL)
_STRONG_ERROR_RE = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b"       # ValueError, ModuleNotFoundError, NullPointerException
    r"|\b(?:[Ee]rror|ERROR|[Ff]atal|FATAL|[Pp]anic)(?:\[[\w-]+\])?:"  # error: / Error: / fatal: / error[E0382]:
    r"|\bERR!"                                # npm ERR!
)
_ERROR_RE = re.compile(_STRONG_ERROR_RE.pattern + r"|\b(?:[Ff]ailed|FAILED|FAIL)\b")
_TRACEBACK_HEAD = "Traceback (most recent call last)"
_LEADING_MARKUP_RE = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+)+")  # headings, quotes, bullets
_HEADING_RE = re.compile(r"^\s*(?:#{1,6}\s+|>\s*)", re.MULTILINE)
_SENTENCE_END = (".", "!", "?", "…", ":")


class ExtractiveSummarizer(Summarizer):
    name = NAME

    def summarize(self, request):
        blocks = [(role, text) for role, text in request.blocks if text and text.strip()]
        if not blocks:
            blocks = blocks_from_document(request.document)
        record = check_answer(extract(blocks, title_hint=request.title_hint))
        return Summary(record=record, summarizer=NAME, input_tokens=0, output_tokens=0, attempts=1)


def extract(blocks, *, title_hint=None):
    """The record fields (a dict) for `blocks`, a list of (role, text)."""
    user_texts = [text for role, text in blocks if role == "user"]
    assistant_texts = [text for role, text in blocks if role == "assistant"]
    any_text = next((text for _, text in blocks if text.strip()), "")

    opening = user_texts[0] if user_texts else any_text
    title = _shorten(_first_line(opening), TITLE_CHARS) or _shorten(" ".join((title_hint or "").split()), TITLE_CHARS)
    title = title or "Untitled session"

    atoms = _atoms(blocks)
    opening_text = _shorten(_flat(opening), OPENING_CHARS)
    if user_texts:
        summary = f"The session started with this request: {_sentence(opening_text)}"
    elif opening_text:
        summary = f"The document begins: {_sentence(opening_text)}"
    else:
        summary = "The document is empty."
    if assistant_texts:
        outcome = _shorten(_flat(assistant_texts[-1]), OUTCOME_CHARS)
        summary += f" It ended with: {_sentence(outcome)}"
    elif user_texts:
        summary += " No answer from the agent was recorded."

    return {
        "title": title,
        "summary": summary,
        "questions": _questions(title, atoms),
        "atoms": atoms,
        "project": None,
    }


def blocks_from_document(document):
    """Split a rendered segment ("role: text" blocks, blank-line separated) into blocks."""
    blocks = []
    for part in _ROLE_SPLIT_RE.split(document or ""):
        if not part.strip():
            continue
        role, sep, text = part.partition(": ")
        if sep and role in ("user", "assistant", "tool", "system"):
            blocks.append((role, text.strip()))
        elif blocks:
            role, previous = blocks[-1]
            blocks[-1] = (role, f"{previous}\n\n{part.strip()}")
        else:
            blocks.append(("user", part.strip()))
    return blocks


def _questions(title, atoms):
    subject = title.rstrip("".join(_SENTENCE_END) + " ")
    first = title if title.endswith("?") else f"How was this handled: {subject}?"
    questions = [first, f"What was the outcome of: {subject}?"]
    errors = [atom["text"] for atom in atoms if atom["kind"] == "error"]
    errors.sort(key=lambda text: not _STRONG_ERROR_RE.search(text))  # stable: the first strong one leads
    commands = [atom for atom in atoms if atom["kind"] == "command"]
    if errors:
        questions.append(f"How was the error “{_shorten(_first_line(errors[0]), 100)}” dealt with?")
    elif commands:
        questions.append(f"Which commands were run for: {subject}?")
    else:
        questions.append(f"What was decided about: {subject}?")
    return questions


def _atoms(blocks):
    atoms, seen = [], set()
    counts = {"command": 0, "error": 0}
    limits = {"command": MAX_COMMANDS, "error": MAX_ERRORS}

    def add(kind, text):
        text = _shorten(text.strip(), ATOM_CHARS)
        if len(text) < 3 or (kind, text) in seen or counts[kind] >= limits[kind]:
            return
        seen.add((kind, text))
        counts[kind] += 1
        atoms.append({"kind": kind, "text": text})

    for role, text in blocks:
        if role == "tool":
            match = _TOOL_LINE_RE.match(text.strip())
            if match and match.group(1).lower() in SHELL_TOOLS:
                add("command", match.group(2))
            continue
        for line in text.splitlines():
            stripped = line.strip()
            # A traceback's head and a line that introduces an error ("failed with:") say
            # nothing themselves; the lines that follow them do.
            if stripped.startswith(_TRACEBACK_HEAD) or stripped.endswith(":") or not _ERROR_RE.search(stripped):
                continue
            add("error", stripped)
    return atoms


def _first_line(text):
    for line in text.splitlines():
        line = _LEADING_MARKUP_RE.sub("", line).strip()
        if line:
            return " ".join(line.split())
    return ""


def _flat(text):
    """`text` on one line, without Markdown heading and quote marks."""
    return " ".join(_HEADING_RE.sub("", text).split())


def _shorten(text, limit):
    """`text` cut at a word boundary to at most `limit` characters, with '…' when cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def _sentence(text):
    return text if text.endswith(_SENTENCE_END) else text + "."
