"""The files Claude Code reads to install the plugin: the repository's marketplace, the
plugin manifest and hooks.json — and that every hook command, run through a shell exactly as
written, starts the script (and, with no configuration, says nothing)."""

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugins" / "claude-code"
EVENTS = {"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"}


def load(path):
    return json.loads(path.read_text())


def commands():
    for event, groups in load(PLUGIN / "hooks" / "hooks.json")["hooks"].items():
        for group in groups:
            for entry in group["hooks"]:
                yield event, group, entry


def test_the_marketplace_lists_the_plugin_folder():
    """`/plugin marketplace add <repo>` then `/plugin install jezero@jezero` finds plugins/claude-code."""
    market = load(ROOT / ".claude-plugin" / "marketplace.json")
    assert market["name"] == "jezero" and market["owner"]["name"]
    (entry,) = market["plugins"]
    assert entry["name"] == "jezero"
    assert (ROOT / entry["source"]).resolve() == PLUGIN
    manifest = load(PLUGIN / ".claude-plugin" / "plugin.json")
    assert manifest["name"] == "jezero" and manifest["description"]
    client = (PLUGIN / "hooks" / "jezero_client.py").read_text()
    assert manifest["version"] == entry["version"] and f'VERSION = "{manifest["version"]}"' in client


def test_hooks_json_wires_the_four_events_with_timeouts():
    """SessionStart (all four sources), UserPromptSubmit, Stop and SessionEnd each run the hook script."""
    wired = {}
    for event, group, entry in commands():
        assert entry["type"] == "command" and 0 < entry["timeout"] <= 10
        assert '"${CLAUDE_PLUGIN_ROOT}/hooks/jezero_hook.py" ' + event in entry["command"]
        wired[event] = group.get("matcher")
    assert set(wired) == EVENTS
    assert wired["SessionStart"] == "startup|resume|clear|compact"


def test_every_hook_command_runs_as_written(tmp_path):
    """Each command line, expanded by a shell with CLAUDE_PLUGIN_ROOT set (a path with a space),
    runs the script: with no configuration it exits 0 and prints nothing."""
    installed = tmp_path / "plugin cache" / "jezero"
    (installed / "hooks").mkdir(parents=True)
    for name in ("jezero_hook.py", "jezero_client.py"):
        (installed / "hooks" / name).write_bytes((PLUGIN / "hooks" / name).read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JEZERO_", "XDG_"))}
    env.update(CLAUDE_PLUGIN_ROOT=str(installed), HOME=str(tmp_path / "home"))
    for event, _group, entry in commands():
        proc = subprocess.run(["sh", "-c", entry["command"]], input=json.dumps({"session_id": "s1"}),
                              capture_output=True, text=True, env=env, timeout=10)
        assert (event, proc.returncode, proc.stdout, proc.stderr) == (event, 0, "", "")
