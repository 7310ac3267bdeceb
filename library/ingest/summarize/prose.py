"""Reading a block's text the way a person skims it, for the extractive summariser.

`read_text()` splits a user or agent block into prose units (paragraphs, list items,
headings) and fenced code, and sets aside the lines a person skips when looking for what
was asked: shell prompts, banners of box-drawing characters, bare paths and URLs, pasted log
lines and stack frames, JSON fragments, tables, markup and code. `sentences()` cuts prose
into sentences (also after 。！？, since CJK text has no spaces); `condense()` shortens a
text to a display width at a clause or word boundary (CJK characters count double).

Everything here is a pure function of its input: no statistics kept between calls.
"""

import re
import string
import unicodedata
from dataclasses import dataclass, field

# -- lines a person skips -------------------------------------------------------------------------

_SHELL_PROMPT_RE = re.compile(
    r"^(?:"
    r"PS [A-Za-z]:\\[^>]*>"                                     # PowerShell: PS C:\Users\x>
    r"|[A-Za-z]:\\[^>\s]*>"                                     # cmd.exe: C:\dev>
    r"|(?:\([\w.-]+\)\s*)?[\w.-]+@[\w.-]+(?::\S*)?\s?[$#%>]"   # user@host:~/src$   (venv) me@box ~ %
    r"|(?:\([\w.-]+\)\s*)?[~/][^\s$]*\s?[$%]\s"               # ~/src$ ls
    r"|[$%]\s+\S"                                                # $ ls
    r"|[❯➜λ»›]\s"                                              # starship, oh-my-zsh, fish
    r"|>>>\s|>>>$"                                              # a Python REPL
    r")")
_BOX_CHARS_RE = re.compile(r"[\u2500-\u259f]")
_RULE_RE = re.compile(r"^[\s=\-_*#~+|:.<>\u2500-\u259f]{3,}$")
_URL_ONLY_RE = re.compile(r"^(?:<?(?:https?|ftp|file)://\S+>?|\[[^\]]*\]\([^)\s]*\))$")
_PATH_REF_RE = re.compile(r"^@?\S+(?:\s*\(\d+\s*-\s*\d+\)|:\d+(?:-\d+)?)$")    # file.py (10-20), f.txt:43-49
_LOG_RE = re.compile(
    r"^\[?\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}"                     # 2025-01-02 10:00 …
    r"|^\[?\d{1,2}:\d{2}:\d{2}\b"                                  # 10:00:01 …
    r"|^\[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL|SEVERE)\b\]?"
    r"|^at\s+(?:[\w$<>`\[\]#-]+\.)+[\w$<>`\[\]#-]+|^at\s+\S+\s+\(|^at\s+<anonymous>"   # JS, Java, .NET frames
    r"|^File \".*\", line \d+"                                     # Python stack frames
    r"|^Traceback \(most recent call last\)"
    r"|^[\^~]+$|^\d+\s*[|│]"                                      # caret markers, code frames
    r"|^(?:npm|yarn|pnpm)\s+(?:ERR!|WARN|notice)"
    r"|^(?:Compiling|Finished|Downloaded|Downloading|Collecting|Installing|Requirement already satisfied"
    r"|Successfully (?:installed|built|tagged)|Restore complete|Build succeeded|Build FAILED)\b"
    r"|^#\d+ \[|^Step \d+/\d+|^\[\d+/\d+\]"                       # docker, ninja
    r"|^[\w@/.-]+ v\d+\.\d+"                                         # "vite v5.4.2 building…"
    r"|^Found \d+ |^Build (?:failed|succeeded)\b|^[A-Z][a-z]+ing\b.*(?:\.\.\.|…)$"   # "Build failed …", "Ensuring tools..."
    r"|^[A-Z][a-z]+ing \w+: \S"                                     # "Executing command: dotnet …"
    r"|^\d+:\d+\s+(?:error|warning)\b"                              # eslint: "3:10 error …"
    r"|^(?:PASS|FAIL|FAILED|ok|ERROR)\s+\S*[/:.]\S*"               # test runners
    r"|^={3,}|^-{3,}\s*\w"                                         # "=== RUN", "---- captured"
    r"|^[A-Za-z_][\w.]*=\S"                                        # key=value dumps (HResult=0x8013…)
    r"|^[A-Za-z]:\\|^\.{0,2}/\S+:\d+"                              # C:\… , ./src/x.ts:12:5 …
)
# Anywhere in a line: MSBuild's "X succeeded (0.5s) → bin/x.dll"; three or more "key: 12" pairs.
_TIMED_RE = re.compile(r"\(\d+(?:\.\d+)?m?s\)\s*(?:→|$)")            # MSBuild: "X succeeded (0.5s) → x.dll"
_LEVEL_RE = re.compile(r"(?:^|\s)(?:info|warn|log|trce|dbug|fail|crit)\s*:\s")   # NuGet: "info : …"
_LEVEL_WORDS = ("info", "warn", "log", "trce", "dbug", "fail", "crit")
_GERUND_PATH_RE = re.compile(r"[A-Z][a-z]+ing\s+(?:[A-Za-z]:\\|/|\.{1,2}/)")    # "Writing C:\tmp\x.tmp"
_KEY_NUMBER_RE = re.compile(r"\b\w+: \d")          # "total: 213, failed: 32, succeeded: 181"
_JSON_RE = re.compile(
    r"^[\[\]{}(),]+$"
    r"|^[{\[]\s*[\"'{\[]"
    r"|^[\"'][^\"']+[\"']\s*:"                                       # "key": …
    r"|^[\w.$@-]+\s*:\s*[\[{]\s*$"                                    # key: {
    r"|^[\w.$@-]+\s*:\s*(?:[\"'][^\"']*[\"']|-?\d[\d.]*|true|false|null),?$"   # key: 'literal',
)
_CODE_RE = re.compile(     # anchored at the start of the line (used with .match)
    r"(?:import|from\s+\S+\s+import|def|class|const|let|var|function|return|public|private|protected|static|"
    r"using|namespace|package|export|async|await|fn|impl|struct|enum|interface|type)\s+\S+\s*[^\w\s]"
    r"|(?:#include|#define|diff --git|@@|\+\+\+|if\s*\(|for\s*\(|while\s*\(|}\s*else|<\?php|try\s*{|"
    r"catch\s*\(|print\(|console\.\w+\(|self\.|this\.|//|/\*|\*/|<!--|[})])"
    r"|(?:public|private|protected|internal|static|async|override|virtual|func|void|int|string|bool)\b.*\w\s*\("
    r"|[\w.$]+\s?\([^()]*\)\s*;?$"                                   # a bare call: foo.bar(x)
    r"|(?:foreach|switch|using|lock|elif|else if)\s*\("
)


# All of the above that are anchored at the start of a line, as one pattern: one call per line.
_NOISE_START_RE = re.compile("|".join(f"(?:{rx.pattern})" for rx in (
    _SHELL_PROMPT_RE, _RULE_RE, _URL_ONLY_RE, _PATH_REF_RE, _LOG_RE, _JSON_RE, _CODE_RE)))


def _log_like(line):
    """Log lines recognised anywhere in the line; cheap checks first."""
    if "s)" in line and _TIMED_RE.search(line):
        return True
    if ":" in line and any(word in line for word in _LEVEL_WORDS) and _LEVEL_RE.search(line):
        return True
    if _GERUND_PATH_RE.match(line):
        return True
    return line.count(": ") >= 3 and len(_KEY_NUMBER_RE.findall(line)) >= 3


def _code_like(line):
    return line.endswith((";", "{")) or "=>" in line


_TAG_RE = re.compile(r"</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>")
_HEADING_RE = re.compile(r"^#{1,6}\s+")
_LIST_RE = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+")
_FENCE_RE = re.compile(r"^\s*(`{3,}|~{3,})\s*([^\s`]*)")
_PLAIN_RE = re.compile(r"[^\W\d_][\w ,.'’\"?!()/&+-]*")
_WORD_RE = re.compile(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*[.!?…]*")


_NOT_LETTERS_RE = re.compile(r"[\W\d_]+")
_ASCII_LETTERS = string.ascii_letters.encode()
_SYMBOLS = b"{}[]()<>=;$|&^%"
_NOT_SYMBOLS_RE = re.compile(r"[^{}\[\]()<>=;$|&^%]+")


def _letter_ratio(text):
    """Letters among the characters that are not spaces."""
    visible = len(text) - text.count(" ") - text.count("\t")
    if visible <= 0:
        return 0.0
    if text.isascii():      # bytes.translate counts in C
        raw = text.encode()
        return (len(raw) - len(raw.translate(None, _ASCII_LETTERS))) / visible
    return len(_NOT_LETTERS_RE.sub("", text)) / visible


def _symbols(text):
    """How many of {}[]()<>=;$|&^% the text holds."""
    if text.isascii():
        raw = text.encode()
        return len(raw) - len(raw.translate(None, _SYMBOLS))
    return len(_NOT_SYMBOLS_RE.sub("", text))


def is_noise(line):
    """True for a line a person skips when looking for what was asked or said: a shell
    prompt, a banner or rule, a bare path or URL, a pasted log line or stack frame, a JSON
    fragment, a table row, markup or code. `line` is stripped of surrounding spaces."""
    if not line:
        return True
    if _NOISE_START_RE.match(line):
        return True
    if " " in line and _PLAIN_RE.fullmatch(line):
        # Words and ordinary punctuation only: prose, unless a log line ("Running tests (0.5s)").
        return _log_like(line)
    if line[0] in "│┃║|✖✗×⚠✓✔" or not line.isascii() and len(_BOX_CHARS_RE.findall(line)) >= 2:
        return True
    if " " not in line:
        # One token: prose only when it is a plain word, or CJK text (which has no spaces).
        if has_cjk(line):
            return len(_CJK_RE.findall(line)) < 4
        return not _WORD_RE.fullmatch(line)
    if line.startswith("\\") and re.match(r"\\[A-Za-z]+", line) or line.count("\\") >= 3 and "{" in line:
        return True         # LaTeX: \subsection{…}, \begin{equation}
    if _code_like(line) or _log_like(line):
        return True
    if error_at(line) == 0:     # a pasted error message ("TypeError: …", "error[E0382]: …")
        return True
    if "<" in line:
        untagged = _TAG_RE.sub("", line).strip()
        if not untagged or (untagged != line and line.startswith("<") and _letter_ratio(untagged) < 0.6):
            return True
    if _letter_ratio(line) < 0.55:
        return True
    return _symbols(line) > max(3, len(line) // 12)


# -- error messages ---------------------------------------------------------------------------

# An exception or error type with its message: "KeyError: 'x'", "stripe.error.SignatureVerificationError: No …",
# "Error [ERR_MODULE_NOT_FOUND]: Cannot …". Found by its suffix; the dotted name before it is walked back to.
_EXCEPTION_RE = re.compile(r"(?:Error|Exception|Fault)(?:\s*\[[\w-]+\])?:\s*\S")
_ERROR_START_RE = re.compile(
    r"(?:error|fatal|panic|Error|Fatal|Panic|ERROR|FATAL|PANIC)(?:\[[\w-]+\])?:\s*\S"     # error[E0382]: …
    r"|\d+:\d+\s+error\s+\S"                                                         # eslint: 3:10 error …
    r"|Error \(active\)|FAILED\s+\S+::")                                              # Visual Studio, pytest
_ERROR_INSIDE_RE = re.compile(
    r"(?:\.\w+|\))(?:\(\d+(?:,\d+)?\)|:\d+(?::\d+)?)\s*:?\s*-?\s*(?:fatal )?error\b"     # x.cs(147): error
    r"|\berror\s+[A-Z]{1,4}\d{3,5}\s*:")                                              # error TS2322:
_ERROR_PHRASES = ("npm ERR!", "Uncaught ", "Segmentation fault", ": command not found", ": No such file or directory",
                  ": Permission denied")
# Code that mentions an error is not an error: raise/throw statements, log calls, handlers.
_RAISING_RE = re.compile(r"\b(?:raise|throw|new|except|catch|console\.\w+|print|logger|logging|log\.\w+|"
                         r"isinstance|assert(?:Raises|Throws)?|expect|pytest\.raises|return)\b\s*[(\w]|=\s*\S")


def _error_start(line):
    """Where an error message starts in `line`, or None (no check for code)."""
    if _ERROR_START_RE.match(line):
        return 0
    found = []
    if "Error" in line or "Exception" in line or "Fault" in line:
        match = _EXCEPTION_RE.search(line)
        if match:
            start = match.start()
            while start > 0 and (line[start - 1].isalnum() or line[start - 1] in "_."):
                start -= 1          # back over the type's name and its dotted module path
            found.append(start)
    if "error" in line:
        match = _ERROR_INSIDE_RE.search(line)
        if match:
            found.append(match.start())
    for phrase in _ERROR_PHRASES:
        at = line.find(phrase)
        if at >= 0:
            found.append(at)
    return min(found) if found else None


def error_at(line):
    """Where the error message in `line` starts, or None when it holds none (code that
    raises or logs an error does not count)."""
    if not ("rror" in line or "xception" in line or "ERR" in line or "Fault" in line or "FAIL" in line
            or "atal" in line or "ATAL" in line or "anic" in line or "ANIC" in line or "Uncaught" in line
            or "not found" in line or "No such" in line or "denied" in line or "Segmentation" in line):
        return None
    start = _error_start(line)
    if start is None:
        return None
    if _RAISING_RE.search(line[:start]) or _RAISING_RE.match(line):
        return None
    return start


def has_error(text):
    """True when `text` holds an error message (see `error_at`)."""
    return error_at(text) is not None


# -- a block as prose and code ------------------------------------------------------------------

@dataclass
class Fence:
    lang: str            # the fence's language word ("python", "" when none), lowercased
    lines: list          # its lines, as written
    intro: str           # the prose line just before it ("we get this error:"), stripped


@dataclass
class TextView:
    """A block's text split the way a reader skims it."""

    units: list = field(default_factory=list)    # prose: (kind, text) with kind para | item | heading | quote
    fences: list = field(default_factory=list)   # [Fence]
    skipped: list = field(default_factory=list)  # lines outside fences that are not prose (pasted output)


# A line that introduces pasted output: "we get this error:", "my terminal says:".
OUTPUT_INTRO_RE = re.compile(
    r"(?:error|errors|exception|traceback|fails|failed|failing|failure|crash|crashes|warning|warnings|stack trace|"
    r"output|log|logs|says|said|got|get|getting|shows|showed|message|console|terminal|错误|报错|エラー|ошибк)"
    r"\w*\W*:\s*$", re.IGNORECASE)


def read_text(text, *, pasted=False):
    """A `TextView` of `text`: prose units with Markdown emphasis removed, fenced code, and
    the skipped (noise) lines. Indented lines outside a list, tab-separated rows and the
    lines right after "…this error:" (up to a blank line) are taken for pasted output; with
    `pasted` (a person's message, where logs get pasted), so is a line or two of prose
    wedged between pasted lines with no blank line around them."""
    view = TextView()
    paragraph, fence, last_prose = [], None, ""
    pasting = ""            # "pending" after an intro line, "on" inside the pasted lines
    after_skip = False      # the last non-blank line was skipped
    wedged = False          # the current paragraph (or last item) began right after a skipped line

    def flush():
        if paragraph:
            view.units.append(("para", " ".join(paragraph)))
            paragraph.clear()

    def skip(line):
        nonlocal after_skip, wedged
        wedged = wedged and pasted
        if wedged and paragraph and len(paragraph) <= 2:
            view.skipped.extend(paragraph)          # "Running tests for X" inside a build log
            paragraph.clear()
        elif wedged and not paragraph and view.units and view.units[-1][0] == "item" and last_unit_raw:
            view.units.pop()
            view.skipped.append(last_unit_raw[0])
        flush()
        last_unit_raw.clear()
        view.skipped.append(line)
        after_skip, wedged = True, False

    last_unit_raw = []
    for raw in text.splitlines():
        if fence is not None:
            stripped = raw.strip()
            if stripped.startswith(fence.marker):
                view.fences.append(Fence(fence.lang, fence.lines, fence.intro))
                fence, pasting = None, ""       # the fence was what the intro line announced
            else:
                fence.lines.append(raw)
            continue
        opening = _FENCE_RE.match(raw)
        if opening:
            flush()
            after_skip = wedged = False
            fence = _OpenFence(opening.group(1)[:3], opening.group(2).split(":")[0].lower(), [], last_prose)
            continue
        stripped = raw.strip()
        if not stripped:
            flush()
            pasting = "pending" if pasting == "pending" else ""
            after_skip = wedged = False
            last_unit_raw.clear()
            continue
        if pasting and stripped.endswith(("?", "？")) and not is_noise(stripped):
            pasting = ""            # the user went on to ask something
        indent = len(raw) - len(raw.lstrip())
        if pasting:
            pasting = "on"
        if (pasting or stripped.count("\t") >= 2
                or indent >= 4 and not (view.units and view.units[-1][0] == "item" and not paragraph)):
            skip(stripped)
            continue
        if _HEADING_RE.match(stripped):
            flush()
            heading = clean_markup(_HEADING_RE.sub("", stripped))
            if heading and not is_noise(heading):
                view.units.append(("heading", heading))
                last_prose = heading
            after_skip = wedged = False
            continue
        kind = "para"
        if stripped.startswith(">"):
            kind, stripped = "quote", stripped.lstrip("> ").strip()
        elif _LIST_RE.match(stripped):
            kind, stripped = "item", _LIST_RE.sub("", stripped, count=1)
            stripped = re.sub(r"^\[[ xX]\]\s*", "", stripped)      # task-list boxes
        cleaned = clean_markup(stripped)
        if is_noise(cleaned):
            skip(stripped)
            continue
        last_prose = cleaned
        pasting = "pending" if cleaned.endswith(":") and OUTPUT_INTRO_RE.search(cleaned[-60:]) else ""
        if kind == "para":
            if not paragraph:
                wedged = after_skip
            paragraph.append(cleaned)
        else:
            flush()
            wedged = after_skip
            view.units.append((kind, cleaned))
            last_unit_raw[:] = [stripped]
        after_skip = False
    flush()
    if fence is not None:
        view.fences.append(Fence(fence.lang, fence.lines, fence.intro))
    return view


@dataclass
class _OpenFence:
    marker: str
    lang: str
    lines: list
    intro: str


_EMPHASIS_RE = re.compile(r"(\*\*|__)(.+?)\1")
_LINK_RE = re.compile(r"!?\[([^\]]*)\]\((?:[^()\s]|\([^()]*\))*\)")
_MENTION_RE = re.compile(r"(?<![\w@/:.])@(?P<ref>[^\s()]+[^\s().,;:!?])(?P<range>\s*\(\d+\s*-\s*\d+\))?")
FILE_EXTENSIONS = (
    "py|pyi|ts|tsx|js|jsx|mjs|cjs|go|rs|cs|java|kt|rb|php|md|mdc|mdx|json|jsonl|yaml|yml|toml|ini|cfg|conf|sh|ps1|"
    "psm1|bat|cmd|sql|html|htm|css|scss|vue|svelte|c|h|cpp|hpp|cc|swift|m|txt|csv|lock|env|xml|gradle|csproj|sln|"
    "wasm|proto|tf|ipynb|r|lua|dart|ex|exs|erl|hs|ml|scala|clj|pdf|png|jpg|jpeg|gif|svg|mp4|zip|log|dockerfile")
_HAS_EXTENSION_RE = re.compile(rf"\.(?:{FILE_EXTENSIONS})$", re.IGNORECASE)


def clean_markup(text):
    """`text` without Markdown emphasis, link targets and inline HTML tags, with editor file
    mentions (`@src\\app.py (10-20)`) reduced to the file's name; spaces collapsed. Code
    spans (`…`) are left as they are."""
    if "`" in text:
        pieces = re.split(r"(`[^`]*`)", text)
        return " ".join("".join(piece if piece.startswith("`") and piece.endswith("`") and len(piece) > 1
                                else _clean_piece(piece) for piece in pieces).split())
    return " ".join(_clean_piece(text).split())


def _clean_piece(text):
    if "**" in text:
        text = text.replace("**", "")      # bold, also when it wraps a code span: **`x`**
    if "*" in text or "_" in text:
        text = _EMPHASIS_RE.sub(r"\2", text)
    if "](" in text:
        text = _LINK_RE.sub(r"\1", text)
    if "<" in text:
        text = _TAG_RE.sub(" ", text)
    if "@" in text:
        text = _MENTION_RE.sub(_mention, text)
    return text


def _mention(match):
    ref = match.group("ref")
    name = re.split(r"[\\/]", ref.rstrip("\\/"))[-1]
    if ref.endswith(("/", "\\")):
        return name + "/"               # a folder: `@assets/`
    if _HAS_EXTENSION_RE.search(name) or len(name) < len(ref):
        return name
    # `@bash (999-1008)`: a selection from a terminal, not a file; `@ana`: a person.
    return "" if match.group("range") else match.group(0)


_LONG_PATH_RE = re.compile(r"(?<![^\s`'\"(])(?:[A-Za-z]:)?(?:[\\/]?[\w.@~-]+[\\/]){2,}(?P<tail>[\w.@-]+[\\/]?)")


def short_paths(text):
    """`text` with paths of three or more parts cut to their last part (for titles and questions)."""
    if "/" not in text and "\\" not in text:
        return text
    return _LONG_PATH_RE.sub(lambda m: m.group("tail"), text)


# -- sentences ----------------------------------------------------------------------------------

# The end of a sentence: its punctuation and any closing quotes or brackets, before a space;
# CJK full stops need no space. Abbreviations ("e.g.") and initials are joined back.
_SENTENCE_END_RE = re.compile(r"[.!?…][\"'”’)\]]*(?=\s+\S)|[。！？](?=\s*\S)")
_ABBREVIATIONS = frozenset({"e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "mr.", "mrs.", "dr.", "no.", "fig.",
                            "st.", "inc.", "ltd.", "jr.", "sr.", "(e.g.", "(i.e.", "ex.", "resp.", "incl.", "min.",
                            "max.", "sec.", "e.g.,", "i.e.,", "т.е.", "т.д.", "т.п.", "др."})
SENTENCE_ENDS = (".", "!", "?", "…", "。", "！", "？")


def _joins(previous):
    last = previous.rsplit(" ", 1)[-1].lower()
    return last in _ABBREVIATIONS or bool(re.search(r"(?:^|\s)(?:\w|\d+)\.$", previous))


def sentences(text):
    """The sentences of one prose unit, in order, stripped."""
    out, start = [], 0
    for match in _SENTENCE_END_RE.finditer(text):
        part = text[start:match.end()].strip()
        start = match.end()
        if part:
            if out and _joins(out[-1]):
                out[-1] = f"{out[-1]} {part}"
            else:
                out.append(part)
    rest = text[start:].strip()
    if rest:
        if out and _joins(out[-1]):
            out[-1] = f"{out[-1]} {rest}"
        else:
            out.append(rest)
    return out


# -- narration --------------------------------------------------------------------------------

# What an agent says about what it is about to do ("Let me check", "I'll run the tests",
# "Searching the codebase for …") or small talk; a summary wants what was done.
_INTENT_RE = re.compile(
    r"^(?:(?:let me|let's|i'll|i will|i'm going to|i am going to|now,? let|first,? let|next,? let|next,? i|"
    r"i need to|i can see|i see|looking at|checking|great|perfect|excellent|okay|ok|sure|now i|i'm|i am|"
    r"we need to|to do this|now,? |first,? |next,? |then,? |the user|user|quickly|"
    r"good|nice|alright|got it|understood|absolutely|certainly|of course|here(?:'s| is) (?:what|how|my|the plan))\b"
    r"|我来|让我|我将|首先|现在让我|现在我来|接下来|сначала|давайте|теперь я|まず)", re.IGNORECASE)
_PROGRESS_RE = re.compile(r"^(?!(?:Nothing|Everything|Something|Anything|String|Thing|Missing|During|Pending)\b)"
                          r"(?:[A-Z][a-z]+ly )?[A-Za-z][a-z]+ing\b(?! (?:is|was|are|were|now|still)\b)")


def is_narration(sentence):
    """True for an agent's note about what it is about to do, or small talk."""
    sentence = sentence.replace("’", "'")
    return bool(_INTENT_RE.match(sentence) or _PROGRESS_RE.match(sentence))


# -- widths and shortening ----------------------------------------------------------------------

def is_wide(char):
    return unicodedata.east_asian_width(char) in ("W", "F")


def width(text):
    """Display width: CJK and other wide characters count 2."""
    if text.isascii():
        return len(text)
    return sum(2 if is_wide(c) else 1 for c in text)


_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def has_cjk(text):
    """True when `text` holds Chinese, Japanese or Korean letters (written without spaces)."""
    return not text.isascii() and _CJK_RE.search(text) is not None


_CLAUSE_BREAKS = (", ", "; ", " - ", " – ", " — ", ": ", "，", "、", "；", "：", " (")


def condense(text, limit):
    """`text` cut to at most `limit` display columns: at a clause break when one falls in
    the second half, else at a word boundary, else (CJK) anywhere; '…' marks a cut."""
    if width(text) <= limit:
        return text
    cut, used = [], 0
    for char in text:
        used += 2 if (not char.isascii() and is_wide(char)) else 1
        if used > limit - 1:
            break
        cut.append(char)
    cut = "".join(cut)
    best = max(cut.rfind(mark) for mark in _CLAUSE_BREAKS)
    opened = cut.rfind("(")
    if opened > cut.rfind(")") and opened >= len(cut) * 0.4:
        best = max(best, opened) if best < opened else opened      # not inside "( … )"
    if best >= len(cut) * 0.5 or best == opened >= len(cut) * 0.4:
        cut = cut[:best]
    else:
        space = cut.rfind(" ")
        if space >= len(cut) * 0.5 and not has_cjk(cut[space:]):
            cut = cut[:space]
    return cut.rstrip(" ,;:-–—(，、；：") + "…"


def first_upper(text):
    """`text` with its first letter capitalised when it starts with a plain lowercase word."""
    if text[:1].isascii() and text[:1].islower() and re.match(r"[a-z]+(?:[\s,;:!?'’]|$)", text):
        return text[0].upper() + text[1:]
    return text


def end_sentence(text):
    """`text` ending with sentence punctuation (a full stop added when it has none)."""
    text = text.rstrip(" ,;:")
    if not text or text.endswith(SENTENCE_ENDS):
        return text
    return text + ("。" if has_cjk(text[-1]) else ".")
