"""The `command` provider (docs/design.md "Providers"): a local agent CLI (here small Python scripts) gets the prompt on
stdin and prints the record on stdout; failures and hangs are errors, and a hang is killed."""

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from jezero_site.config import validate
from library.ingest.summarize import SummaryError, SummaryRequest, get_summarizer
from library.ingest.summarize.prompt import JSON_INSTRUCTIONS, SYSTEM_PROMPT
from tests.conftest import wait_until

RECORD = {
    "title": "Rename the settings module",
    "summary": "The settings module was renamed to config. Imports were updated and the tests pass.",
    "questions": ["Why was settings.py renamed to config.py?"],
    "atoms": [{"kind": "command", "text": "git mv settings.py config.py"}],
    "project": None,
}
REQUEST = SummaryRequest(document="user: rename settings.py to config.py\n\nassistant: Done, tests pass.",
                         title_hint="Rename settings")


def agent(tmp_path, body):
    """A fake agent CLI: a Python script whose stdin is the prompt. It saves argv and stdin."""
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent("""\
        import json, sys, pathlib
        here = pathlib.Path(__file__).parent
        prompt = sys.stdin.read()
        (here / "argv.json").write_text(json.dumps(sys.argv[1:]))
        (here / "stdin.txt").write_text(prompt)
    """) + textwrap.dedent(body))
    return [sys.executable, str(script), "--model", "{model}", "-p"]


def summarizer(command, **summarizer_config):
    config = validate({"summarizer": {"provider": "command", "model": "haiku", "command": command,
                                      **summarizer_config}})["summarizer"]
    return get_summarizer(config, env={"PATH": os.environ.get("PATH", "")})


def test_the_record_is_read_from_fenced_json_among_prose(tmp_path):
    """The prompt (system prompt, schema, document) goes in on stdin; `{model}` is substituted."""
    command = agent(tmp_path, f"""
        print("Here is the record you asked for:")
        print("```json")
        print({json.dumps(json.dumps(RECORD))})
        print("```")
        print("Let me know if you need anything else.")
    """)
    summary = summarizer(command, known_projects=["shop-site"]).summarize(REQUEST)

    assert summary.summarizer == "command:haiku"
    assert summary.record.title == "Rename the settings module"
    assert summary.record.atoms == [{"kind": "command", "text": "git mv settings.py config.py"}]
    assert (summary.input_tokens, summary.output_tokens, summary.attempts) == (0, 0, 1)
    assert json.loads((tmp_path / "argv.json").read_text()) == ["--model", "haiku", "-p"]
    prompt = (tmp_path / "stdin.txt").read_text()
    assert prompt.startswith(SYSTEM_PROMPT + "\n\n" + JSON_INSTRUCTIONS)
    assert "Known projects: shop-site\nTitle hint: Rename settings\n\n<document>\n" in prompt
    assert prompt.rstrip().endswith(f"{REQUEST.document}\n</document>")


def test_claude_json_output_is_unwrapped_with_its_token_counts(tmp_path):
    """`claude -p --output-format json` wraps the answer in {"result": ..., "usage": ...}."""
    envelope = {"type": "result", "result": "```json\n" + json.dumps(RECORD) + "\n```",
                "usage": {"input_tokens": 40, "cache_read_input_tokens": 2000, "output_tokens": 180}}
    command = agent(tmp_path, f"print({json.dumps(json.dumps(envelope))})")
    summary = summarizer(command).summarize(REQUEST)
    assert summary.record.title == "Rename the settings module"
    assert (summary.input_tokens, summary.output_tokens) == (2040, 180)


def test_a_non_zero_exit_fails_without_repeating_stderr(tmp_path):
    command = agent(tmp_path, """
        sys.stderr.write("API error, prompt was: " + prompt)
        sys.exit(1)
    """)
    with pytest.raises(SummaryError) as caught:
        summarizer(command).summarize(REQUEST)
    assert "exited with status 1" in str(caught.value)
    assert "rename settings.py" not in str(caught.value)
    assert (caught.value.retryable, caught.value.attempts) == (False, 1)


def test_output_without_a_record_fails(tmp_path):
    command = agent(tmp_path, 'print("I could not find anything to summarise.")')
    with pytest.raises(SummaryError, match="not a JSON object"):
        summarizer(command).summarize(REQUEST)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_a_hanging_agent_is_stopped_at_the_timeout_with_its_children(tmp_path):
    """timeout_seconds bounds the call; the process group is killed, so no agent is left running."""
    # The agent and its child hang: a minute's sleep stands for "never answers" (and ends
    # the processes by itself should the kill fail, rather than leaving them for good).
    command = agent(tmp_path, """
        import os, subprocess, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        (here / "pids.json").write_text(json.dumps([child.pid, os.getpid()]))
        time.sleep(60)
    """)
    started = time.monotonic()
    with pytest.raises(SummaryError, match="timed out after 1 s"):
        summarizer(command, timeout_seconds=1).summarize(REQUEST)
    assert time.monotonic() - started < 5

    for pid in json.loads((tmp_path / "pids.json").read_text()):
        wait_until(lambda pid=pid: not _running(pid), timeout=2, what=f"the killed process {pid} to end")


def _running(pid):
    """True while `pid` runs; a zombie waiting for its reaper counts as stopped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")
