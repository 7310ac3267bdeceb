"""The claude_code connector (docs/design.md "Connectors", docs/agent-formats.md): units, what reaches the summariser,
hints, branches and robustness. Real transcripts are read from tests/fixtures/real;
small hand-made ones under tests/fixtures/claude_code mark every dropped text with NOISE."""

import json
import os
import tracemalloc
from datetime import UTC
from pathlib import Path

import pytest

from connectors import registry
from connectors.base import Unit, UnitError
from connectors.claude_code import ClaudeCodeConnector
from tests.conftest import everything, texts
from tests.conftest import real_fixture as shared

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / "tests" / "fixtures" / "real"   # real public transcripts (SOURCES.md there)
OWN = REPO / "tests" / "fixtures" / "claude_code"
MAIN = "5f0c1a2b-3c4d-4e5f-8a6b-7c8d9e0f1a2b"
BRANCHY = "b7e1d2c3-4a5b-4c6d-9e7f-8a9b0c1d2e3f"
BROKEN = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"




def read_file(path):
    connector = ClaudeCodeConnector(path)
    (unit,) = connector.discover()
    return unit, connector.read(unit)


def read_own():
    connector = ClaudeCodeConnector(OWN)
    return {unit.id: (unit, connector.read(unit)) for unit in connector.discover()}


def tool_result_texts(path):
    """Every multi-line tool result in a real transcript, for checking none gets through (a
    one-line result can be a path that a later `Read:` line rightly names)."""
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        content = json.loads(line).get("message", {}).get("content")
        for block in content if isinstance(content, list) else ():
            if block.get("type") == "tool_result":
                body = block.get("content")
                if isinstance(body, list):
                    body = "\n".join(b.get("text", "") for b in body if isinstance(b, dict))
                if isinstance(body, str) and "\n" in body.strip():
                    found.append(body.strip())
    return found


def write_lines(tmp_path, lines, name="s1.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def said(uuid, parent, text, **fields):
    return {"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
            "message": {"role": "user", "content": text}, **fields}


def answered(uuid, parent, text):
    return {"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
            "message": {"id": f"msg-{uuid}", "role": "assistant", "content": [{"type": "text", "text": text}]}}


# -- real transcripts

def test_a_real_session_keeps_the_prompt_verbatim_and_one_line_per_tool_call():
    """claude_7: the user's request, the answer and `Tool: detail` lines, nothing else."""
    _unit, reading = read_file(shared("claude_7.jsonl"))
    entries = texts(reading)
    assert entries[0] == ("user", "Search if claude -p can make use of WebSearch and Task tool. "
                                  "Especially the Task with Haiku model. Summarize the findings.")
    tools = [text for role, text in entries if role == "tool"]
    assert tools[:3] == ["WebSearch: Claude Code CLI -p flag WebSearch Task tool capabilities 2025 2026",
                         "Bash: claude --help 2>/dev/null | head -100",
                         'Bash: claude --help 2>/dev/null | grep -A5 -E "(Task|WebSearch|tool)" || true']
    assert "Glob: **/*claude*" in tools and "Read: ~/.claude/CLAUDE.md" in tools
    assert entries[-1][0] == "assistant" and entries[-1][1].startswith("Based on my own context")
    assert reading.hints["cwd"] == "/src/experiments/claude_p"
    assert reading.hints["session_id"] == "2b4ed4c0-b905-41de-9238-273db3ec737a"
    assert reading.hints["model"] == "claude-opus-4-5-20251101"
    assert reading.hints["agent"] == "claude_code" and reading.hints["version"] == "2.1.17"
    assert "git_branch" not in reading.hints   # gitBranch is "" in this file
    assert not reading.warnings


@pytest.mark.parametrize("name", ["claude_3.jsonl", "claude_6.jsonl", "claude_7.jsonl"])
def test_no_tool_result_of_a_real_transcript_reaches_the_entries(name):
    path = shared(name)
    _unit, reading = read_file(path)
    body = everything(reading)
    results = tool_result_texts(path)
    assert results
    assert not [result for result in results if result in body]


def test_a_real_split_response_is_merged_once_without_its_thinking():
    """claude_6 writes one response as text, thinking, text, tool_use lines."""
    path = shared("claude_6.jsonl")
    _unit, reading = read_file(path)
    entries = texts(reading)
    first = entries.index(("assistant", "Let me take a look at what's here."))
    assert entries[first + 1] == ("tool", "Bash: ls -la /home/user/project/")
    assert entries.count(("assistant", "Let me take a look at what's here.")) == 1
    thoughts = [block["thinking"] for line in path.read_text(encoding="utf-8").splitlines()
                for block in (json.loads(line).get("message") or {}).get("content") or ()
                if isinstance(block, dict) and block.get("type") == "thinking" and block.get("thinking")]
    assert thoughts and not [t for t in thoughts if t[:80] in everything(reading)]


def test_a_real_rewound_branch_is_dropped_and_the_new_one_kept():
    """claude_6: the user went back and asked for weak points instead of strengths."""
    _unit, reading = read_file(shared("claude_6.jsonl"))
    users = [text for role, text in texts(reading) if role == "user"]
    assert users[0].startswith("Ok, so there's isn't much to see here")
    assert users[1].startswith("I actually don't like much this idea")
    assert not [u for u in users if u.startswith("I very much like this idea")]
    assert users[-1].startswith("Fair enough. Can you write a balanced opinion")
    assert "Caveat" not in everything(reading) and "/exit" not in everything(reading)
    assert "git_branch" not in reading.hints   # "HEAD" says nothing


def test_a_real_session_of_only_a_settings_command_has_nothing_to_summarise():
    """claude_10: /model with its caveat and output, plus summaries of other sessions."""
    _unit, reading = read_file(shared("claude_10.jsonl"))
    assert reading.entries == []
    assert "title_hint" not in reading.hints
    assert reading.hints["git_branch"] == "main"
    assert reading.hints["cwd"] == "/Users/dain/workspace/danieldemmel.me-next"


def test_a_real_old_style_subagent_file_is_its_own_unit_pointing_at_its_session(tmp_path):
    """claude_3 is `agent-c8d9b115.jsonl` from a project folder."""
    project = tmp_path / "-src-deep-manifest"
    project.mkdir()
    (project / "agent-c8d9b115.jsonl").symlink_to(shared("claude_3.jsonl"))
    connector = ClaudeCodeConnector(tmp_path)
    (unit,) = connector.discover()
    parent = "a7da6a22-facc-4fcd-8bab-f83c87862004"
    assert unit.id == f"{parent}/agent-c8d9b115" and unit.ref == parent
    reading = connector.read(unit)
    assert reading.hints["parent_session_id"] == parent and reading.hints["agent_id"] == "c8d9b115"
    assert reading.hints["git_branch"] == "master" and reading.hints["cwd"] == "/src/deep-manifest"
    assert texts(reading)[:3] == [
        ("assistant", "I'll explore the deep-manifest codebase to understand the ZIP file processing "
                      "implementation. Let me start by examining the project structure and key files."),
        ("tool", "Glob: **/*.py"), ("tool", "Glob: **/*.feature")]
    assert "EISDIR" not in everything(reading)


# -- discovery

def test_discovery_lists_sessions_and_both_subagent_layouts_but_not_tool_results():
    units = {unit.id: unit for unit in ClaudeCodeConnector(OWN).discover()}
    assert {(unit.id, unit.ref) for unit in units.values()} == {
        (MAIN, MAIN), (BRANCHY, BRANCHY), (BROKEN, BROKEN),
        (f"{MAIN}/agent-a1b2c3d4", MAIN),             # old layout: project/agent-<id>.jsonl
        (f"{MAIN}/agent-a9f8e7d6c5b4a3921", MAIN),    # new layout: <session>/subagents/agent-<id>.jsonl
    }
    assert not [unit for unit in units.values() if "tool-results" in unit.path]
    main = units[MAIN]
    stat = Path(main.path).stat()
    assert main.fingerprint == f"{stat.st_size}:{stat.st_mtime_ns}"
    assert main.modified.tzinfo is not None and main.modified.utcoffset().total_seconds() == 0


def test_discovery_of_a_missing_folder_finds_nothing(tmp_path):
    assert list(ClaudeCodeConnector(tmp_path / "nowhere").discover()) == []


# -- what reaches the summariser

def test_only_dialogue_and_tool_lines_reach_the_summariser():
    """Every rule of docs/agent-formats.md at once: the hand-made session marks all dropped text NOISE."""
    _unit, reading = read_own()[MAIN]
    assert texts(reading) == [
        ("user", "Add a discount field to the cart total."),
        ("assistant", "I'll look at the cart module first."),
        ("tool", "Bash: git status"),
        ("tool", "Read: /home/ana/shop/cart.py"),
        ("tool", "Edit: /home/ana/shop/cart.py"),
        ("tool", "MultiEdit: /home/ana/shop/totals.py"),
        ("tool", "Write: /home/ana/shop/tests/test_cart.py"),
        ("tool", "Grep: discount"),
        ("tool", "Glob: **/*.py"),
        ("tool", "WebFetch: https://docs.python.org/3/library/decimal.html"),
        ("tool", "WebSearch: python decimal rounding half up"),
        ("tool", "Task: Find discount code"),
        ("tool", "TodoWrite: 3 items"),
        ("tool", "mcp__github__create_issue: ana"),
        ("user", "Here is a screenshot of the bug: the discount shows twice."),
        ("assistant", "The screenshot shows the discount is applied twice."),
        ("user", "Apply it once, please."),
        ("user", "Please also cover the empty cart."),
        ("tool", "Edit: /home/ana/shop/cart.py"),
        ("user", "use Decimal, not float"),              # said while rejecting a tool call
        ("user", "/compact keep the cart work"),          # a slash command, short
        ("user", "and run the linter too"),               # typed while the agent was busy
        ("assistant", "Done: the discount is applied once and the empty cart is covered."),
    ]
    assert "NOISE" not in everything(reading)
    assert "iVBORw0KGgo" not in everything(reading) and "/model" not in everything(reading)
    assert not reading.warnings


def test_entries_carry_their_line_time_in_utc():
    _unit, reading = read_own()[MAIN]
    first = reading.entries[0]
    assert first.time.tzinfo is not None and first.time.utcoffset().total_seconds() == 0
    assert first.time.isoformat().startswith("2026-03-02T10:00:")
    assert reading.newest_time() == max(entry.time for entry in reading.entries)


def test_a_rewound_branch_is_dropped_but_its_shared_start_is_kept():
    _unit, reading = read_own()[BRANCHY]
    assert texts(reading) == [
        ("user", "Draft the release notes for 2.0."),
        ("assistant", "Here is a first draft of the 2.0 notes."),
        ("user", "Make it longer and link the changelog."),
        ("assistant", "Here is a longer draft with the changelog link."),
    ]


def test_a_broken_chain_loses_no_work(tmp_path):
    """A compaction without a logical parent and a hook line beside a prompt look like forks;
    only a prompt replaced by a later prompt counts as rewound."""
    path = write_lines(tmp_path, [
        said("u1", None, "Start the migration."),
        answered("a1", "u1", "Migration started."),
        {"type": "system", "subtype": "compact_boundary", "uuid": "c1", "parentUuid": None, "sessionId": "s1"},
        said("u2", "c1", "Continue with the second table."),
        {"type": "attachment", "uuid": "h1", "parentUuid": "c1", "sessionId": "s1",
         "attachment": {"type": "hook_additional_context", "content": ["HOOK-NOISE"]}},
        answered("a2", "h1", "Second table migrated."),
    ])
    _unit, reading = read_file(path)
    assert texts(reading) == [("user", "Start the migration."), ("assistant", "Migration started."),
                              ("user", "Continue with the second table."), ("assistant", "Second table migrated.")]


def test_slash_commands_logged_as_system_lines_are_kept_short(tmp_path):
    path = write_lines(tmp_path, [
        {"type": "system", "subtype": "local_command", "uuid": "c1", "sessionId": "s1",
         "content": "<command-name>/review</command-name>\n<command-message>review</command-message>\n"
                    "<command-args>PR 12</command-args>"},
        {"type": "system", "subtype": "local_command", "uuid": "c2", "parentUuid": "c1", "sessionId": "s1",
         "content": "<command-name>/clear</command-name>\n<command-args></command-args>"},
        said("u1", "c2", "<command-message>init is analyzing</command-message>\n<command-name>/init</command-name>"),
    ])
    _unit, reading = read_file(path)
    assert texts(reading) == [("user", "/review PR 12"), ("user", "/init")]


def test_cwd_is_where_the_session_started_even_after_moving_into_a_worktree(tmp_path):
    path = write_lines(tmp_path, [
        said("u1", None, "Make a worktree for the fix.", cwd="/home/ana/shop", gitBranch="main"),
        said("u2", "u1", "Now fix it there.", cwd="/home/ana/shop/.worktrees/fix", gitBranch="fix-cart"),
    ])
    _unit, reading = read_file(path)
    assert reading.hints["cwd"] == "/home/ana/shop" and reading.hints["git_branch"] == "fix-cart"


def test_a_pasted_image_line_of_a_megabyte_keeps_its_text(tmp_path):
    image = "iVBORw0KGgo" + "QUJD" * 260_000   # ~1 MB of base64 on one line
    line = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1", "cwd": "/w",
            "timestamp": "2026-03-02T10:00:00Z",
            "message": {"role": "user", "content": [
                {"type": "text", "text": "Why is this button misaligned?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}}]}}
    path = write_lines(tmp_path, [line])
    assert path.stat().st_size > 1_000_000
    _unit, reading = read_file(path)
    assert texts(reading) == [("user", "Why is this button misaligned?")]
    assert not reading.warnings


def test_a_long_shell_command_becomes_one_line_kept_whole_for_redaction(tmp_path):
    """The first line only, whole: the pipeline shortens it for display after redaction (docs/design.md "Redaction")."""
    command = "python -c '" + "x" * 1000 + "'\necho second line"
    line = {"type": "assistant", "uuid": "a1", "sessionId": "s1", "timestamp": "2026-03-02T10:00:00Z",
            "message": {"id": "m1", "role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": command}},
                {"type": "tool_use", "id": "t2", "name": "ExitPlanMode", "input": {}}]}}
    _unit, reading = read_file(write_lines(tmp_path, [line]))
    bash, plan = [entry.text for entry in reading.entries]
    assert bash == "Bash: python -c '" + "x" * 1000 + "'" and "second line" not in bash
    assert plan == "ExitPlanMode"


# -- hints

def test_hints_say_where_and_on_which_branch_the_session_ran():
    _unit, reading = read_own()[MAIN]
    assert reading.hints == {
        "agent": "claude_code", "session_id": MAIN, "cwd": "/home/ana/shop", "git_branch": "feature/cart",
        "version": "2.1.30", "model": "claude-sonnet-4-5", "title_hint": "Cart discount",   # the rename wins
    }


def test_a_summary_line_titles_the_session_only_when_its_leaf_is_in_the_file():
    _unit, reading = read_own()[BRANCHY]
    assert reading.hints["title_hint"] == "Notes for the 2.0 release"
    assert reading.hints["git_branch"] == "main"   # the last real branch, not "HEAD"


def test_an_ai_title_is_used_when_there_is_no_rename(tmp_path):
    lines = [{"type": "user", "uuid": "u1", "sessionId": "s1", "message": {"role": "user", "content": "hello there"}},
             {"type": "ai-title", "aiTitle": "Other session", "sessionId": "s2"},
             {"type": "ai-title", "aiTitle": "Greeting the agent", "sessionId": "s1"}]
    _unit, reading = read_file(write_lines(tmp_path, lines))
    assert reading.hints["title_hint"] == "Greeting the agent"


def test_a_subagent_unit_says_which_agent_it_was_and_for_whom():
    _unit, reading = read_own()[f"{MAIN}/agent-a9f8e7d6c5b4a3921"]
    hints = reading.hints
    assert hints["parent_session_id"] == MAIN and hints["agent_id"] == "a9f8e7d6c5b4a3921"
    assert hints["agent_type"] == "Explore" and hints["description"] == "Find discount code"
    assert hints["title_hint"] == "Find discount code"
    assert texts(reading) == [("user", "Find where discounts are computed."),
                              ("assistant", "Searching for discount logic."),
                              ("tool", "Grep: def .*discount"),
                              ("assistant", "Discounts are computed in cart.py, apply_discount().")]


def test_a_warm_up_subagent_keeps_no_warm_up_prompt():
    _unit, reading = read_own()[f"{MAIN}/agent-a1b2c3d4"]
    assert texts(reading) == [("assistant", "I'm ready to search the codebase.")]
    assert reading.hints["parent_session_id"] == MAIN and "agent_type" not in reading.hints


def test_hints_never_hold_empty_values():
    for _unit, reading in read_own().values():
        assert all(isinstance(value, str) and value for value in reading.hints.values())


# -- robustness

def test_bad_lines_are_skipped_and_counted_never_raised():
    _unit, reading = read_own()[BROKEN]
    assert texts(reading) == [("user", "Fix the login redirect."), ("assistant", "Fixed the redirect in login.py.")]
    assert reading.warnings == {"malformed_line": 3, "invalid_utf8": 1, "unknown_type:brand-new-type": 1}


def test_a_unit_whose_file_is_gone_raises_unit_error(tmp_path):
    unit = Unit(id="gone", ref="gone", fingerprint="1:1", modified=None, path=str(tmp_path / "gone.jsonl"))
    with pytest.raises(UnitError, match="gone.jsonl"):
        ClaudeCodeConnector(tmp_path).read(unit)


def test_a_huge_file_is_streamed_with_memory_far_below_its_size(tmp_path):
    """~50 MB of tool output, a few 2 MB pasted images and one 5 MB line over the cap."""
    path = tmp_path / "big.jsonl"
    result = json.dumps({"type": "user", "sessionId": "big", "timestamp": "2026-03-02T10:00:00Z",
                         "message": {"role": "user", "content": [
                             {"type": "tool_result", "tool_use_id": "t", "content": "o" * 2000}]}}) + "\n"
    with open(path, "w", encoding="utf-8") as handle:
        for n in range(24_000):
            handle.write(result)
            if n % 6000 == 0:
                handle.write(json.dumps({"type": "user", "sessionId": "big", "timestamp": "2026-03-02T10:00:00Z",
                                         "message": {"role": "user", "content": [
                                             {"type": "text", "text": f"screenshot {n}"},
                                             {"type": "image", "source": {"data": "A" * 2_000_000}}]}}) + "\n")
        handle.write('{"type":"user","message":{"content":"' + "B" * 5_000_000 + '"}}\n')
        handle.write(json.dumps({"type": "user", "message": {"role": "user", "content": "last words"}}) + "\n")
    size = path.stat().st_size
    assert size > 50_000_000
    tracemalloc.start()
    try:
        _unit, reading = read_file(path)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 30_000_000, f"peak {peak} bytes for a {size}-byte file"
    assert [text for _role, text in texts(reading)] == [
        "screenshot 0", "screenshot 6000", "screenshot 12000", "screenshot 18000", "last words"]
    assert reading.warnings == {"oversized_line": 1}


# -- building from configuration

def test_the_registry_builds_a_connector_from_its_configuration(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    config = {"name": "agent-laptop", "type": "claude_code", "path": "~/projects", "trust": "own",
              "min_chars": 400, "user_prompt_markers": []}
    connector = registry.make("claude_code", config)
    assert isinstance(connector, ClaudeCodeConnector)
    assert connector.root == tmp_path / "projects"
    assert config["path"] == "~/projects"   # the caller's configuration is left alone
    with pytest.raises(ValueError, match="no reader"):
        registry.make("fax", {"path": "/x"})


def test_unit_times_are_utc(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"type":"user","timestamp":"2026-03-02T12:00:00+02:00","message":{"content":"hi there"}}\n')
    os.utime(path, (1_700_000_000, 1_700_000_000))
    unit, reading = read_file(path)
    assert unit.modified.tzinfo == UTC and unit.modified.timestamp() == 1_700_000_000
    assert reading.entries[0].time.isoformat() == "2026-03-02T10:00:00+00:00"
