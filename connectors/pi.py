"""The `pi` connector type: a folder laid out like `~/.pi/agent/sessions`.

Units. Every `--<cwd-with-dashes>--/<timestamp>_<uuid>.jsonl` is one unit whose id and
original_ref are the session id: the uuid that ends the file name, which is the header's id,
known without opening the file (a file named otherwise uses its stem). The folder name is a
lossy encoding of the cwd and is never decoded: the cwd comes from the `session` header.

Reading keeps what may reach the summariser (docs/design.md "Connectors"): user text, assistant text (`thinking`
blocks dropped) and one `tool` line per `toolCall` (`bash` → `Bash: <command>`, `read` →
`Read: <path>`, `edit` → `Edit: <path>`, …), plus a `Bash:` line for a command the person ran
with `!` (a `bashExecution` message; its output is dropped). Dropped as well: `toolResult`
messages, images, compaction and branch summaries (`compaction`, `branch_summary` entries and
their message forms), text that extensions inject (`custom_message` entries, `custom`
messages) and bookkeeping entries (`thinking_level_change`, `label`, `custom`). Hints: the
header's session id and cwd, the model of the last `model_change` (else of the last
assistant message), the name of the last `session_info` as the title hint.

Branches. Entries form a tree through `parentId`: `/tree` moves back to an earlier entry and
the session continues from there, leaving the old branch in the file. Pi's active branch is
the ancestry of the last entry in the file, and that is followed here, as the claude_code
connector follows Claude Code rewinds: an entry off the active branch whose parent is on it,
with a *later* entry taking its place on the branch, starts an abandoned branch, and it and
everything below it are dropped. Entries the rule cannot place (a broken `parentId` chain, a
branch left and later returned to) are kept: losing real work is worse than summarising a
detour. Version 1 files have no ids; their entries form one linear branch, as pi migrates them.
A compaction does not end anything: the messages it summarised stay in the file and are kept.
"""

from datetime import UTC, datetime
from pathlib import Path

from .base import Entry
from .files import find_files, read_records
from .text import parse_time, safe_text
from .tools import command_field, first_field, mapped_tool_line, shell_command, tool_line
from .units import newest_per_id, uuid_named_unit

AGENT = "pi"

# Entry types that carry nothing for the library; any other unhandled type is counted.
_QUIET = frozenset({"compaction", "branch_summary", "custom", "custom_message", "label", "thinking_level_change"})
# Message roles that are not dialogue: outputs, summaries, injected extension text.
_QUIET_ROLES = frozenset({"toolResult", "custom", "hookMessage", "branchSummary", "compactionSummary"})

_PATH = first_field("path", "file_path")
_PI_TOOLS = {
    "bash": ("Bash", command_field("command")),
    "read": ("Read", _PATH),
    "edit": ("Edit", _PATH),
    "write": ("Write", _PATH),
    "grep": ("Grep", first_field("pattern")),
    "find": ("Glob", first_field("pattern")),
    "ls": ("LS", _PATH),
}


class PiConnector:
    """Reads pi sessions under `path` (the sessions folder, one of its project folders, or a
    single session file). Unknown keyword options are accepted and ignored."""

    type_name = AGENT

    def __init__(self, path, **options):
        self.root = Path(path)

    def discover(self):
        """Yield one `Unit` per session file (one stat each)."""
        paths = find_files(self.root, lambda name: name.endswith(".jsonl"))
        yield from newest_per_id(uuid_named_unit(path) for path in paths)

    def read(self, unit):
        """The unit's entries, hints and warnings; raises `UnitError` if the file cannot be read."""
        return read_records(unit.path, _Tree())


class _Tree:
    """The state of one read: each entry's parent and kept text, in file order, and the hints."""

    def __init__(self):
        self.parents = {}        # entry id → parent id (None for a root), in file order
        self.parts = {}          # entry id → [Entry]
        self.leaf = None         # the last entry: the tip of the active branch
        self.facts = {}
        self.header_seen = False
        self.unnamed = 0         # version 1 entries, which have no ids

    def add(self, record, warnings):
        kind = record.get("type")
        if not isinstance(kind, str):
            warnings["malformed_line"] += 1
            return
        if kind == "session":
            self._header(record)
            return
        entry_id = record.get("id")
        if isinstance(entry_id, str):
            parent = record.get("parentId")
            parent = parent if isinstance(parent, str) else None
        else:
            self.unnamed += 1
            entry_id, parent = f"#{self.unnamed}", self.leaf
        if entry_id in self.parents:
            return  # an entry written twice is read once
        self.parents[entry_id] = parent
        self.leaf = entry_id
        time = parse_time(record.get("timestamp"))
        if kind == "message":
            self._message(entry_id, record.get("message"), time, warnings)
        elif kind == "model_change":
            if isinstance(record.get("modelId"), str) and record["modelId"]:
                self.facts["model_change"] = record["modelId"]
        elif kind == "session_info":
            if isinstance(record.get("name"), str) and record["name"].strip():
                self.facts["title_hint"] = record["name"].strip()
        elif kind not in _QUIET:
            warnings[f"unknown_type:{kind[:40]}"] += 1

    def _header(self, record):
        if self.header_seen:
            return
        self.header_seen = True
        for key, source in (("session_id", "id"), ("cwd", "cwd"), ("parent_session", "parentSession")):
            if isinstance(record.get(source), str) and record[source]:
                self.facts[key] = record[source]

    def _message(self, entry_id, message, time, warnings):
        if not isinstance(message, dict):
            warnings["malformed_line"] += 1
            return
        role = message.get("role")
        time = time or _epoch_ms(message.get("timestamp"))
        entries = []
        if role == "user":
            text = _texts(message.get("content"), "\n")
            if text:
                entries.append(Entry("user", text, time))
        elif role == "assistant":
            content = message.get("content")
            text = _texts(content, "\n\n")
            if text:
                entries.append(Entry("assistant", text, time))
            for block in content if isinstance(content, list) else ():
                if isinstance(block, dict) and block.get("type") == "toolCall":
                    line = mapped_tool_line(block.get("name"), block.get("arguments"), _PI_TOOLS)
                    entries.append(Entry("tool", safe_text(line), time))
            if isinstance(message.get("model"), str) and message["model"]:
                self.facts["message_model"] = message["model"]
        elif role == "bashExecution":
            command = shell_command(message.get("command"))
            if command:
                entries.append(Entry("tool", safe_text(tool_line("Bash", command)), time))
        elif role not in _QUIET_ROLES:
            warnings[f"unknown_type:message.{str(role)[:40]}"] += 1
        if entries:
            self.parts[entry_id] = entries

    # results

    def entries(self):
        dropped = self._abandoned()
        return [entry for entry_id in self.parents if entry_id not in dropped
                for entry in self.parts.get(entry_id, ())]

    def _abandoned(self):
        """Ids on branches the user moved away from (see the module docstring). A root's
        parent is None, which counts as a node of the active branch."""
        active, active_child = set(), {}
        node, child = self.leaf, None
        while node not in active:
            active.add(node)
            if child is not None:
                active_child[node] = child
            if node is None or node not in self.parents:
                break  # the root, or a parent that is not in the file
            node, child = self.parents[node], node
        position = {entry_id: index for index, entry_id in enumerate(self.parents)}
        dropped = set()
        for entry_id, parent in self.parents.items():
            if parent in dropped:
                dropped.add(entry_id)
            elif entry_id not in active and parent in active:
                replacement = active_child.get(parent)
                if replacement is not None and position.get(replacement, -1) > position[entry_id]:
                    dropped.add(entry_id)
        return dropped

    def hints(self):
        facts = dict(self.facts)
        changed, answered = facts.pop("model_change", None), facts.pop("message_model", None)
        hints = {"agent": AGENT, **facts}
        if changed or answered:
            hints["model"] = changed or answered
        return hints


def _texts(content, separator):
    """The text blocks of a message (a string is one block); images and thinking are not text."""
    if isinstance(content, str):
        return safe_text(content.strip())
    blocks = content if isinstance(content, list) else ()
    texts = [block["text"].strip() for block in blocks
             if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)]
    return safe_text(separator.join(text for text in texts if text))


def _epoch_ms(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        try:
            return datetime.fromtimestamp(value / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None
