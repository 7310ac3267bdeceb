"""One short line per tool call (docs/design.md "Connectors": `Bash: git status`, `Edit: src/app.py`,
`apply_patch: a.py, b.py`), the way every connector writes them.

This module owns the line's shape (`tool_line`), the command a person would have typed
from the argument lists agents record (`shell_command`), the files an `apply_patch` envelope
touches, and two ways to name a call from its arguments: a table of rules per tool name
(`mapped_tool_line`, for formats whose tools are renamed to Claude Code's names) and a
generic rule for OpenAI-shaped calls (`call_line`). Pure functions; no Django here.
"""

import json
import os
import re
import shlex

from .text import one_line

# How much of a tool line a connector keeps. Far more than is shown (the pipeline's `clean`
# shortens a line to `text.ONE_LINE_CHARS` after redacting it): a key that straddles the
# display cut is then redacted whole, never stored minus its last characters (docs/design.md "Redaction").
TOOL_LINE_BOUND = 4_000


def tool_line(name, detail=""):
    """`Name: detail`, or just `Name` when there is no detail; the detail is its first line,
    kept whole up to TOOL_LINE_BOUND (cut between words: see `text.whole_words`): it is cut to the display length only
    after redaction, by the pipeline."""
    detail = one_line(detail, TOOL_LINE_BOUND) if isinstance(detail, str) else ""
    return f"{name}: {detail}" if detail else str(name)


def first_argument(arguments):
    """A short rendering of a tool's first argument, for tools without a dedicated rule:
    a string as its first line, anything else as compact JSON."""
    if not isinstance(arguments, dict) or not arguments:
        return ""
    value = next(iter(arguments.values()))
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return ""


# -- shell commands and patches

_SHELLS = {"bash", "sh", "zsh", "dash", "fish", "ksh"}
_POWERSHELLS = {"powershell", "powershell.exe", "pwsh", "pwsh.exe"}


def shell_command(command):
    """The command a person would have typed: `["bash", "-lc", "git status"]` → `git status`;
    other argument lists are shell-joined; a string is returned as is; "" for anything else."""
    if isinstance(command, str):
        return command
    if not isinstance(command, list) or not all(isinstance(part, str) for part in command):
        return ""
    if len(command) >= 3:
        program = os.path.basename(command[0]).lower()
        flag = command[-2]
        if program in _SHELLS and flag.startswith("-") and "c" in flag:
            return command[-1]
        if program in _POWERSHELLS and flag.lower() in ("-command", "-c"):
            return command[-1]
    return shlex.join(command)


_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$", re.MULTILINE)


def patch_paths(patch):
    """The files an `apply_patch` envelope touches, in order, without repeats."""
    if not isinstance(patch, str):
        return []
    return list(dict.fromkeys(_PATCH_FILE.findall(patch)))


def apply_patch_line(patch):
    """`apply_patch: a.py, b.py` for an `apply_patch` envelope."""
    paths = patch_paths(patch)
    return tool_line("apply_patch", ", ".join(paths))


# -- naming a call by a table of rules (Gemini CLI, pi)

def first_field(*names):
    """A detail rule: the first of `names` that holds a non-blank string."""
    def pick(arguments):
        return next((arguments[name] for name in names
                     if isinstance(arguments.get(name), str) and arguments[name].strip()), "")
    return pick


def command_field(*names):
    """A detail rule for a shell tool: the command as typed (argument lists are joined)."""
    def pick(arguments):
        return next((shell_command(arguments[name]) for name in names if arguments.get(name)), "")
    return pick


def mapped_tool_line(name, arguments, table):
    """One line for a tool call: `table` maps a tool name to `(label, rule)`, where `rule`
    picks the detail from the arguments (`Bash: git status`); other tools keep their own
    name and show their first argument."""
    name = name if isinstance(name, str) and name else "tool"
    arguments = arguments if isinstance(arguments, dict) else {}
    if name not in table:
        return tool_line(name, first_argument(arguments))
    label, rule = table[name]
    detail = rule(arguments)
    return tool_line(label, detail if isinstance(detail, str) else "")


# -- naming an OpenAI-shaped call by its arguments (Hermes, OpenCode)

_SHELL_TOOLS = frozenset({"terminal", "shell", "bash", "sh", "run_command", "execute_command", "run_shell_command",
                          "exec_command", "local_shell", "command"})
# The argument that says what a call is about, in order of preference: a search's pattern or
# query, a URL, then a file (`write` puts the content first, `patch` its mode), else the first.
_SUBJECT_KEYS = ("pattern", "query", "url", "path", "file_path", "filePath", "filepath", "file", "target_file")


def call_line(name, arguments, *, raw=""):
    """One line for a tool call: `Bash: <command>` for shell tools, `apply_patch: a.py` for a
    patch envelope, else `<name>: <subject>` (see `_SUBJECT_KEYS`) or `<name>: <first argument>`;
    `raw` (the unparsed arguments) stands in when nothing else names the call."""
    name = name if isinstance(name, str) and name else "tool"
    arguments = arguments if isinstance(arguments, dict) else {}
    if name.lower() in _SHELL_TOOLS:
        return tool_line("Bash", shell_command(arguments.get("command") or arguments.get("cmd") or raw))
    patch = arguments.get("patchText") or arguments.get("patch") or arguments.get("input")
    if isinstance(patch, str) and "*** Begin Patch" in patch:
        return apply_patch_line(patch)
    subject = next((arguments[key] for key in _SUBJECT_KEYS if isinstance(arguments.get(key), str) and arguments[key]),
                   None)
    return tool_line(name, subject or first_argument(arguments) or raw)
