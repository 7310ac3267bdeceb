"""The `codex` connector type: a folder laid out like `~/.codex/sessions`.

Units. Every `rollout-*.jsonl` under the path (`sessions/YYYY/MM/DD/`, `archived_sessions/`)
is one unit. Its id and original_ref are the session id: the uuid that ends the file name,
which is the `session_meta` id, known without opening the file (a file named otherwise uses
its stem). The id does not depend on the folder, so archiving a rollout (a move that keeps
size and mtime) costs nothing; if both copies exist, the newer one is read.

Reading keeps what may reach the summariser (docs/design.md "Connectors"). User text comes from `event_msg`
`user_message` (the clean prompt); `response_item` user messages, which also carry AGENTS.md
text and `<environment_context>`, are used only by rollouts that have no such events (old
format), and then without those preambles. Assistant text comes from `response_item`
assistant messages (`output_text`); the mirroring `event_msg` `agent_message` is used only
when a rollout has no such items. Each tool call becomes one line (`Bash: git status`,
`apply_patch: a.py, b.py`, `update_plan: 3 steps`). Tool outputs, reasoning, developer
messages, base instructions and compaction summaries are dropped. A `thread_rolled_back`
event drops the turns it undid; `thread_name_updated` gives the title hint.
"""

import json
import re
from pathlib import Path

from .base import Entry
from .files import find_files, read_records
from .text import parse_time, safe_text
from .tools import apply_patch_line, first_argument, shell_command, tool_line
from .units import newest_per_id, uuid_named_unit

AGENT = "codex"

# Top-level line types with nothing for the library; others not handled are counted.
_IGNORED_LINES = frozenset({"compacted", "world_state", "inter_agent_communication_metadata"})
# response_item payloads that are outputs, reasoning or bookkeeping.
_IGNORED_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output",
                            "reasoning", "ghost_snapshot", "compaction", "compaction_summary",
                            "tool_search_call", "tool_search_output", "item_reference"})
# The old format wrote response items as bare lines, without the {type, payload} envelope.
_BARE_ITEMS = frozenset({"message", "function_call", "custom_tool_call", "local_shell_call", "web_search_call",
                         *_IGNORED_ITEMS})

# Scaffolding Codex puts into user messages; removed with its content.
_PREAMBLE_TAGS = ("environment_context", "user_instructions", "INSTRUCTIONS", "user_shell_command",
                  "turn_aborted")
_PREAMBLE = re.compile(r"<(%s)>.*?</\1>" % "|".join(_PREAMBLE_TAGS), re.DOTALL)
_AGENTS_HEADING = re.compile(r"^# AGENTS\.md instructions for .*$", re.MULTILINE)
# The IDE extension prefixes the prompt with the open files; the request follows this line.
_IDE_REQUEST = "## My request for Codex:"
_PREAMBLE_KINDS = frozenset({"user_instructions", "environment_context"})  # old user_message kinds

_SHELL_TOOLS = frozenset({"shell", "shell_command", "container.exec", "local_shell", "exec_command"})


class CodexConnector:
    """Reads Codex CLI rollouts under `path` (a sessions folder, `~/.codex`, or a single
    rollout file). Unknown keyword options are accepted and ignored."""

    type_name = AGENT

    def __init__(self, path, **options):
        self.root = Path(path)

    def discover(self):
        """Yield one `Unit` per rollout file (one stat each)."""
        paths = find_files(self.root, lambda name: name.startswith("rollout-") and name.endswith(".jsonl"))
        yield from newest_per_id(uuid_named_unit(path) for path in paths)

    def read(self, unit):
        """The unit's entries, hints and warnings; raises `UnitError` if the file cannot be read."""
        return read_records(unit.path, _Rollout())


class _Rollout:
    """The state of one read: candidate entries tagged by where they came from."""

    def __init__(self):
        self.items = []          # (source, Entry); source: user_event, user_item, assistant_item, assistant_event, tool
        self.turn_starts = []    # index in items where each user_message turn began
        self.facts = {}
        self.meta_seen = False

    def add(self, record, warnings):
        kind, payload = record.get("type"), record.get("payload")
        time = parse_time(record.get("timestamp"))
        if kind is None:
            self._untyped(record, warnings)
        elif not isinstance(payload, dict):
            if kind in _BARE_ITEMS:
                self._response_item(record, time, warnings)
            else:
                warnings["malformed_line"] += 1
        elif kind == "session_meta":
            self._session_meta(payload)
        elif kind == "turn_context":
            self._turn_context(payload)
        elif kind == "response_item":
            self._response_item(payload, time, warnings)
        elif kind == "event_msg":
            self._event(payload, time)
        elif kind not in _IGNORED_LINES:
            warnings[f"unknown_type:{str(kind)[:40]}"] += 1

    def _untyped(self, record, warnings):
        # The old format: a bare header line first, then `record_type: state` lines.
        if "record_type" in record:
            return
        if not self.meta_seen and "id" in record:
            self._session_meta(record)
            return
        warnings["malformed_line"] += 1

    def _session_meta(self, meta):
        if self.meta_seen:
            return  # a forked rollout repeats its parent's session_meta; the first is ours
        self.meta_seen = True
        git = meta.get("git") if isinstance(meta.get("git"), dict) else {}
        for key, value in (("session_id", meta.get("id")), ("cwd", meta.get("cwd")),
                           ("version", meta.get("cli_version")), ("git_branch", git.get("branch")),
                           ("git_commit", git.get("commit_hash")), ("git_remote", git.get("repository_url"))):
            if isinstance(value, str) and value:
                self.facts[key] = value

    def _turn_context(self, context):
        if isinstance(context.get("model"), str) and context["model"]:
            self.facts["model"] = context["model"]
        if isinstance(context.get("cwd"), str) and context["cwd"]:
            self.facts.setdefault("cwd", context["cwd"])

    def _response_item(self, item, time, warnings):
        kind = item.get("type")
        if kind == "message":
            self._message(item, time)
            return
        if kind in _IGNORED_ITEMS:
            return
        if kind == "function_call":
            line = _function_call(item.get("name"), item.get("arguments"))
        elif kind == "custom_tool_call":
            line = _custom_tool_call(item.get("name"), item.get("input"))
        elif kind == "local_shell_call":
            action = item.get("action") if isinstance(item.get("action"), dict) else {}
            line = _shell_line(action.get("command"))
        elif kind == "web_search_call":
            action = item.get("action") if isinstance(item.get("action"), dict) else {}
            line = tool_line("WebSearch", action.get("query") or "")
        else:
            warnings[f"unknown_type:response_item.{str(kind)[:40]}"] += 1
            return
        if line:
            self.items.append(("tool", Entry("tool", safe_text(line), time)))

    def _message(self, item, time):
        role, content = item.get("role"), item.get("content")
        if role not in ("user", "assistant"):
            return  # developer and system messages are scaffolding
        wanted = "input_text" if role == "user" else "output_text"
        if isinstance(content, str):
            texts = [content]
        else:
            texts = [part.get("text") for part in content if isinstance(part, dict) and part.get("type") == wanted
                     and isinstance(part.get("text"), str)] if isinstance(content, list) else []
        if role == "user":
            text = clean_user_text("\n\n".join(texts))
            source = "user_item"
        else:
            text = "\n\n".join(t.strip() for t in texts if t.strip())
            source = "assistant_item"
        if text:
            self.items.append((source, Entry(role, safe_text(text), time)))

    def _event(self, event, time):
        kind = event.get("type")
        if kind == "user_message":
            self.turn_starts.append(len(self.items))
            if event.get("kind") in _PREAMBLE_KINDS:
                return
            text = clean_user_text(event.get("message"))
            # An empty prompt still starts a turn (a rollback counts it), so it is recorded as
            # the source being present even when nothing is kept.
            self.items.append(("user_event", Entry("user", safe_text(text or ""), time)))
        elif kind == "agent_message" and isinstance(event.get("message"), str):
            self.items.append(("assistant_event", Entry("assistant", safe_text(event["message"].strip()), time)))
        elif kind == "thread_name_updated" and isinstance(event.get("thread_name"), str):
            if event["thread_name"].strip():
                self.facts["title_hint"] = event["thread_name"].strip()
        elif kind == "thread_rolled_back":
            self._roll_back(event.get("num_turns"))
        # every other event (token counts, exec begin/end, patch events, …) mirrors items or is bookkeeping

    def _roll_back(self, turns):
        if not isinstance(turns, int) or turns <= 0 or not self.turn_starts:
            return
        turns = min(turns, len(self.turn_starts))
        cut = self.turn_starts[-turns]
        del self.items[cut:]
        del self.turn_starts[-turns:]

    def entries(self):
        sources = {source for source, _entry in self.items}
        keep = {"tool",
                "user_event" if "user_event" in sources else "user_item",
                "assistant_item" if "assistant_item" in sources else "assistant_event"}
        return [entry for source, entry in self.items if source in keep and entry.text.strip()]

    def hints(self):
        return {"agent": AGENT, **self.facts}


def clean_user_text(text):
    """The person's request without environment, instruction and IDE preambles."""
    if not isinstance(text, str):
        return None
    if _IDE_REQUEST in text:
        text = text.split(_IDE_REQUEST, 1)[1]
    text = _AGENTS_HEADING.sub("", _PREAMBLE.sub("", text))
    return text.strip() or None


def _function_call(name, arguments):
    """One line for a `function_call`; `arguments` is a JSON string. None to skip the call."""
    name = name if isinstance(name, str) and name else "tool"
    raw = arguments if isinstance(arguments, str) else ""
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except (ValueError, RecursionError):
        parsed = None
    args = parsed if isinstance(parsed, dict) else {}
    if name in _SHELL_TOOLS:
        return _shell_line(args.get("cmd") or args.get("command") or raw)
    if name == "apply_patch":
        return apply_patch_line(args.get("input") or args.get("patch") or raw)
    if name == "update_plan":
        plan = args.get("plan")
        return f"update_plan: {len(plan)} steps" if isinstance(plan, list) else "update_plan"
    if name == "write_stdin" and not args.get("chars"):
        return None  # polling a running command for output: no action of its own
    return tool_line(name, first_argument(args) or raw)


def _custom_tool_call(name, tool_input):
    name = name if isinstance(name, str) and name else "tool"
    if name == "apply_patch":
        return apply_patch_line(tool_input)
    return tool_line(name, tool_input if isinstance(tool_input, str) else "")


def _shell_line(command):
    text = shell_command(command)
    if "*** Begin Patch" in text:  # older versions ran apply_patch through the shell
        return apply_patch_line(text)
    return tool_line("Bash", text)
