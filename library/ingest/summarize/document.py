"""One segment read once for the extractive summariser: its blocks with their prose, code
and skipped lines, the tool calls split into name and argument, the files the agent
changed and the shell commands it ran. Built by `Document(blocks)`; every later step of
`extractive` reads from it, so each block's text is parsed once.
"""

import re
from dataclasses import dataclass
from functools import cached_property

from library.ingest.summarize.prose import TextView, read_text, sentences

# Tool names under which the connectors report shell commands (Claude Code, Codex, Gemini
# CLI, OpenCode, pi, Hermes, Cursor through SpecStory).
SHELL_TOOLS = frozenset({
    "bash", "shell", "sh", "zsh", "exec", "exec_command", "local_shell", "run_shell_command", "terminal",
    "command", "run_command", "powershell", "run_terminal_cmd", "run_terminal_command", "run_terminal_command_v2",
    "run_in_terminal", "execute_command", "cmd",
})
EDIT_TOOLS = frozenset({
    "edit", "multiedit", "write", "edit_file", "edit_file_v2", "write_file", "write_to_file", "create_file",
    "search_replace", "apply_patch", "str_replace", "str_replace_editor", "replace", "copilot_replacestring",
    "copilot_createfile", "notebookedit", "replace_in_file", "insert_edit_into_file", "patch",
})
_TOOL_RE = re.compile(r"^([\w.-]+):\s+(.+)$", re.DOTALL)
_FILE_RE = re.compile(r"^[\w.@~:/\\-]*[\w-]\.[A-Za-z][\w-]{0,9}$")
# Boilerplate that agent front-ends put in the user's turn; it is nobody's request.
_BOILERPLATE_RE = re.compile(
    r"^(?:Implement the plan as specified|This session is being continued from a previous conversation|"
    r"System: Please continue|Caveat: The messages below were generated|\[Request interrupted)", re.IGNORECASE)
_CUT_AT = ("--- Cursor Command:", "<attached_files>", "<additional_data>")


@dataclass
class Part:
    """One block of the segment, read."""

    pos: int                 # its position in the segment
    role: str
    text: str
    turn: int                # how many user requests came before or with it
    tool: str = ""           # tool blocks: the tool's name, lowercased
    arg: str = ""            # tool blocks: what follows "Name: "

    @cached_property
    def view(self) -> TextView:
        text = self.text
        if self.role == "user":
            for marker in _CUT_AT:
                cut = text.find(marker)
                if cut >= 0:
                    text = text[:cut]
        return read_text(text, pasted=self.role == "user") if self.role != "tool" else TextView()

    @cached_property
    def boilerplate(self):
        return self.role == "user" and bool(_BOILERPLATE_RE.match(self.text.lstrip()))

    @cached_property
    def sentences(self):
        """[(unit kind, sentence)] of the prose, in order."""
        # Typographic apostrophes are made plain so that "I’ll" reads like "I'll" to the rules.
        return [(kind, sentence.replace("’", "'")) for kind, unit in self.view.units for sentence in sentences(unit)]

    @property
    def is_shell(self):
        return self.tool in SHELL_TOOLS and bool(self.arg) and self.arg not in ("Parameters:", "undefined")

    @property
    def edited_files(self):
        """The files an edit tool call names (apply_patch lists several)."""
        if self.tool in EDIT_TOOLS:
            names = [name.strip() for name in self.arg.split(",")]
        elif not self.tool and _FILE_RE.match(self.text.strip()):
            names = [self.text.strip()]       # SpecStory's older exports: a code block applied to a file
        else:
            return []
        return [name for name in names if _FILE_RE.match(name) and name not in ("undefined",)]


class Document:
    """A segment's blocks, read. `blocks` is a sequence of (role, text)."""

    def __init__(self, blocks):
        parts, turn = [], 0
        for role, text in blocks:
            text = text.strip()
            if not text:
                continue
            if role == "user":
                turn += 1
            part = Part(pos=len(parts), role=role, text=text, turn=turn)
            if role == "tool":
                match = _TOOL_RE.match(text)
                if match:
                    part.tool, part.arg = match.group(1).lower(), " ".join(match.group(2).split())
                elif re.fullmatch(r"[\w.-]+", text):
                    part.tool = text.lower()
            parts.append(part)
        self.parts = parts

    def of(self, *roles):
        return [part for part in self.parts if part.role in roles]

    @cached_property
    def requests(self):
        """The user's blocks that are someone's words (not an agent front-end's boilerplate)."""
        return [part for part in self.of("user") if not part.boilerplate]

    @cached_property
    def answers(self):
        return self.of("assistant")

    @cached_property
    def edited_files(self):
        """Files the agent changed, in order of first change, as short as they stay distinct."""
        seen = {}
        for part in self.of("tool"):
            for name in part.edited_files:
                seen.setdefault(name, None)
        return shortest_distinct(list(seen))

    def next_answer(self, pos):
        """The first assistant block after position `pos` (before the next user block), or None."""
        for part in self.parts[pos + 1:]:
            if part.role == "user":
                return None
            if part.role == "assistant":
                return part
        return None


def shortest_distinct(paths):
    """The paths without their common leading folders ('/home/ana/shop/cart.py' and
    '/home/ana/shop/tests/t.py' → 'cart.py', 'tests/t.py'); one path → its file name."""
    split = [re.split(r"[\\/]+", path) for path in paths]
    if len(split) == 1:
        return [split[0][-1]]
    common = 0
    while all(len(parts) > common + 1 for parts in split) and len({parts[common] for parts in split}) == 1:
        common += 1
    return ["/".join(parts[common:]) for parts in split]
