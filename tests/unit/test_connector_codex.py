"""The codex connector (docs/design.md "Connectors", docs/agent-formats.md): rollout units, what reaches the summariser,
hints, rollbacks, the old format and robustness. The real rollout is read in place from
tests/fixtures/real; hand-made ones under tests/fixtures/codex mark dropped text with NOISE."""

import json
import os
import shutil
from pathlib import Path

import pytest

from connectors import registry
from connectors.codex import CodexConnector
from tests.conftest import everything, texts
from tests.conftest import real_fixture as shared

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / "tests" / "fixtures" / "real"   # real public transcripts (SOURCES.md there)
OWN = REPO / "tests" / "fixtures" / "codex"
MAIN = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
ROLLED_BACK = "0199b2c3-d4e5-7f60-9a1b-2c3d4e5f6a7b"
OLD_FORMAT = "5e1f2a3b-4c5d-4e6f-8a7b-9c0d1e2f3a4b"




def read_own():
    connector = CodexConnector(OWN)
    return {unit.id: (unit, connector.read(unit)) for unit in connector.discover()}


def read_lines(tmp_path, lines, name=f"rollout-2025-10-01T08-00-00-{MAIN}.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    connector = CodexConnector(path)
    (unit,) = connector.discover()
    return connector.read(unit)


def call(name, arguments):
    return {"timestamp": "2025-10-01T08:00:01Z", "type": "response_item",
            "payload": {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": "c"}}


# -- the real rollout

def test_a_real_rollout_gives_the_prompt_and_the_answer_once_each(tmp_path):
    """codex_2: the prompt is both a user_message event and a response item, the answer
    both an agent_message event and an output_text item; environment and developer text drop."""
    path = shared("codex_2.jsonl")
    session = "019e9625-802f-7e91-840a-cfe88d14117a"
    link = tmp_path / "sessions" / "2026" / "06" / "05" / f"rollout-2026-06-05T10-28-20-{session}.jsonl"
    link.parent.mkdir(parents=True)
    link.symlink_to(path)
    connector = CodexConnector(tmp_path / "sessions")
    (unit,) = connector.discover()
    assert unit.id == unit.ref == session
    reading = connector.read(unit)
    assert texts(reading) == [("user", "[REDACTED_PROMPT]"), ("assistant", "[REDACTED_ASSISTANT_TEXT]")]
    assert reading.hints == {"agent": "codex", "session_id": session,
                             "cwd": "/tmp/agent-history-real-agent/codex/workspace", "version": "0.135.0",
                             "model": "gpt-5.5"}
    assert reading.entries[0].time.isoformat() == "2026-06-05T04:58:23.506000+00:00"
    assert not reading.warnings


def test_a_file_not_named_like_a_rollout_is_read_when_given_directly():
    connector, unit = registry.for_file("codex", shared("codex_2.jsonl"))
    assert unit.id == "codex_2"
    assert len(connector.read(unit).entries) == 2


# -- discovery

def test_discovery_finds_rollouts_in_sessions_and_archived_sessions_by_session_id():
    units = list(CodexConnector(OWN).discover())
    assert {(unit.id, unit.ref) for unit in units} == {
        (MAIN, MAIN), (ROLLED_BACK, ROLLED_BACK), (OLD_FORMAT, OLD_FORMAT)}
    main = next(unit for unit in units if unit.id == MAIN)
    stat = Path(main.path).stat()
    assert main.fingerprint == f"{stat.st_size}:{stat.st_mtime_ns}"
    assert main.path.endswith(f"sessions/2025/09/14/rollout-2025-09-14T09-00-00-{MAIN}.jsonl")


def test_an_archived_copy_of_a_rollout_is_one_unit_read_from_the_newer_file(tmp_path):
    source = next((OWN / "sessions").rglob(f"*{ROLLED_BACK}.jsonl"))
    active = tmp_path / "sessions" / "2025" / "09" / "15" / source.name
    archived = tmp_path / "archived_sessions" / source.name
    for path, mtime in ((active, 1_750_000_000), (archived, 1_760_000_000)):
        path.parent.mkdir(parents=True)
        shutil.copy(source, path)
        os.utime(path, (mtime, mtime))
    (unit,) = CodexConnector(tmp_path).discover()
    assert unit.id == ROLLED_BACK and unit.path == str(archived)


# -- what reaches the summariser

def test_only_dialogue_and_tool_lines_reach_the_summariser():
    _unit, reading = read_own()[MAIN]
    assert texts(reading) == [
        ("user", "Add a discount field to the cart total."),
        ("tool", "Bash: git status"),                                  # ["bash", "-lc", "git status"]
        ("tool", "Bash: pytest -q tests/test_cart.py"),                # exec_command {"cmd": …}
        ("tool", "apply_patch: shop/cart.py, tests/test_cart.py"),
        ("tool", "update_plan: 3 steps"),
        ("assistant", "I added the discount field and a test."),       # item and event: once
        ("user", "Now run the linter."),                               # without the IDE context
        ("tool", "Bash: ruff check ."),
        ("tool", "WebSearch: ruff rule E501"),
        ("tool", "mcp__linear__create_issue: Follow up on discounts"),
        ("assistant", "Lint is clean."),
    ]
    assert "NOISE" not in everything(reading)


def test_hints_come_from_session_meta_and_turn_context():
    _unit, reading = read_own()[MAIN]
    assert reading.hints == {
        "agent": "codex", "session_id": MAIN, "cwd": "/home/ana/shop", "version": "0.40.0",
        "git_branch": "feature/cart", "git_commit": "3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a",
        "git_remote": "git@github.com:ana/shop.git", "model": "gpt-5-codex",
    }


def test_a_rolled_back_turn_is_dropped_and_the_thread_name_is_the_title():
    _unit, reading = read_own()[ROLLED_BACK]
    assert texts(reading) == [("user", "one: write the README"), ("assistant", "README written."),
                              ("user", "three: add a licence"), ("assistant", "Licence added.")]
    assert reading.hints["title_hint"] == "Docs and licence"


def test_the_old_format_takes_user_text_from_items_without_preambles():
    _unit, reading = read_own()[OLD_FORMAT]
    assert texts(reading) == [("user", "Rename the --verbose flag to --loud."),
                              ("tool", "apply_patch: cli.py"),
                              ("assistant", "Renamed the flag to --loud.")]
    assert reading.hints["git_remote"] == "https://github.com/ana/cli.git"
    assert reading.hints["git_branch"] == "old-main"
    assert "NOISE" not in everything(reading) and not reading.warnings


def test_agent_message_events_are_used_when_a_rollout_has_no_assistant_items(tmp_path):
    reading = read_lines(tmp_path, [
        {"type": "event_msg", "payload": {"type": "user_message", "message": "ping the server"}},
        {"type": "event_msg", "payload": {"type": "agent_message", "message": "It answered."}},
    ])
    assert texts(reading) == [("user", "ping the server"), ("assistant", "It answered.")]


@pytest.mark.parametrize(("arguments", "line"), [
    ({"command": ["bash", "-lc", "cd app && make test"]}, "Bash: cd app && make test"),
    ({"command": ["zsh", "-c", "ls"]}, "Bash: ls"),
    ({"command": ["ls", "-la", "my dir"]}, "Bash: ls -la 'my dir'"),
    ({"command": ["bash", "-lc", "cat <<'EOF' > notes.md\nhello\nEOF"]}, "Bash: cat <<'EOF' > notes.md"),
    ({"command": ["apply_patch", "*** Begin Patch\n*** Delete File: old.py\n*** End Patch"]}, "apply_patch: old.py"),
])
def test_shell_calls_show_the_real_command(tmp_path, arguments, line):
    reading = read_lines(tmp_path, [call("shell", arguments)])
    assert texts(reading) == [("tool", line)]


def test_a_very_long_command_is_kept_whole_and_stdin_polling_is_not_a_tool_call(tmp_path):
    """Kept whole for redaction; the pipeline shortens it for display afterwards (docs/design.md "Redaction")."""
    reading = read_lines(tmp_path, [call("exec_command", {"cmd": "echo " + "y" * 2000}),
                                    call("write_stdin", {"session_id": 1, "chars": ""}),
                                    call("write_stdin", {"session_id": 1, "chars": "q\n"})])
    bash, stdin = [entry.text for entry in reading.entries]
    assert bash == "Bash: echo " + "y" * 2000
    assert stdin == "write_stdin: 1"


# -- robustness

def test_bad_and_unknown_lines_are_counted_not_raised():
    _unit, reading = read_own()[MAIN]
    assert reading.warnings == {"unknown_type:future_record": 1, "malformed_line": 1}


def test_invalid_utf8_and_non_json_arguments_do_not_stop_the_read(tmp_path):
    path = tmp_path / f"rollout-2025-10-01T08-00-00-{MAIN}.jsonl"
    good = json.dumps({"type": "event_msg", "payload": {"type": "user_message", "message": "deploy it"}})
    broken_args = json.dumps({"type": "response_item", "payload": {"type": "function_call", "name": "shell",
                                                                   "arguments": "{not json"}})
    path.write_bytes(b'{"type":"event_msg","payload":{"type":"user_message","message":"\xff\xfe"}}\n'
                     + good.encode() + b"\n" + broken_args.encode() + b"\n")
    connector = CodexConnector(tmp_path)
    (unit,) = connector.discover()
    reading = connector.read(unit)
    assert texts(reading) == [("user", "deploy it"), ("tool", "Bash: {not json")]
    assert reading.warnings == {"invalid_utf8": 1}


def test_the_registry_knows_both_agent_types():
    assert set(registry.CONNECTOR_TYPES) >= {"claude_code", "codex"}
    assert isinstance(registry.make("codex", {"path": str(OWN), "name": "agent-codex"}), CodexConnector)
