"""The Codex plugin, installed the way a person does it, with the real Codex CLI from the npm
registry (`./test` puts it in .test-tools/; JEZERO_TEST_CODEX points at another): the
repository is a Codex marketplace offering its own plugin (not the Claude Code one, whose
MCP entry Codex cannot read), `codex plugin add` registers the MCP server with its literal
URL and the bearer token's variable, and in a real `codex exec` session the plugin's hooks
call a real `jezero serve` with the token for the session-start and first-prompt context."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import wait_until
from tests.e2e.test_access_log import served

REPO = Path(__file__).resolve().parents[2]
CODEX = Path(os.environ.get("JEZERO_TEST_CODEX") or REPO / ".test-tools" / "node_modules" / ".bin" / "codex")
pytestmark = pytest.mark.skipif(not CODEX.exists(), reason=f"the Codex CLI is not at {CODEX} (./test installs it)")


def codex(home, *args, env=None, timeout=120):
    done = subprocess.run([str(CODEX), *args], env={**os.environ, **(env or {}), "CODEX_HOME": str(home)},
                          capture_output=True, text=True, timeout=timeout)
    return done


@pytest.fixture
def installed(tmp_path):
    """A Codex home with this checkout's marketplace added and the jezero plugin installed."""
    home = tmp_path / "codex-home"
    home.mkdir()
    added = codex(home, "plugin", "marketplace", "add", str(REPO))
    assert added.returncode == 0, added.stderr
    offered = codex(home, "plugin", "list")
    assert "jezero@jezero" in offered.stdout and offered.stdout.count("@jezero") == 1, offered.stdout
    assert f"{REPO}/plugins" in offered.stdout   # the Codex plugin, not plugins/claude-code
    plugin = codex(home, "plugin", "add", "jezero@jezero")
    assert plugin.returncode == 0, plugin.stderr
    return home


def test_codex_plugin_add_registers_the_mcp_server_with_its_url_and_token_variable(installed):
    listed = codex(installed, "mcp", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    servers = {server["name"]: server for server in json.loads(listed.stdout)}
    transport = servers["jezero"]["transport"]
    assert transport["url"] == "http://127.0.0.1:8000/mcp"   # a literal URL: Codex expands no variables there
    assert transport["bearer_token_env_var"] == "JEZERO_TOKEN"
    # A server elsewhere: the address given once, as plugins/README says, takes the plugin's place.
    moved = codex(installed, "mcp", "add", "jezero", "--url", "https://jezero.example.net/mcp",
                  "--bearer-token-env-var", "JEZERO_TOKEN")
    assert moved.returncode == 0, moved.stderr
    servers = [server for server in json.loads(codex(installed, "mcp", "list", "--json").stdout)
               if server["name"] == "jezero"]
    assert [server["transport"]["url"] for server in servers] == ["https://jezero.example.net/mcp"]
    cache = next((installed / "plugins" / "cache" / "jezero" / "jezero").iterdir())
    # Everything the hooks run is inside the installed copy (Codex copies no symlinks).
    assert (cache / "codex" / "jezero_codex_hooks.py").is_file()
    assert (cache / "claude-code" / "hooks" / "jezero_client.py").is_file()


def test_a_codex_session_gets_its_context_from_jezero_through_the_plugins_hooks(installed, tmp_path):
    project = tmp_path / "shop"
    project.mkdir()
    with served(tmp_path) as (url, token, access_log, _error_log):
        env = {"JEZERO_URL": url, "JEZERO_TOKEN": token, "JEZERO_PLUGIN_STATE": str(tmp_path / "state"),
               "OPENAI_API_KEY": "sk-test-not-real"}
        # No model answers (nothing listens on the provider's port): the session starts and its
        # hooks run; Codex then keeps retrying the model, so it is stopped once the hooks are seen.
        session = subprocess.Popen(
            [str(CODEX), "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check",
             "-c", 'model_providers.none={name="none", base_url="http://127.0.0.1:9/v1", wire_api="responses", '
                   'env_key="OPENAI_API_KEY"}',
             "-c", "model_provider=none", "-c", "model=gpt-test", "find the gunicorn worker timeout fix"],
            env={**os.environ, **env, "CODEX_HOME": str(installed)}, cwd=project, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: "first-prompt" in access_log.read_text(), timeout=60,
                       what="the plugin's first-prompt hook to call Jezero")
        finally:
            session.kill()
            session.wait(timeout=30)
        lines = access_log.read_text()
    assert '"POST /api/v1/hooks/session-start HTTP/1.1" 200' in lines
    assert '"POST /api/v1/hooks/first-prompt HTTP/1.1" 200' in lines
    shutil.rmtree(tmp_path / "state", ignore_errors=True)
