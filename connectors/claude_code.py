"""The `claude_code` connector type: a folder laid out like `~/.claude/projects`.

Units. Every `<project>/<session-id>.jsonl` is one unit whose id and original_ref are the
session id. Every subagent file is a unit of its own — newer
`<session-id>/subagents/agent-<id>.jsonl` (with `agent-<id>.meta.json`), older
`<project>/agent-<id>.jsonl` — with id `<parent session id>/agent-<id>` and the parent's
session id as original_ref, so its records point back to the session that started it.
`tool-results/` spill files are never read. Discovery stats files; only an old-style
subagent file is peeked at (its first lines) because its parent session is named inside.

Reading keeps what may reach the summariser (docs/design.md "Connectors"): user and assistant text and one
`tool` line per tool call. Everything else is dropped: tool results, thinking, images,
injected context (`<system-reminder>`, hook attachments), compaction summaries, meta and
caveat lines, slash-command and shell-escape noise. A slash command becomes a short user
entry `/name args`, except pure session housekeeping (`/exit`, `/model`, …) which says
nothing about the work and would otherwise become the "first request" of a session.

Order and branches. Entries follow file order. One API response split over several
`assistant` lines (same `message.id`) becomes one assistant entry followed by its tool
lines, placed where its first line was; a line repeated with the same `uuid` is read once.
`parentUuid` makes a tree: when the user rewinds and re-asks, the old branch stays in the
file. The active branch is the ancestry of the last message; a user prompt off that branch
whose parent is on it, with a *later* prompt taking its place, starts an abandoned branch,
and that prompt and everything below it are dropped. Lines the rule cannot place (a broken
chain, sidechains) are kept: losing real work is worse than summarising a detour.
"""

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .base import Entry, Reading
from .files import find_files, iter_records, peek_field
from .prompts import clean_user_text, slash_command
from .text import parse_time, safe_text
from .tools import first_argument, tool_line
from .units import file_unit, newest_per_id

AGENT = "claude_code"
_SUBAGENT_PREFIX = "agent-"

# Line types that carry nothing for the library (bookkeeping); anything not handled and not
# listed here is counted as `unknown_type:<type>` so format changes show in run reports.
_BOOKKEEPING = frozenset({"file-history-snapshot", "progress", "queue-operation", "permission-mode",
                          "last-prompt", "agent-name", "tag", "pr-link", "mode"})

# When a person rejects a tool call and says why, their words ride inside the tool result.
_REJECTION_FEEDBACK = "the user said:\n"


class ClaudeCodeConnector:
    """Reads Claude Code transcripts under `path` (a projects folder, one project folder,
    or a single `.jsonl` file). Unknown keyword options are accepted and ignored."""

    type_name = AGENT

    def __init__(self, path, **options):
        self.root = Path(path)

    def discover(self):
        """Yield one `Unit` per session or subagent file, cheaply (see the module docstring)."""
        paths = find_files(self.root, lambda name: name.endswith(".jsonl"), skip_dirs={"tool-results"})
        yield from newest_per_id(_unit_for(path) for path in paths)

    def read(self, unit):
        """The unit's entries, hints and warnings; raises `UnitError` if the file cannot be read."""
        path = Path(unit.path)
        subagent = _is_subagent(path)
        reading = Reading()
        transcript = _Transcript(subagent=subagent)
        for record in iter_records(path, reading.warnings):
            transcript.add(record, reading.warnings)
        reading.entries = transcript.entries()
        reading.hints = transcript.hints()
        if subagent:
            reading.hints.update(_subagent_hints(path, unit, reading.hints, reading.warnings))
        return reading


# -- discovery

def _is_subagent(path):
    return path.name.startswith(_SUBAGENT_PREFIX)


def _unit_for(path):
    if not _is_subagent(path):
        return file_unit(path, path.stem, path.stem)
    parent = _parent_session(path)
    if parent is None:  # unreadable or empty: still listed, read() will report why
        return file_unit(path, path.stem, path.stem)
    return file_unit(path, f"{parent}/{path.stem}", parent)


def _parent_session(path):
    """The session a subagent file belongs to: its folder name in the newer layout, else the
    `sessionId` written in its first lines."""
    if path.parent.name == "subagents":
        return path.parent.parent.name
    return peek_field(path, "sessionId")


def _subagent_hints(path, unit, hints, warnings):
    agent_id = path.stem[len(_SUBAGENT_PREFIX):]
    # The unit's ref is the parent session unless discovery could not tell; then the lines say.
    parent = unit.ref if unit.ref != path.stem else hints.get("session_id")
    extra = {"agent_id": agent_id}
    if parent:
        extra["parent_session_id"] = parent
    meta = _read_meta(path.with_name(f"{path.stem}.meta.json"), warnings)
    for source, key in (("agentType", "agent_type"), ("description", "description")):
        if isinstance(meta.get(source), str) and meta[source].strip():
            extra[key] = meta[source].strip()
    if "title_hint" not in hints and "description" in extra:
        extra["title_hint"] = extra["description"]
    return extra


def _read_meta(path, warnings, limit=1024 * 1024):
    try:
        with open(path, "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError:
        return {}  # older versions write no meta file
    try:
        meta = json.loads(raw) if len(raw) <= limit else None
    except (ValueError, RecursionError):
        meta = None
    if not isinstance(meta, dict):
        warnings["malformed_meta"] += 1
        return {}
    return meta


# -- reading

@dataclass
class _Response:
    """One assistant API response, possibly spread over several lines."""

    time: datetime | None
    texts: list = field(default_factory=list)
    tools: list = field(default_factory=list)       # [Entry]
    tool_ids: set = field(default_factory=set)

    def add(self, block, time):
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            if block["text"] not in self.texts:  # the same block written twice is still one
                self.texts.append(block["text"])
        elif kind == "tool_use":
            tool_id = block.get("id")
            if tool_id is not None and tool_id in self.tool_ids:
                return
            self.tool_ids.add(tool_id)
            self.tools.append(Entry("tool", safe_text(_tool_text(block.get("name"), block.get("input"))), time))
        # thinking, redacted_thinking, images and server-tool blocks never reach the summariser

    def entries(self):
        text = "\n\n".join(part.strip() for part in self.texts if part.strip())
        head = [Entry("assistant", safe_text(text), self.time)] if text else []
        return head + self.tools


class _Transcript:
    """The state of one read: parts in file order, the `parentUuid` tree and the hints."""

    def __init__(self, *, subagent):
        self.subagent = subagent
        self.parts = []          # (uuid, [Entry] | _Response) in file order
        self.responses = {}      # message.id → _Response
        self.parents = {}        # uuid → parent uuid, every line, in file order
        self.prompts = set()     # uuids of lines a person typed
        self.leaf = None         # the last message line: the tip of the active branch
        self.facts = {}
        self.titles = []         # (kind, session id, title) in file order
        self.summaries = []      # (leafUuid, summary) in file order

    def add(self, record, warnings):
        kind = record.get("type")
        if not isinstance(kind, str):
            warnings["malformed_line"] += 1
            return
        uuid = record.get("uuid") if isinstance(record.get("uuid"), str) else None
        if uuid is not None:
            if uuid in self.parents:
                return  # a line written twice is read once
            parent = record.get("parentUuid") or record.get("logicalParentUuid")
            self.parents[uuid] = parent if isinstance(parent, str) else None
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, record, uuid)
        elif kind not in _BOOKKEEPING:
            warnings[f"unknown_type:{kind[:40]}"] += 1

    # handlers, one per line type

    def _user(self, record, uuid):
        self._note(record, uuid)
        if record.get("isMeta") or record.get("isCompactSummary") or record.get("isVisibleInTranscriptOnly"):
            return
        content = _message(record).get("content")
        typed, texts = True, []
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text":
                    texts.append(block.get("text"))
                elif block.get("type") == "tool_result":
                    typed = False
                    texts.append(_rejection_feedback(block))
        if typed and uuid is not None:
            self.prompts.add(uuid)
        time = parse_time(record.get("timestamp"))
        sidechain = bool(record.get("isSidechain"))
        cleaned = (clean_user_text(text, sidechain=sidechain) for text in texts)
        entries = [Entry("user", text, time) for text in cleaned if text]
        if entries:
            self.parts.append((uuid, entries))

    def _assistant(self, record, uuid):
        self._note(record, uuid)
        message = _message(record)
        if record.get("isApiErrorMessage") or message.get("model") == "<synthetic>":
            return  # CLI-made stand-ins ("No response requested.", API errors), not the model
        if isinstance(message.get("model"), str):
            self.facts["model"] = message["model"]
        time = parse_time(record.get("timestamp"))
        key = message.get("id") or uuid
        response = self.responses.get(key) if key else None
        if response is None:
            response = _Response(time)
            if key:
                self.responses[key] = response
            self.parts.append((uuid, response))
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict):
                response.add(block, time)

    def _system(self, record, uuid):
        self._note(record, uuid)
        # Newer versions log a slash command as a system line; keep it like a typed one.
        if record.get("subtype") == "local_command" and isinstance(record.get("content"), str):
            command = slash_command(record["content"])
            if command:
                self.parts.append((uuid, [Entry("user", command, parse_time(record.get("timestamp")))]))

    def _attachment(self, record, uuid):
        # Attachments are injected context (hook output, files, reminders) and are dropped,
        # except a prompt the person typed while the agent was busy.
        attachment = record.get("attachment")
        if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
            return
        origin = attachment.get("origin")
        human = not isinstance(origin, dict) or origin.get("kind") in (None, "human")
        if attachment.get("commandMode", "prompt") != "prompt" or not human:
            return
        prompt = attachment.get("prompt")
        if isinstance(prompt, list):
            prompt = "\n".join(b.get("text", "") for b in prompt if isinstance(b, dict) and b.get("type") == "text")
        text = clean_user_text(prompt) if isinstance(prompt, str) else None
        if text:
            self.parts.append((uuid, [Entry("user", text, parse_time(record.get("timestamp")))]))

    def _title(self, record, uuid):
        kind = record.get("type")
        title = record.get("customTitle" if kind == "custom-title" else "aiTitle")
        if isinstance(title, str) and title.strip():
            self.titles.append((kind, record.get("sessionId"), title.strip()))

    def _summary(self, record, uuid):
        if isinstance(record.get("summary"), str) and isinstance(record.get("leafUuid"), str):
            self.summaries.append((record["leafUuid"], record["summary"].strip()))

    def _note(self, record, uuid):
        """Hints from the common fields; cwd is the first seen (where the session was
        started), the others the last seen (the state the session ended in)."""
        facts = self.facts
        if isinstance(record.get("cwd"), str) and record["cwd"] and "cwd" not in facts:
            facts["cwd"] = record["cwd"]
        if isinstance(record.get("sessionId"), str) and "session_id" not in facts:
            facts["session_id"] = record["sessionId"]
        branch = record.get("gitBranch")
        if isinstance(branch, str) and branch and branch != "HEAD":
            facts["git_branch"] = branch
        if isinstance(record.get("version"), str) and record["version"]:
            facts["version"] = record["version"]
        if uuid is not None and (self.subagent or not record.get("isSidechain")):
            self.leaf = uuid

    # results

    def entries(self):
        dropped = self._abandoned()
        entries = []
        for uuid, part in self.parts:
            if uuid is not None and uuid in dropped:
                continue
            entries.extend(part.entries() if isinstance(part, _Response) else part)
        return [entry for entry in entries if entry.text.strip()]

    def _abandoned(self):
        """uuids on branches the user rewound away from (see the module docstring)."""
        active, active_child = set(), {}
        node, child = self.leaf, None
        while node is not None and node not in active:
            active.add(node)
            if child is not None:
                active_child[node] = child
            node, child = self.parents.get(node), node
        position = {uuid: index for index, uuid in enumerate(self.parents)}
        dropped = set()
        for uuid, parent in self.parents.items():
            if parent in dropped:
                dropped.add(uuid)
            elif uuid in self.prompts and uuid not in active and parent in active:
                replacement = active_child.get(parent)
                if replacement in self.prompts and position[replacement] > position[uuid]:
                    dropped.add(uuid)
        return dropped

    def hints(self):
        hints = {"agent": AGENT}
        hints.update({key: value for key, value in self.facts.items() if value})
        title = self._title_hint(hints.get("session_id"))
        if title:
            hints["title_hint"] = title
        return hints

    def _title_hint(self, session_id):
        """A rename beats an AI title; a `summary` line counts only when its leaf is a line of
        this file (they often describe other sessions)."""
        def mine(owner):
            return owner is None or session_id is None or owner == session_id

        for wanted in ("custom-title", "ai-title"):
            titles = [title for kind, owner, title in self.titles if kind == wanted and mine(owner)]
            if titles:
                return titles[-1]
        own = [summary for leaf, summary in self.summaries if leaf in self.parents and summary]
        return own[-1] if own else None


_HANDLERS = {
    "user": _Transcript._user,
    "assistant": _Transcript._assistant,
    "system": _Transcript._system,
    "attachment": _Transcript._attachment,
    "custom-title": _Transcript._title,
    "ai-title": _Transcript._title,
    "summary": _Transcript._summary,
}


def _message(record):
    message = record.get("message")
    return message if isinstance(message, dict) else {}


# -- user text (the cleaning itself is in prompts.py, shared with specstory)

def _rejection_feedback(block):
    content = block.get("content")
    if isinstance(content, list):
        content = "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    if not isinstance(content, str) or _REJECTION_FEEDBACK not in content:
        return None
    return content.split(_REJECTION_FEEDBACK, 1)[1]


# -- tool lines

def _field(name):
    return lambda arguments: arguments.get(name)


def _task(arguments):
    return arguments.get("description") or arguments.get("prompt")


def _todos(arguments):
    todos = arguments.get("todos")
    return f"{len(todos)} items" if isinstance(todos, list) else ""


_TOOL_DETAIL = {
    "Bash": _field("command"),
    "Read": _field("file_path"),
    "Edit": _field("file_path"),
    "MultiEdit": _field("file_path"),
    "Write": _field("file_path"),
    "NotebookEdit": _field("notebook_path"),
    "Grep": _field("pattern"),
    "Glob": _field("pattern"),
    "WebFetch": _field("url"),
    "WebSearch": _field("query"),
    "Task": _task,
    "Agent": _task,  # the Task tool's newer name
    "TodoWrite": _todos,
}


def _tool_text(name, arguments):
    """One line per tool call: `Bash: git status`, `Edit: src/app.py`, `TodoWrite: 3 items`;
    other tools show their first argument."""
    name = name if isinstance(name, str) and name else "tool"
    arguments = arguments if isinstance(arguments, dict) else {}
    rule = _TOOL_DETAIL.get(name)
    detail = rule(arguments) if rule else first_argument(arguments)
    return tool_line(name, detail if isinstance(detail, str) else "")

