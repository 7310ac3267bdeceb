"""The files Claude Code reads to install the plugin: the repository's marketplace, the
plugin manifest, hooks.json and .mcp.json — and that every hook command, run through a shell
exactly as written, starts the script (and, with no configuration, says nothing). The same
for the Codex hooks configuration that `jezero_codex_hooks.py --print-config` writes."""

import json
import os
import re
import subprocess
import sys
import tomllib
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
    assert manifest["author"]["name"] and manifest["homepage"].startswith("https://")
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


def expand(value, env):
    """Claude Code's expansion in .mcp.json: `${VAR}` and `${VAR:-default}`; an unset variable
    without a default stays as written."""

    def one(match):
        name, default = match.group(1), match.group(3)
        return env.get(name, default if default is not None else match.group(0))

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}", one, value)


def test_the_plugin_registers_the_mcp_server_from_the_hooks_configuration():
    """.mcp.json at the plugin root: an HTTP server "jezero" at $JEZERO_URL/mcp with the bearer
    $JEZERO_TOKEN — the two variables the hooks read — and nothing else (no secret in the file)."""
    servers = load(PLUGIN / ".mcp.json")
    assert list(servers) == ["jezero"]
    server = servers["jezero"]
    assert server == {"type": "http", "url": "${JEZERO_URL}/mcp", "headers": {"Authorization": "Bearer ${JEZERO_TOKEN}"}}
    env = {"JEZERO_URL": "https://jezero.example.net", "JEZERO_TOKEN": "jz_abc"}
    assert expand(server["url"], env) == "https://jezero.example.net/mcp"
    assert expand(server["headers"]["Authorization"], env) == "Bearer jz_abc"
    client = (PLUGIN / "hooks" / "jezero_client.py").read_text()
    assert 'env.get("JEZERO_URL")' in client and 'env.get("JEZERO_TOKEN")' in client


# --- Codex hooks ------------------------------------------------------------------------------------

CODEX_HOOKS = ROOT / "plugins" / "codex" / "jezero_codex_hooks.py"
CODEX_EVENTS = {"SessionStart", "UserPromptSubmit", "Stop"}


def codex_config(form, script):
    proc = subprocess.run([sys.executable, str(script), "--print-config", form], capture_output=True, text=True,
                          timeout=10)
    assert (proc.returncode, proc.stderr) == (0, "")
    return proc.stdout


def installed_codex_scripts(tmp_path):
    """A copy of the two plugin folders under a path with a space, as a checkout may be."""
    root = tmp_path / "my checkout" / "plugins"
    for folder, names in (("codex", ("jezero_codex_hooks.py", "jezero_notify.py")),
                          ("claude-code/hooks", ("jezero_client.py",))):
        (root / folder).mkdir(parents=True)
        for name in names:
            (root / folder / name).write_bytes((ROOT / "plugins" / folder / name).read_bytes())
    return root / "codex" / "jezero_codex_hooks.py"


def test_the_codex_hooks_configuration_wires_three_events(tmp_path):
    """hooks.json and the inline config.toml tables say the same: SessionStart (all sources),
    UserPromptSubmit and Stop run the script by its absolute path, with timeouts (seconds)."""
    script = installed_codex_scripts(tmp_path)
    as_json = json.loads(codex_config("json", script))["hooks"]
    as_toml = tomllib.loads(codex_config("toml", script))["hooks"]
    assert as_json == as_toml
    assert set(as_json) == CODEX_EVENTS
    assert as_json["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"
    for event, (group,) in as_json.items():
        (handler,) = group["hooks"]
        assert handler["type"] == "command" and 0 < handler["timeout"] <= 10
        assert handler["command"] == "python3 '%s' %s" % (script, event)


def test_every_codex_hook_command_runs_as_written(tmp_path):
    """Each command, run the way Codex runs it (`$SHELL -lc <command>`, JSON on stdin), starts the
    script: with no configuration it exits 0 and prints nothing."""
    script = installed_codex_scripts(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JEZERO_", "XDG_", "CODEX_"))}
    env.update(HOME=str(tmp_path / "home"))
    for event, (group,) in json.loads(codex_config("json", script))["hooks"].items():
        payload = {"session_id": "019e9625-802f-7e91-840a-cfe88d14117a", "hook_event_name": event, "cwd": str(tmp_path)}
        proc = subprocess.run(["sh", "-lc", group["hooks"][0]["command"]], input=json.dumps(payload),
                              capture_output=True, text=True, env=env, timeout=10)
        assert (event, proc.returncode, proc.stdout, proc.stderr) == (event, 0, "", "")


def test_the_codex_hooks_find_the_client_copied_beside_them(tmp_path):
    """Copied together into one folder (no checkout), the Codex programs still find jezero_client.py;
    copied without it, a hook still exits 0 in silence."""
    folder = tmp_path / "codex-hooks"
    folder.mkdir()
    for name in ("jezero_codex_hooks.py", "jezero_notify.py"):
        (folder / name).write_bytes((ROOT / "plugins" / "codex" / name).read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JEZERO_", "XDG_", "CODEX_"))}
    env.update(HOME=str(tmp_path / "home"), JEZERO_URL="http://127.0.0.1:9", JEZERO_TOKEN="t",
               JEZERO_PLUGIN_STATE=str(tmp_path / "state"))
    run = [sys.executable, str(folder / "jezero_codex_hooks.py"), "UserPromptSubmit"]
    payload = json.dumps({"session_id": "t1", "prompt": "remove the analytics script", "cwd": str(tmp_path)})
    alone = subprocess.run(run, input=payload, capture_output=True, text=True, env=env, timeout=10)
    assert (alone.returncode, alone.stdout, alone.stderr) == (0, "", "")
    assert not (tmp_path / "state").exists()  # nothing ran: no client
    (folder / "jezero_client.py").write_bytes((PLUGIN / "hooks" / "jezero_client.py").read_bytes())
    together = subprocess.run(run, input=payload, capture_output=True, text=True, env=env, timeout=10)
    assert (together.returncode, together.stdout, together.stderr) == (0, "", "")
    assert "first_prompt_at" in json.loads((tmp_path / "state" / "t1.json").read_text())  # the client ran
