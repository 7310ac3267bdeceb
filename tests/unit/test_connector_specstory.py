"""The specstory connector (docs/design.md "Connectors", docs/agent-formats.md): export units, duplicate exports, what
reaches the summariser in the v2 and old formats, hints, times and robustness. The real
exports are read from tests/fixtures/real; hand-made ones under
tests/fixtures/specstory mark every dropped text with NOISE."""

import os
import shutil
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest

from connectors.base import UnitError
from connectors.specstory import SpecStoryConnector
from tests.conftest import everything, texts
from tests.conftest import real_fixture as shared

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / "tests" / "fixtures" / "real"   # real public transcripts (SOURCES.md there)
OWN = REPO / "tests" / "fixtures" / "specstory"
SHOP = OWN / "shop" / ".specstory" / "history"
SITE = OWN / "site" / ".specstory" / "history"
CLAUDE = "7d3c2b1a-0f9e-4d8c-b7a6-5e4d3c2b1a0f"
CODEX = "0199c1d2-e3f4-7a5b-8c6d-7e8f9a0b1c2d"
CURSOR = "c2d3e4f5-a6b7-4c8d-9e0f-1a2b3c4d5e6f"
OLD = "2025-04-28_18-53-list-the-tasks"
SESSIONS = REPO / "tests" / "fixtures" / "sessions"   # more real exports (SOURCES.md there)




def read_file(path):
    connector = SpecStoryConnector(path)
    (unit,) = connector.discover()
    return unit, connector.read(unit)


def read_own():
    connector = SpecStoryConnector(OWN)
    return {unit.id: (unit, connector.read(unit)) for unit in connector.discover()}


def at(text):
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# -- the real exports

def test_a_real_v2_export_keeps_both_prompts_verbatim_and_one_line_per_tool_call():
    """specstory_1 (Claude Code, Markdown v2.1.0): thinking and every tool output drop out;
    the closing /exit command, its output and the caveat say nothing and drop too."""
    unit, reading = read_file(shared("specstory_1.md"))
    session = "066e1e40-6740-41a9-98e0-70c0e7e01db9"
    assert unit.id == unit.ref == session
    prompts = [text for role, text in texts(reading) if role == "user"]
    assert prompts == [
        "Update our ./docs to all use the all caps and `-` naming syntax that most of them have.",
        "Let's change the package for the Gemini CLI provider from pkg/providers/gemini to pkg/providers/geminicli"
        "\n\nUpdate any code that needs adjusted as a result.",
    ]
    tools = [text for role, text in texts(reading) if role == "tool"]
    assert tools[:3] == ["Bash: ls -la ./docs/",
                         'Bash: cd ./docs && mv "cli_version_check.md" "CLI-VERSION-CHECK.md" && mv '
                         '"cloud_sync_head_optimization.md" "CLOUD-SYNC-HEAD-OPTIMIZATION.md" && mv "homebrew_setup.md" '
                         '"HOMEBREW-SETUP.md" && mv "Project Identity.md" "PROJECT-IDENTITY.md" && mv "spst_posthog.md" '
                         '"SPST-POSTHOG.md"',
                         "Bash: ls -la ./docs/"]
    for line in ("Grep: providers/gemini", "Read: ./pkg/spi/factory/registry.go", "TodoWrite: 4 items",
                 "Glob: /Users/sean/Source/SpecStory/getspecstory/specstory-cli/pkg/providers/geminicli/*.go",
                 "Edit: /Users/sean/Source/SpecStory/getspecstory/specstory-cli/pkg/spi/factory/registry.go",
                 "Bash: go test ./..."):
        assert line in tools
    assert len(tools) == 24
    text = everything(reading)
    for dropped in ("Thought Process", "The user wants me to update", "drwxr-xr-x", "Exit code 1",
                    "ParseProjectSessions", "package factory", "Bye!", "Caveat", "/exit", "<details>", "<tool-use"):
        assert dropped not in text
    assert texts(reading)[-1][0] == "assistant" and texts(reading)[-1][1].startswith("Done. The package has been renamed")
    assert reading.hints == {"agent": "claude_code", "session_id": session, "model": "claude-opus-4-5-20251101",
                             "specstory_version": "2.1.0"}   # the title is only a date: no hint
    assert reading.entries[0].time == at("2026-01-12T15:08:38")
    assert reading.newest_time() == at("2026-01-12T15:20:26")
    assert not reading.warnings


def test_a_real_old_export_has_its_tool_pieces_as_tool_lines_and_the_title_time_everywhere():
    """specstory_6 (`_**User**_` / `_**Assistant**_`, no times in its turns, no session
    comment): every entry takes the time in its title, not the file's modification time."""
    unit, reading = read_file(shared("specstory_6.md"))
    assert unit.id == unit.ref == "specstory_6"
    assert texts(reading)[:4] == [
        ("user", "what tasks are available?"),
        ("tool", 'Searched codebase "task"'),
        ("tool", "Bash: bun run minsky tasks list --json | jq ."),
        ("assistant", texts(reading)[3][1]),
    ]
    assert texts(reading)[3][1].startswith("Here are the currently available tasks:")
    assert ("user", "go ahead and start working on #004") in texts(reading)
    assert ("tool", "Read: src/commands/session/get.ts") in texts(reading)
    assert ("tool", "Listed directory .cursor/rules") in texts(reading)
    assert ("tool", "Bash: cat temp-header.txt") in texts(reading)
    text = everything(reading)
    for dropped in ("edobry@linkslate", '"status": "TODO"', "src/domain/tasks.ts", "Cancelled",
                    "Could not find file", "L1-14"):
        assert dropped not in text
    assert {entry.time for entry in reading.entries} == {at("2025-04-28T14:53:22")}
    assert reading.hints == {"title_hint": "Available Tasks Inquiry"}


def test_a_real_codex_cli_export_has_one_tool_line_per_call_and_none_of_their_output():
    """211 (Codex CLI, Markdown v2.1.0): 88 `<tool-use>` blocks of exec_command, apply_patch
    and update_plan, whose outputs (`Chunk ID: …`, `Process exited with code 0`, listings,
    diffs) never reach the summariser: one line per call."""
    path = SESSIONS / "211_revise-this-entire-sourcecode.md"
    _unit, reading = read_file(path)
    calls = path.read_text(encoding="utf-8").count("<tool-use ")
    tools = [text for role, text in texts(reading) if role == "tool"]
    assert calls == len(tools) == 88
    assert tools[:2] == ["Bash: pwd && rg --files -g '!node_modules' -g '!dist' -g '!build' -g '!venv' "
                         "-g '!__pycache__'", "Bash: git status --short"]
    assert "tool: update_plan: 4 steps" in [f"{role}: {text}" for role, text in texts(reading)]
    assert all("\n" not in tool for tool in tools)
    text = everything(reading)
    for output in ("Chunk ID:", "Process exited with code", "Original token count", "modern-tool-use-pattern/README.md",
                   "```"):
        assert output not in text
    assert sum(len(entry.text) for entry in reading.entries) < 20_000     # of a 199,685-byte export
    assert reading.hints["agent"] == "codex" and reading.hints["model"] == "gpt-5.5"
    assert not reading.warnings


CARRIED_OVER = """<!-- Generated by SpecStory, Markdown v2.1.0 -->

# 2026-06-18 15:52:09Z

<!-- Gemini CLI Session e1cce4a2-849a-41cf-9418-893cca3a7401 (2026-06-18 15:52:09Z) -->

_**Agent (2026-06-18 15:52:09Z)**_

Resumed from a Codex CLI session via SpecStory.

---

_**User (2026-06-18 15:52:10Z)**_

Read docs/RESEARCH-TASK.md and summarise the six standards.

---

_**Agent (2026-06-18 15:52:13Z)**_

**Listing files in docs directory**

_**Agent (2026-06-18 15:52:14Z)**_

Tool use: **exec_command** `rg --files docs`

```
Chunk ID: f26886
Process exited with code 0
Output:
docs/NOISE-1.md
```

_**Agent (2026-06-18 15:52:16Z)**_

I will read the reports before writing.

Tool use: **exec_command** `cat docs/systems/agentblame.md`

```
# Agentblame NOISE-2

```mermaid
flowchart LR
  A --> B
```

---

## After the diagram: NOISE-3

_**User (2026-01-01 00:00:00Z)**_

a quoted export: NOISE-4

```text
NOISE-5
```
```

_**Agent (2026-06-18 15:53:06Z)**_

**Update: `docs/STANDARD-SUMMARY.md`**

```diff
@@
+NOISE-6
```

**Add: `docs/INDEX.md`**

```diff
+NOISE-7
```

_**Agent (2026-06-18 15:53:10Z)**_

Tool use: **TodoWrite**

- [x] read NOISE-8
- [ ] write

_**Agent (2026-06-18 15:53:12Z)**_

Created `docs/STANDARD-SUMMARY.md`; the quoted form is:

```
Tool use: **exec_command** `ls`
```

---

_**User (2026-06-18 15:54:00Z)**_

Add a paragraph to each section.

---
"""

LEGACY_CLAUDE = """## 2025-07-10 09:00:00Z

<!-- Claude Code Session 44444444-aaaa-bbbb-cccc-000000000006 (2025-07-10_09-00-00Z) -->

_**User**_

fix the gitignore so xcuserdata is not tracked

---

_**Agent (claude-opus-4-20250514)**_

Tool use: **Read** `./BearApp/.gitignore`

Result:

```
*.xcuserstate NOISE
```

_**Agent (claude-opus-4-20250514)**_

Tool use: **Bash** Remove xcuserdata from git tracking

`git rm -r --cached BearApp.xcodeproj/xcuserdata/`

Result:

```
fatal: pathspec NOISE did not match any files
```

_**Agent (claude-opus-4-20250514)**_

Done: xcuserdata is untracked now.
"""


def test_tool_calls_written_as_text_become_one_line_each_and_their_output_is_dropped(tmp_path):
    """A session SpecStory carried over from Codex CLI into Gemini CLI writes each call as
    text: `Tool use: **exec_command** `cmd``, then its output in a fence that the output's own
    fences break (in the real export this kept 111,431 characters of output in one assistant
    block); a patch becomes its `**Update: `file`**` lines and diffs. Each call is one tool
    line; its output, up to the next turn, is dropped, even a quoted turn header inside it."""
    path = tmp_path / "2026-06-18_15-52-09Z-read-docs.md"
    path.write_text(CARRIED_OVER, encoding="utf-8")
    _unit, reading = read_file(path)
    assert texts(reading) == [
        ("assistant", "Resumed from a Codex CLI session via SpecStory."),
        ("user", "Read docs/RESEARCH-TASK.md and summarise the six standards."),
        ("assistant", "**Listing files in docs directory**"),
        ("tool", "Bash: rg --files docs"),
        ("assistant", "I will read the reports before writing."),
        ("tool", "Bash: cat docs/systems/agentblame.md"),
        ("tool", "apply_patch: docs/STANDARD-SUMMARY.md, docs/INDEX.md"),
        ("tool", "TodoWrite: 2 items"),
        ("assistant", "Created `docs/STANDARD-SUMMARY.md`; the quoted form is:\n\n```\n"
                      "Tool use: **exec_command** `ls`\n```"),
        ("user", "Add a paragraph to each section."),
    ]
    assert "NOISE" not in everything(reading)
    assert reading.hints["agent"] == "gemini_cli"


def test_the_legacy_claude_code_format_has_its_calls_as_tool_lines(tmp_path):
    """Before `<tool-use>` blocks: `Tool use: **Bash** <description>`, the command as inline
    code, `Result:` and the output; the command names the call, the output is dropped."""
    path = tmp_path / "2025-07-10_09-00-00Z-fix-the-gitignore.md"
    path.write_text(LEGACY_CLAUDE, encoding="utf-8")
    _unit, reading = read_file(path)
    assert texts(reading) == [
        ("user", "fix the gitignore so xcuserdata is not tracked"),
        ("tool", "Read: ./BearApp/.gitignore"),
        ("tool", "Bash: git rm -r --cached BearApp.xcodeproj/xcuserdata/"),
        ("assistant", "Done: xcuserdata is untracked now."),
    ]


# -- discovery

def test_discovery_finds_exports_by_session_id_and_skips_other_markdown():
    units = {unit.id: unit for unit in SpecStoryConnector(OWN).discover()}
    assert set(units) == {CLAUDE, CODEX, CURSOR, OLD}        # history/README.md is not an export
    assert all(unit.ref == unit.id for unit in units.values())
    claude = units[CLAUDE]
    stat = Path(claude.path).stat()
    assert claude.fingerprint == f"{stat.st_size}:{stat.st_mtime_ns}"
    assert claude.path == str(SHOP / "2025-09-14_09-00-00Z-add-a-discount-field.md")


def test_the_same_session_exported_under_several_names_is_one_unit_read_from_the_newest(tmp_path):
    source = SHOP / "2025-09-14_09-00-00Z-add-a-discount-field.md"
    first = tmp_path / "2025-09-14_09-00-00Z-add-a-discount.md"
    grown = tmp_path / "2025-09-14_09-00-00Z-add-a-discount-field-to-the-cart.md"
    text = source.read_text(encoding="utf-8")
    first.write_text(text[: text.index("_**User (2025-09-14 09:06:00-0200)**_")], encoding="utf-8")
    grown.write_text(text, encoding="utf-8")
    os.utime(first, (1_757_840_000, 1_757_840_000))
    os.utime(grown, (1_757_850_000, 1_757_850_000))
    connector = SpecStoryConnector(tmp_path)
    (unit,) = connector.discover()
    assert unit.id == CLAUDE and unit.path == str(grown)
    assert texts(connector.read(unit))[-1] == ("assistant", "Lint is clean.")

    os.utime(first, (1_757_860_000, 1_757_860_000))     # re-exported later: now that one is newest
    (unit,) = connector.discover()
    assert unit.path == str(first)


def test_discovery_reads_only_the_first_lines_for_the_session_id(tmp_path):
    """A marker further down (here in a tool output) does not make a file an export, nor give
    it a session: only the header counts."""
    quoted = tmp_path / "notes.md"
    quoted.write_text("# Notes\n\n" + "text\n" * 20
                      + "<!-- Generated by SpecStory, Markdown v2.1.0 -->\n"
                      + f"<!-- Claude Code Session {CLAUDE} (2025-09-14 09:00:00Z) -->\n", encoding="utf-8")
    late = tmp_path / "late.md"
    late.write_text("<!-- Generated by SpecStory -->\n\n_**User**_\n\nhello\n\n"
                    f"<!-- Claude Code Session {CLAUDE} (x) -->\n", encoding="utf-8")
    units = list(SpecStoryConnector(tmp_path).discover())
    assert [(unit.id, Path(unit.path).name) for unit in units] == [("late", "late.md")]


# -- what reaches the summariser

def test_only_prompts_agent_text_and_tool_lines_reach_the_summariser():
    unit, reading = read_own()[CLAUDE]
    assert texts(reading) == [
        ("user", "Add a discount field to the cart total.\nKeep the `---` separator style in docs/CART.md as it is."),
        ("assistant", "I will look at the cart first."),
        ("tool", "Bash: cat .specstory/history/old.md"),        # its output quotes a whole other export
        ("tool", "Bash: cat docs/CART.md"),                     # its output has an unbalanced ``` fence
        ("tool", "Read: ./shop/cart.py"),                       # a ```` fence hides a quoted closing tag
        ("tool", "Grep: def total"),
        ("tool", "TodoWrite: 3 items"),
        ("tool", "Edit: /home/ana/shop/shop/cart.py"),          # the path comes from the result's first line
        ("tool", "Write: /home/ana/shop/tests/test_cart.py"),
        ("tool", "Bash: cd /home/ana/shop"),                    # a multi-line command: its first line
        ("tool", "Task: Review the discount change"),
        ("assistant", "Review the discount change in shop/cart.py.\n\nThe change looks right."),   # sidechain
        ("tool", "ToolSearch: select:ExitPlanMode"),
        ("assistant", "I added the discount field and a test. To run it again:\n\n```bash\n"
                      "_**User (2025-09-14 09:00:33Z)**_\npytest -q tests/test_cart.py\n```"),
        ("user", "Thanks. Also run ruff."),                     # /exit and its output are dropped
        ("tool", "Bash: ruff check ."),
        ("assistant", "Lint is clean."),
    ]
    assert "NOISE" not in everything(reading)
    assert not reading.warnings


def test_a_session_marker_quoted_in_tool_output_starts_no_session_and_no_turn():
    unit, reading = read_own()[CLAUDE]
    assert unit.id == reading.hints["session_id"] == CLAUDE
    assert "99999999" not in everything(reading) and "quoted prompt" not in everything(reading)
    assert sum(1 for role, _text in texts(reading) if role == "user") == 2


def test_turn_headers_give_times_and_models():
    _unit, reading = read_own()[CLAUDE]
    times = {text: entry.time for entry in reading.entries for text in [entry.text]}
    assert times["I will look at the cart first."] == at("2025-09-14T09:00:07")
    assert times["Thanks. Also run ruff."] == at("2025-09-14T11:06:00")      # written with a -0200 offset
    assert reading.newest_time() == at("2025-09-14T11:06:09")
    assert reading.hints["model"] == "claude-sonnet-4-5"                      # not the sidechain's haiku


def test_hints_come_from_the_header_and_the_history_folder():
    _unit, reading = read_own()[CLAUDE]
    assert reading.hints == {"agent": "claude_code", "session_id": CLAUDE, "model": "claude-sonnet-4-5",
                             "specstory_version": "2.1.0", "title_hint": "Add a discount field to the cart",
                             "cwd": str(OWN / "shop")}


def test_a_codex_export_names_shell_commands_patches_and_plans():
    _unit, reading = read_own()[CODEX]
    assert texts(reading) == [
        ("user", "Rename the --verbose flag to --loud."),
        ("tool", 'Bash: rg -n "verbose" cli.py'),              # the command sits in the summary
        ("tool", "update_plan: 2 steps"),
        ("tool", "apply_patch: cli.py, README.md"),
        ("assistant", "Renamed the flag to --loud in cli.py and the README."),
    ]
    assert "NOISE" not in everything(reading)
    assert reading.hints["agent"] == "codex" and reading.hints["model"] == "gpt-5-codex"
    assert "title_hint" not in reading.hints


def test_a_cursor_export_takes_details_from_summaries_and_times_from_user_turns():
    _unit, reading = read_own()[CURSOR]
    assert texts(reading) == [
        ("user", "Remove the cookie banner from the landing page."),
        ("tool", "read_file: /home/ana/site/index.html"),
        ("tool", 'grep: Grep for "cookie-banner"'),
        ("assistant", "I found the banner in index.html and will remove it."),
        ("tool", "search_replace: /home/ana/site/index.html"),
        ("tool", "Bash: cd /home/ana/site && npm test"),        # run_terminal_cmd; &amp; unescaped
        ("assistant", "The banner is gone and the tests pass."),
        ("user", "Thanks!"),
        ("assistant", "You're welcome."),
    ]
    assert "NOISE" not in everything(reading)
    # agent headers carry no time here: they take the time of the turn before them
    assert [entry.time for entry in reading.entries][-3:] == [at("2025-12-02T12:49"), at("2025-12-02T13:10"),
                                                              at("2025-12-02T13:10")]
    assert reading.hints["agent"] == "cursor" and reading.hints["model"] == "claude-4.5-sonnet-thinking"
    assert reading.hints["title_hint"] == "Remove the cookie banner"


def test_the_old_format_turns_tool_pieces_into_tool_lines():
    unit, reading = read_own()[OLD]
    assert texts(reading) == [
        ("user", "what tasks are open?"),
        ("tool", 'Searched codebase "task status"'),
        ("tool", "Read: src/tasks.ts"),
        ("tool", "Bash: npm run tasks -- --open"),
        ("tool", "Edit"),                                       # a bare diff names no file
        ("assistant", "Task #004 is the only open one; I marked it in progress."),
        ("user", "thanks"),
    ]
    assert "NOISE" not in everything(reading)
    assert {entry.time for entry in reading.entries} == {at("2025-04-28T18:53:22")}
    assert reading.hints == {"title_hint": "List the open tasks", "cwd": str(OWN / "site")}


EARLIEST = """## SpecStory

## Add the retry flag to the uploader (25/02/2025, 04:13:38)

_**User**_

@upload.py has no --retries option, unlike fetch.py:

    parser.add_argument("--retries", type=int, default=3)

but should

---

_**Assistant**_

<think>NOISE: the user wants the same option. Let me look at both files.

More NOISE reasoning.</think>Looking at the code, `upload.py` parses no `--retries` option. I'll add it:

---

_****_

```diff
+     parser.add_argument("--retries", type=int, default=3)
```

---

_****_



Now `upload.py` retries failed uploads three times, like `fetch.py`.

---

_**User**_

also log each retry

---

_**Assistant**_

<think>NOISE one line of reasoning</think>Each retry is now logged with its attempt number.

---
"""


def test_the_earliest_format_keeps_every_turn_after_reasoning_closed_mid_line(tmp_path):
    """Exports of early 2025: a `## SpecStory` header, `_****_` before each tool piece, and the
    answer on the very line that closes `<think>` — everything after it used to be lost."""
    history = tmp_path / ".specstory" / "history"
    history.mkdir(parents=True)
    (history / "2025-02-25_04-13-add-the-retry-flag.md").write_text(EARLIEST)
    (history / "notes.md").write_text("# Just notes\n")
    connector = SpecStoryConnector(tmp_path)
    (unit,) = connector.discover()          # found as an export; the notes are not
    reading = connector.read(unit)
    assert texts(reading) == [
        ("user", '@upload.py has no --retries option, unlike fetch.py:\n\n'
                 '    parser.add_argument("--retries", type=int, default=3)\n\nbut should'),
        ("assistant", "Looking at the code, `upload.py` parses no `--retries` option. I'll add it:"),
        ("tool", "Edit"),
        ("assistant", "Now `upload.py` retries failed uploads three times, like `fetch.py`."),
        ("user", "also log each retry"),
        ("assistant", "Each retry is now logged with its attempt number."),
    ]
    assert "NOISE" not in everything(reading) and "_****_" not in everything(reading)
    assert reading.hints["title_hint"] == "Add the retry flag to the uploader"
    assert {entry.time for entry in reading.entries} == {at("2025-02-25T04:13:38")}
    assert not reading.warnings


@pytest.mark.parametrize(("name", "header", "started"), [
    # the session comment wins over the title and the file name
    ("2025-01-01_00-00Z-x.md", "<!-- Cursor Session abc (2025-10-25 01:10Z) -->\n\n# Fix it (2025-10-24 09:00Z)",
     "2025-10-25T01:10"),
    ("notes.md", "# Fix it (2025-06-24 17:39:47)", "2025-06-24T17:39:47"),
    ("notes.md", "# 2025-12-06 19:04:39Z", "2025-12-06T19:04:39"),            # a title that is only a date
    ("2025-03-04_07-54-untitled.md", "## Untitled (04/03/2025, 07:54:15)", "2025-03-04T07:54:15"),
    ("2025-03-04_07-54-untitled.md", "## Untitled (3/4/2025, 07:54:15)", "2025-03-04T07:54:15"),  # the name decides
    ("2025-03-04_07-54-untitled.md", "## Untitled (5/5/2025, 07:54:15)", "2025-03-04T07:54"),     # the name wins
    ("2025-12-04_22-53-01Z-week.md", "# Week widget", "2025-12-04T22:53:01"),
    ("notes.md", "## 面包屑导航 (2025/1/22 17:33:05)", "2025-01-22T17:33:05"),        # year first
    ("notes.md", "## Edit button (3/1/2025, 11:20:02 PM)", "2025-03-01T23:20:02"),    # en-US: month first
    ("notes.md", "## Untitled (04/03/2025, 07:54:15)", "2025-03-04T07:54:15"),        # en-GB: day first
    ("notes.md", "## Fix (27/02/2025, 12:02:35)", "2025-02-27T12:02:35"),
    ("notes.md", "## Fix (2/27/2025, 12:02:35)", "2025-02-27T12:02:35"),             # past 12 shows the order
    ("notes.md", "## Fix (3/1/2025, 12:05:00 AM)", "2025-03-01T00:05"),
])
def test_an_export_without_times_in_its_turns_takes_the_session_start_from_its_header_or_name(
        tmp_path, name, header, started):
    """A history folder committed to a repository is checked out with every file modified at
    the checkout: without this its sessions would all be dated today."""
    path = tmp_path / name
    path.write_text(f"<!-- Generated by SpecStory -->\n\n{header}\n\n_**User**_\n\nfix it\n\n---\n\n"
                    "_**Assistant**_\n\nFixed.\n\n---\n", encoding="utf-8")
    _unit, reading = read_file(path)
    assert {entry.time for entry in reading.entries} == {at(started)}


def test_an_export_that_gives_no_time_anywhere_takes_the_file_time(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("<!-- Generated by SpecStory -->\n\n# Fix it (31/31/2025)\n\n_**User**_\n\nfix it\n",
                    encoding="utf-8")
    unit, reading = read_file(path)
    assert [entry.time for entry in reading.entries] == [unit.modified]


# -- robustness

def test_bad_lines_are_skipped_and_counted(tmp_path):
    path = tmp_path / "export.md"
    path.write_bytes(
        b"<!-- Generated by SpecStory, Markdown v2.1.0 -->\n\n"
        b"_**User (2025-09-14 09:00:00Z)**_\n\nplease fix \xff\xfe the build NOISE\nthe build is red\n\n---\n\n"
        b"_**Agent (m 2025-09-14 09:00:05Z)**_\n\n" + b"x" * (1024 * 1024) + b"\n"
        b"Fixed it.\n\n_**Agent (m 2025-09-14 09:00:06Z)**_\n\n<think><details><summary>Thought Process</summary>\n"
        b"NOISE thinking that never closes\n")
    _unit, reading = read_file(path)
    assert texts(reading) == [("user", "the build is red"), ("assistant", "Fixed it.")]
    assert reading.warnings == {"invalid_utf8": 1, "oversized_line": 1, "unclosed_block": 1}


def test_a_big_export_is_streamed_without_holding_tool_outputs(tmp_path):
    """~20 MB of tool output in a v2 export: memory stays far below the file's size."""
    path = tmp_path / "big.md"
    output = "o" * 199 + "\n"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("<!-- Generated by SpecStory, Markdown v2.1.0 -->\n\n"
                     "_**User (2026-03-02 10:00:00Z)**_\n\nshow the log\n\n---\n\n")
        for n in range(10):
            handle.write(f"_**Agent (m 2026-03-02 10:00:{n:02d}Z)**_\n\n"
                         '<tool-use data-tool-type="shell" data-tool-name="Bash"><details>\n'
                         f"<summary>Tool use: **Bash**</summary>\n`cat log-{n}.txt`\n\n```text\n")
            handle.write(output * 10_000)
            handle.write("```\n</details></tool-use>\n\n")
        handle.write("_**Agent (m 2026-03-02 10:01:00Z)**_\n\nThe log is clean.\n")
    size = path.stat().st_size
    assert size > 20_000_000
    tracemalloc.start()
    try:
        _unit, reading = read_file(path)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, f"peak {peak} bytes for a {size}-byte file"
    assert texts(reading) == [("user", "show the log"), *[("tool", f"Bash: cat log-{n}.txt") for n in range(10)],
                              ("assistant", "The log is clean.")]


def test_a_file_given_directly_is_read_even_if_it_is_no_export(tmp_path):
    path = tmp_path / "plain.md"
    path.write_text("# Just notes\n\nNothing here.\n", encoding="utf-8")
    unit, reading = read_file(path)
    assert unit.id == "plain" and reading.entries == []
    assert reading.warnings == {"no_turns": 1}


def test_a_vanished_file_is_a_unit_error(tmp_path):
    path = tmp_path / "gone.md"
    shutil.copy(SHOP / "2025-09-15_10-00-00Z-rename-the-verbose-flag.md", path)
    connector = SpecStoryConnector(tmp_path)
    (unit,) = connector.discover()
    path.unlink()
    with pytest.raises(UnitError):
        connector.read(unit)


# -- end to end

@pytest.mark.django_db
def test_a_run_stores_one_item_per_export_with_the_extractive_summariser(settings, monkeypatch, tmp_path):
    from connectors import registry
    from jezero_site.config import validate
    from library import store
    from library.ingest import pipeline
    from library.ingest.summarize.extractive import ExtractiveSummarizer
    from library.models import Item

    monkeypatch.setitem(registry.CONNECTOR_TYPES, "specstory", SpecStoryConnector)
    folder = tmp_path / "shop" / ".specstory" / "history"
    shutil.copytree(SHOP, folder)
    shutil.copy(SHOP / "2025-09-14_09-00-00Z-add-a-discount-field.md", folder / "2025-09-14_09-00-00Z-copy.md")
    old = time.time() - 2 * 86_400
    for path in folder.iterdir():
        os.utime(path, (old, old))
    config = {"name": "specstory-laptop", "type": "specstory", "path": str(tmp_path), "min_chars": 0}
    settings.JEZERO = {**settings.JEZERO, "connectors": validate({"connectors": [config]})["connectors"]}

    report = pipeline.run("specstory-laptop", summarizer=ExtractiveSummarizer())
    assert (report.units_seen, report.units_failed) == (2, 0)      # the copy is the same session
    item = Item.objects.get(key=f"specstory-laptop:{CLAUDE}#0")
    assert item.original_ref == CLAUDE and item.trust == "own" and item.summarizer == "extractive"
    assert item.title == "Add a discount field to the cart"        # the export's own title (docs/design.md "The extractive summariser")
    assert "tool: Bash: ruff check ." in item.original and "NOISE" not in item.original
    assert item.occurred_at == at("2025-09-14T11:06:09")
    assert item.hints["cwd"] == str(tmp_path / "shop")
    assert {"kind": "command", "text": "ruff check ."} in item.atoms
    assert Item.objects.filter(original_ref=CODEX).count() == 1
    assert store.check().ok
