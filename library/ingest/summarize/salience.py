"""The atoms of an extractive record, chosen by how much they stand out in the segment itself.

- `error`: error messages the user pasted or the agent quoted (exception lines, compiler
  diagnostics, `error:`/`fatal:` lines, the first line of a block the user introduced with
  "we get this error:"), each followed by a `fix`: the agent's sentence after it that says
  what solved it ("The fix …", "… by using … instead", "Replaced X with Y").
- `command`: shell commands the agent ran (or the user pasted from a shell fence) that
  did something — builds, tests, installs, commits — rather than look around (`ls`, `cat`,
  `git status`); a command re-run later or followed by "failed" gives way to its last run.
- `decision`: what the user settled ("use fnv1a hashes", "I would rather …", "don't change
  the CSV export", "let's keep …").
- `fact`: the files the agent changed, and a sentence about the most distinctive
  identifiers (rare-looking names used several times: snake_case, CamelCase, dotted names).
- `risk`: something the agent's last words leave open ("still fails", "not yet", "TODO").

Everything but the "Files changed: …" list is verbatim from the document (a sentence or a
line, cut at `ATOM_CHARS`), and the total is capped at `MAX_ATOMS`, the least salient kinds
dropped first. Deterministic: no state, no statistics beyond the segment (in-document
salience stands in for the spec's "TF-IDF against the library", which would make a record
depend on what else is stored).
"""

import math
import re
from dataclasses import dataclass

from library.ingest.summarize.prose import FILE_EXTENSIONS, OUTPUT_INTRO_RE, error_at, has_error, is_narration

ATOM_CHARS = 220
MAX_ATOMS = 12
MAX_ERRORS = 3
MAX_COMMANDS = 4
MAX_DECISIONS = 3
MAX_FACTS = 3

CODE_LANGS = frozenset({
    "python", "py", "javascript", "js", "jsx", "typescript", "ts", "tsx", "java", "kotlin", "go", "rust", "rs",
    "c", "cpp", "c++", "h", "csharp", "cs", "c#", "ruby", "rb", "php", "swift", "scala", "html", "css", "scss",
    "json", "yaml", "yml", "toml", "xml", "sql", "vue", "svelte", "dart", "lua", "r", "matlab", "diff", "ini",
    "dockerfile", "makefile", "markdown", "md", "mdx", "latex", "tex", "graphql", "proto", "hcl", "terraform",
})
SHELL_LANGS = frozenset({"bash", "sh", "shell", "zsh", "console", "terminal", "powershell", "ps", "ps1", "pwsh",
                         "cmd", "bat", "fish", "shellsession"})

# -- errors and their fixes ---------------------------------------------------------------------

_FIX_VERBS = ("replaced|changed|added|removed|updated|moved|wrapped|switched|set|used|installed|renamed|converted|"
              "created|declared|imported|pinned|upgraded|downgraded|restructured|rewrote|fixed")
# What solved a problem, in four shapes; `says_fix` tries each only when its words are there.
_FIX_START_RE = re.compile(rf"(?:(?:the |this |a |one |my )?(?:fix|solution|workaround|resolution|remedy)\b"
                           rf"|(?:{_FIX_VERBS})\b)", re.IGNORECASE)
_FIX_PHRASE_RE = re.compile(
    r"\b(?:to fix (?:this|it|that|the)|fixed (?:it|this|that) by|resolved (?:it|this) by|solved (?:it|this) by"
    r"|this fixes|that fixes|which fixes|the fix (?:is|was)|fix(?:es|ed)? (?:the|this) (?:error|issue|problem))\b",
    re.IGNORECASE)
_FIX_BY_RE = re.compile(
    r"\bby (?:changing|replacing|adding|removing|using|setting|moving|wrapping|switching|updating|passing|calling|"
    r"making|restructuring|importing|installing|renaming|converting|checking|creating|declaring|casting|awaiting)\b",
    re.IGNORECASE)
_FIX_I_DID_RE = re.compile(rf"\bI(?:'ve| have)? (?:{_FIX_VERBS})\b")
_FIX_FOREIGN_RE = re.compile(r"修复|解决|改为|改成|替换为|исправ|решени|замен|修正|解決", re.IGNORECASE)


def says_fix(sentence):
    """True when the sentence says what solved a problem ("The fix is …", "… by using …",
    "Replaced X with Y", "I changed …"). Cheap checks first: this runs on many sentences."""
    if _FIX_START_RE.match(sentence):
        return True
    lower = sentence.lower()
    if ("fix" in lower or "solved" in lower or "resolved" in lower) and _FIX_PHRASE_RE.search(sentence):
        return True
    if " by " in lower and _FIX_BY_RE.search(sentence):
        return True
    if ("I " in sentence or "I'" in sentence) and _FIX_I_DID_RE.search(sentence):
        return True
    return not sentence.isascii() and bool(_FIX_FOREIGN_RE.search(sentence))


_FIX_WEAK_RE = re.compile(
    r"\binstead\b|\bshould (?:be|use)\b|\bneeds? to (?:add|use|change|set|install|import|remove|call|be)\b"
    r"|\byou(?:'ll| will)? need to\b|\bmake sure\b|\bthe (?:issue|problem|cause) (?:is|was)\b|\bbecause\b",
    re.IGNORECASE)
@dataclass
class _Error:
    text: str
    pos: int            # block position where first seen
    line: int           # order within the segment
    user: bool          # pasted by the user
    count: int = 1
    strong: bool = True
    quoted: bool = False    # named in someone's prose (`…`), not only pasted output


_BARE_EXCEPTION_RE = re.compile(r"^(?:[A-Za-z_]\w*\.)+\w*(?:Exception|Error)$")


def _error_key(text):
    key = re.sub(r"\d+", "#", text.lower())
    key = re.sub(r"[\w.~-]*[\\/][\w.\\/~-]*", "/", key)
    return key[:48]


def _error_text(line):
    """The error message in `line`, verbatim: from where the message starts when a long
    prose prefix comes before it, else the whole line; cut at ATOM_CHARS."""
    line = line.strip().strip("`").strip()
    if '\\"' in line:
        line = line.split("\\n", 1)[0]  # a message inside a JSON string: its first line
    start = error_at(line)
    if start is None:
        return None
    location = re.match(r"^(?:[A-Za-z]:)?[\w.\\/ -]*[\\/]([\w.-]+\.\w+(?:\(\d+(?:,\d+)?\)|:\d+(?::\d+)?))", line)
    if location and location.end() >= start:
        line = location.group(1) + line[location.end():]    # C:\dev\x\A.cs(147): error … → A.cs(147): error …
    elif start > 0 and not re.search(r"[\\/]|:\d", line[:start]):
        line = line[start:]         # prose before the message ("Setup threw exception. System.IO…")
    elif start > 40:
        line = line[start:]
    return clip(line.rstrip("`'\" "))


def clip(text, limit=ATOM_CHARS):
    text = " ".join(text.split()) if "\n" not in text else text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _errors(doc):
    found = {}
    order = 0

    def note(text, part, strong=True, quoted=False):
        nonlocal order
        # "x.cs(165): error test failed:" only announces the lines that follow; those count.
        if not text or len(text) < 8 or text.endswith(":"):
            return
        order += 1
        key = _error_key(text)
        if key in found:
            found[key].count += 1
            found[key].quoted = found[key].quoted or quoted
            if len(text) > len(found[key].text):      # a wrapped copy was cut short
                found[key].text = text
            return
        found[key] = _Error(text, part.pos, order, part.role == "user", strong=strong, quoted=quoted)

    for part in doc.parts:
        if part.role == "tool":
            continue
        view = part.view
        for n, line in enumerate(view.skipped):
            message = next((following for following in view.skipped[n + 1:n + 4] if following.startswith("Message=")),
                           None)
            if message and _BARE_EXCEPTION_RE.match(line):
                note(clip(f"{line}\n{message}"), part)      # .NET: the type, then "Message=…"
            else:
                note(_error_text(line), part)
        for fence in view.fences:
            if fence.lang in CODE_LANGS:
                continue
            hits = [_error_text(line) for line in fence.lines]
            hits = [hit for hit in hits if hit]
            for hit in hits:
                note(hit, part)
            if not hits and part.role == "user" and fence.intro.endswith(":") and OUTPUT_INTRO_RE.search(fence.intro[-60:]):
                first = next((line.strip() for line in fence.lines if line.strip()), "")
                if first and not first.startswith(("$", ">", "❯", "PS ")):
                    note(clip(first), part, strong=False)
        for _kind, unit in view.units:
            if "`" in unit:
                for span in re.findall(r"`([^`]{8,})`", unit):
                    if has_error(span):
                        note(_error_text(span), part, quoted=True)
    return list(found.values())


def _fix_for(doc, error):
    """The agent's sentence, after the error and before the next request, that says what
    fixed it; None when it never says."""
    best, best_score = None, 0
    error_words = set(re.findall(r"[A-Za-z_]\w{3,}", error.text))
    for part in doc.parts[error.pos:]:
        if part.role == "user" and part.pos > error.pos:
            break
        if part.role != "assistant":
            continue
        for kind, sentence in part.sentences:
            if kind == "heading" or len(sentence) < 25 or sentence.endswith("?") or is_narration(sentence):
                continue
            score = -2 if sentence.endswith(":") else 0     # "There are two ways to fix this:"
            if says_fix(sentence):
                score += 4
            elif _FIX_WEAK_RE.search(sentence):
                score += 1
            if not score:
                continue
            if set(re.findall(r"[A-Za-z_]\w{3,}", sentence)) & error_words:
                score += 1
            if "`" in sentence:
                score += 1
            if score > best_score:
                best, best_score = sentence, score
    if best is None or best_score < 2:
        return None
    return clip(best.rstrip(":").rstrip())


def error_atoms(doc):
    """[(error atom, fix atom or None, talked about)] for the most salient errors, in document
    order; "talked about" when the user pasted it, or someone named it in prose, or it was
    fixed (an error that only scrolled past in pasted output is not)."""
    errors = _errors(doc)
    # Look for fixes only among the likeliest errors: finding one reads the rest of the turn.
    errors.sort(key=lambda error: (-((3 if error.user else 0) + (2 if error.strong else 0) + min(error.count, 3)),
                                   error.line))
    scored = []
    for error in errors[: 2 * MAX_ERRORS]:
        fix = _fix_for(doc, error)
        score = (3 if error.user else 0) + (2 if error.strong else 0) + min(error.count, 3) + (3 if fix else 0)
        scored.append((score, -error.line, error, fix))
    scored.sort(key=lambda item: (-item[0], -item[1]))
    chosen = sorted(scored[:MAX_ERRORS], key=lambda item: item[2].line)
    return [({"kind": "error", "text": error.text}, {"kind": "fix", "text": fix} if fix else None,
             error.user or error.quoted or bool(fix))
            for _score, _line, error, fix in chosen]


# -- commands -----------------------------------------------------------------------------------

_CD_PREFIX_RE = re.compile(r"^(?:(?:cd|Set-Location|pushd)\s+(?:\"[^\"]*\"|'[^']*'|\S+)\s*(?:&&|;|\|\|)\s*)+",
                           re.IGNORECASE)
_LOOKING_AROUND = frozenset({
    "ls", "ll", "la", "dir", "cat", "type", "head", "tail", "less", "more", "pwd", "cd", "echo", "grep", "rg", "ag",
    "find", "fd", "wc", "which", "where", "whereis", "tree", "stat", "file", "sleep", "clear", "true", "date",
    "whoami", "env", "printenv", "history", "get-childitem", "get-content", "gci", "gc", "select-string",
    "set-location", "test-path", "get-command", "write-host", "sed", "awk", "nl", "du", "df", "ps", "open",
    "code", "xxd", "od", "hexdump", "realpath", "readlink", "basename", "dirname", "printf", "exit",
})
_LOOKING_GIT = frozenset({"status", "diff", "log", "show", "branch", "remote", "rev-parse", "ls-files", "config",
                          "blame", "grep", "describe", "fetch"})
_DOING_RE = re.compile(
    r"\b(?:test|tests|pytest|jest|vitest|mocha|build|install|add|remove|uninstall|lint|ruff|eslint|mypy|tsc|"
    r"typecheck|type-check|format|migrate|makemigrations|deploy|commit|push|merge|rebase|cherry-pick|clone|"
    r"checkout|switch|tag|compose|docker|kubectl|helm|terraform|cargo|dotnet|make|cmake|gradle|mvn|go|uv|pip|"
    r"poetry|npm|pnpm|yarn|bun|npx|brew|apt|apt-get|systemctl|curl|wget|ssh|scp|rsync|psql|sqlite3|alembic|"
    r"manage\.py|run|start|serve|dev|release|publish|upgrade|sync|init|create|generate|seed|restore)\b")
_FAILED_RE = re.compile(r"\b(?:fail(?:s|ed|ing|ure)?|error|errors|not found|cannot|can't|couldn't|could not|"
                        r"didn't work|doesn't work|did not|hung|hangs|timed out|denied|refused|missing|wrong|"
                        r"still|issue|problem|broke|broken)\b", re.IGNORECASE)
_PASSED_RE = re.compile(r"\b(?:pass(?:es|ed|ing)?|succeed(?:s|ed)?|success(?:ful(?:ly)?)?|works?|worked|"
                        r"clean|green|all good|built|installed|done|complete[ds]?|no errors?|up to date|"
                        r"is running|started)\b|✅|成功|完成|успешно", re.IGNORECASE)


def _core(command):
    """The command without leading `cd … &&` and with spaces collapsed (to spot re-runs)."""
    return " ".join(_CD_PREFIX_RE.sub("", command).split())


def _program(core):
    words = core.split()
    if not words:
        return "", ""
    first = words[0].lower().rsplit("/", 1)[-1]
    second = words[1].lower() if len(words) > 1 else ""
    return first, second


def _looks_around(core):
    first, second = _program(core)
    if first in _LOOKING_AROUND:
        return True
    return first == "git" and (second in _LOOKING_GIT or not second)


def _outcome(doc, part):
    """+1 when the agent's next words say it worked, -1 when they say it failed, else 0."""
    answer = doc.next_answer(part.pos)
    if answer is None:
        return 0
    first = answer.sentences[0][1] if answer.sentences else ""
    failed, passed = _FAILED_RE.search(first), _PASSED_RE.search(first)
    if failed and not (passed and passed.start() < failed.start()):
        return -1
    return 1 if passed else 0


_PROGRAM_RE = re.compile(r"^(?:[a-z0-9_.~-][\w.+~-]*|[./~][\w./\\~-]*|[A-Z]:\\\S*|[A-Z][a-z]+-[A-Z]\w+)$")
_NOT_PROGRAMS = frozenset({"import", "from", "def", "class", "if", "for", "while", "return", "print", "else",
                           "elif", "try", "except", "with", "const", "let", "var", "function", "fi", "done", "then",
                           "do", "esac", "end", "}", "{", "to", "the", "and", "a"})


def _looks_like_command(line):
    """A whole command: starts with a program, and is not cut inside a quote or a here-doc."""
    first = line.split(" ", 1)[0]
    return (bool(_PROGRAM_RE.match(first)) and first.lower() not in _NOT_PROGRAMS
            and error_at(line) is None and not re.match(r"^[\[\]{}()<>|=*#-]", line)
            and line.count('"') % 2 == 0 and line.count("'") % 2 == 0 and "<<" not in line
            and not line.endswith(("\\", "|", "&&")))


def _shell_fence_commands(part):
    """Commands in the shell fences of a block: prompted lines (`$ x`) anywhere, and every
    line of a fence labelled as shell."""
    for fence in part.view.fences:
        labelled = fence.lang in SHELL_LANGS
        if not labelled and fence.lang:
            continue
        for line in fence.lines:
            line = line.strip()
            prompt = re.match(r"^(?:\$|❯|PS [^>]*>|[\w.-]+@[\w.-]+:[^$]*\$)\s+", line)
            if prompt:
                line = line[prompt.end():]
            elif not labelled:
                continue            # an unlabelled fence: only prompted lines are commands
            if len(line) > 3 and not line.endswith("\\") and _looks_like_command(line):
                yield line


def command_atoms(doc):
    """The commands worth running again, in document order (at most MAX_COMMANDS)."""
    runs = []    # (core, text, pos, ran, outcome)
    for part in doc.parts:
        if part.role == "tool" and part.is_shell and _looks_like_command(_core(part.arg)):
            runs.append((_core(part.arg), part.arg, part.pos, True, _outcome(doc, part)))
        elif part.role in ("user", "assistant"):
            for line in _shell_fence_commands(part):
                runs.append((_core(line), line, part.pos, part.role == "user", 0))
    last = {}
    for n, (core, *_rest) in enumerate(runs):
        last[core] = n
    by_program = {}
    for n, (core, *_rest) in enumerate(runs):
        by_program.setdefault(_program(core), []).append(n)
    scored = []
    for n, (core, text, _pos, ran, outcome) in enumerate(runs):
        if last[core] != n or not core or _looks_around(core) or outcome < 0:
            continue
        # A later run of the same program and subcommand replaced this one (a retry, or the
        # same script with other arguments): keep the last.
        if by_program[_program(core)][-1] != n:
            continue
        repeats = sum(1 for other in runs if other[0] == core)
        score = 2 * ran + 2 * outcome + min(repeats, 3)
        if _DOING_RE.search(core):
            score += 3
        if len(text) > 160 or text.endswith("…"):
            score -= 2
        scored.append((score, n, core if _CD_PREFIX_RE.match(text) else text))
    scored.sort(key=lambda item: (-item[0], item[1]))
    chosen = sorted(scored[:MAX_COMMANDS], key=lambda item: item[1])
    return [{"kind": "command", "text": clip(text)} for _score, _n, text in chosen]


# -- decisions ----------------------------------------------------------------------------------

_DECISION_RE = re.compile(
    r"^(?:let'?s|lets|let us)\s+(?:use|go with|keep|switch|stick|not|stay|drop|move|make|call|name|put|store|"
    r"do it|go for)\b"
    r"|\b(?:we|i)(?:'ll| will| are going to|'re going to)\s+(?:use|go with|keep|switch to|stick with|not)\b"
    r"|\b(?:i'?d|i would) rather\b|\bi prefer\b|\bprefer(?:ably)?\b|\b(?:decided|decision)\b"
    r"|\binstead of\b|\bgo with\b|\bshould (?:not|never|always|only)\b|\bmust (?:not|always|never|use)\b"
    r"|^(?:use|keep|don'?t|do not|never|always|no need to|avoid|switch to|stick with|stay with|prefer|drop|"
    r"just use|only use|rename)\b"
    r"|不用|不要|改成|换成|改为|决定|давай|будем использовать|не надо|используй",
    re.IGNORECASE)


def decision_atoms(doc):
    """What the user settled, in their words (at most MAX_DECISIONS, in order)."""
    atoms, seen = [], set()
    for part in doc.requests:
        for kind, sentence in part.sentences:
            if kind in ("heading", "quote") or sentence.endswith(("?", "？", ":", "：")) or len(sentence) < 8:
                continue
            if (_DECISION_RE.search(sentence) and sentence.lower() not in seen
                    and 4 <= len(sentence.split()) <= 30):
                seen.add(sentence.lower())
                atoms.append({"kind": "decision", "text": clip(sentence)})
                if len(atoms) == MAX_DECISIONS:
                    return atoms
    return atoms


# -- distinctive names --------------------------------------------------------------------------

_NAME_RE = re.compile(
    r"(?<![\w./-])(?:"
    rf"[\w.-]*[\w-]\.(?:{FILE_EXTENSIONS})"
    r"|[A-Za-z]\w*_\w+"                       # snake_case
    r"|[a-z]+[A-Z]\w*"                        # camelCase
    r"|[A-Z][a-z0-9]+[A-Z]\w*"                # PascalCase with two humps
    r"|[A-Za-z]\w*(?:\.[A-Za-z]\w*){2,}"      # dotted.names.like.this
    r"|--[a-z][\w-]{2,}"                      # --flags
    r"|[A-Z]{2,5}\d{3,5}|ERR_[A-Z_]+"         # error codes
    r")(?![\w/-])")
_COMMON_NAMES = frozenset({"README.md", "package.json", "package-lock.json", "tsconfig.json", "__init__.py",
                           "node_modules", "JavaScript", "TypeScript", "GitHub", "PowerShell", "iPhone", "macOS",
                           "YouTube", "LinkedIn", "OpenAI", "ChatGPT", "PyPI", "NuGet", "WebSocket", "VSCode",
                           "localStorage", "useState", "useEffect", "setTimeout", "console.log", "self_", "e.g",
                           "i.e", "GitLab", "DevOps", "FastAPI", "NextJS", "PostgreSQL", "MySQL", "SQLite"})
_DECLARATIVE_RE = re.compile(r"\b(?:is|are|was|were|has|have|lives?|uses?|computes?|returns?|holds?|stores?|"
                             r"reads?|writes?|calls?|runs?|defines?|means?|handles?|contains?|takes?)\b")


_TOKEN_RE = re.compile(r"--[A-Za-z][\w-]+|[A-Za-z_][\w.-]*\w")


def _names_in(text):
    """The names in `text` (see _NAME_RE): tokens first, the full pattern only on those that
    have something a plain word lacks (an underscore, a dot, a capital or a digit inside)."""
    for token in _TOKEN_RE.findall(text):
        if len(token) < 5 or (token.isalpha() and (token.islower() or token.isupper() or token.istitle())):
            continue
        if _NAME_RE.fullmatch(token):
            yield token


def _specificity(name):
    score = 1.0
    if "_" in name.strip("_"):
        score += 1
    if re.search(r"[a-z][A-Z]", name):
        score += 1
    if re.search(r"\d", name):
        score += 0.5
    if name.count(".") >= 2 or "/" in name:
        score += 0.5
    if len(name) >= 12:
        score += 0.5
    return score


def distinctive_names(doc, limit=8):
    """The names that stand out in this segment: rare-looking (mixed case, underscores,
    dots, digits) and used in several blocks; [(name, score)], best first."""
    blocks_with, in_user = {}, set()
    for part in doc.parts:
        # What people wrote about (prose and tool arguments), not the code they pasted.
        text = part.arg if part.role == "tool" else " ".join(unit for _kind, unit in part.view.units)
        for name in dict.fromkeys(_names_in(text)):
            name = name.strip(".")
            if len(name) < 5 or name in _COMMON_NAMES:
                continue
            blocks_with[name] = blocks_with.get(name, 0) + 1
            if part.role == "user":
                in_user.add(name)
    scored = []
    for name, count in blocks_with.items():
        score = _specificity(name) * (1 + math.log2(count)) + (1 if name in in_user else 0)
        scored.append((score, name))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [(name, score) for score, name in scored[:limit]]


def fact_atoms(doc, taken):
    """Files changed, then a sentence of the agent's about each of the most distinctive
    names not already in `taken` (the text of the other atoms)."""
    atoms = []
    files = doc.edited_files
    if files:
        shown = ", ".join(files[:6]) + (f" and {len(files) - 6} more" if len(files) > 6 else "")
        atoms.append({"kind": "fact", "text": clip(f"Files changed: {shown}")})
    used = set()
    for name, _score in distinctive_names(doc):
        if len(atoms) >= MAX_FACTS:
            break
        if any(name in text for text in taken) or name in used:
            continue
        sentence = _sentence_about(doc, name)
        if sentence and sentence not in taken:
            atoms.append({"kind": "fact", "text": clip(sentence)})
            used.update(re.findall(_NAME_RE, sentence))
            taken = [*taken, sentence]
    return atoms


_ADDRESSING_RE = re.compile(r"^(?:please|let|make sure|check|note|try|run|see|you can|you could|you may|if you)\b",
                            re.IGNORECASE)


def _sentence_about(doc, name):
    """The agent's shortest plain statement (not an intention, not a question) naming `name`."""
    best = None
    for part in doc.answers:
        if name not in part.text:
            continue
        for kind, sentence in part.sentences:
            if name not in sentence or kind == "heading" or sentence.endswith(("?", ":")):
                continue
            if is_narration(sentence) or not (40 <= len(sentence) <= ATOM_CHARS) or _ADDRESSING_RE.match(sentence):
                continue
            if not _DECLARATIVE_RE.search(sentence):
                continue
            if best is None or len(sentence) < len(best):
                best = sentence
    return best


# -- what is left open --------------------------------------------------------------------------

_RISK_RE = re.compile(
    r"(?-i:\bTODO\b)|\b(?:still (?:fails|failing|broken|not|doesn't|does not|need)|not yet|remaining (?:issue|problem)s?|"
    r"left to do|known issue|limitation|caveat|won't work|will not work|doesn't (?:yet|handle|support)|"
    r"not (?:been )?tested|untested|still open|follow-up|out of scope)\b",
    re.IGNORECASE)


def risk_atoms(doc):
    """At most one sentence from the agent's last answer that says what is still open."""
    for part in reversed(doc.answers[-2:]):
        for kind, sentence in part.sentences:
            if kind != "heading" and 25 <= len(sentence) and _RISK_RE.search(sentence) and not sentence.endswith("?"):
                return [{"kind": "risk", "text": clip(sentence)}]
    return []


# -- all of them --------------------------------------------------------------------------------

def atoms(doc, pairs=None):
    """The record's atoms: error/fix pairs (`error_atoms(doc)` unless given), decisions,
    commands, facts, a risk; at most MAX_ATOMS."""
    pairs = error_atoms(doc) if pairs is None else pairs
    decisions = decision_atoms(doc)
    commands = command_atoms(doc)
    taken = [atom["text"] for error, fix, _user in pairs for atom in (error, fix) if atom]
    taken += [atom["text"] for atom in decisions + commands]
    facts = fact_atoms(doc, taken)
    risks = risk_atoms(doc)
    out = []
    for error, fix, _user in pairs:
        out.append(error)
        if fix:
            out.append(fix)
    out += decisions + commands + facts + risks
    # Past the cap, drop from the least salient kinds first.
    for kind in ("risk", "fact", "decision", "command", "fix", "error"):
        while len(out) > MAX_ATOMS and any(atom["kind"] == kind for atom in out):
            last = max(n for n, atom in enumerate(out) if atom["kind"] == kind)
            del out[last]
    seen, unique = set(), []
    for atom in out:
        if (atom["kind"], atom["text"]) not in seen:
            seen.add((atom["kind"], atom["text"]))
            unique.append(atom)
    return unique
