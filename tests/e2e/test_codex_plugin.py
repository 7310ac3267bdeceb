"""The Codex plugin, installed the way a person does it, with the real Codex CLI from the npm
registry (`./test` puts it in .test-tools/; JEZERO_TEST_CODEX points at another): the
repository is a Codex marketplace offering its own plugin (not the Claude Code one, whose
MCP entry Codex cannot read), `codex plugin add` registers the MCP server with its literal
URL and the bearer token's variable, and in a real `codex exec` session the plugin's hooks
call a real `jezero serve` with the token for the session-start and first-prompt context."""

import json
import os
import shutil
import signal
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
            stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_until(lambda: "first-prompt" in access_log.read_text(), timeout=60,
                       what="the plugin's first-prompt hook to call Jezero")
        finally:
            # `codex` is a node launcher of the native binary: end the whole group, not the launcher alone.
            os.killpg(session.pid, signal.SIGKILL)
            session.wait(timeout=30)
        lines = access_log.read_text()
    assert '"POST /api/v1/hooks/session-start HTTP/1.1" 200' in lines
    assert '"POST /api/v1/hooks/first-prompt HTTP/1.1" 200' in lines
    shutil.rmtree(tmp_path / "state", ignore_errors=True)


ANSWER = ("The worker timeout came from gunicorn's default of 30 seconds while the quokkavelt export ran for "
          "about 90: I raised --timeout to 120 in the systemd unit, moved the export to a background job so "
          "that no request waits on it, and added a test that fails when a request takes longer than 20 "
          "seconds. Restart the service with systemctl restart shop-web to pick the change up.")


def test_a_codex_session_through_the_plugin_is_in_the_timeline_within_a_minute(installed, tmp_path):
    """The first hour with Codex: plugin installed, server and worker running, one real `codex exec`
    turn against a fake model on loopback; the Stop hook uploads the rollout (agent=codex) and the
    session is in `jezero timeline` within 60 s of the turn's end."""
    import time

    from tests.e2e.conftest import serving, uploading_library, worker_running
    from tests.fakes.model_server import ModelServer, responses_reply

    env, jezero, token = uploading_library(tmp_path)
    model = ModelServer().start()
    model.script(responses_reply(ANSWER))   # one turn, one model call
    project = tmp_path / "shop"
    project.mkdir()
    # A repository of its own: the plugin sends its remote with the upload and the hooks, so
    # the session and the next one's first prompt are both of project `shop` (the first-prompt
    # rule shows the own project's earlier work on two shared words).
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "remote", "add", "origin", "https://example.com/ana/shop.git"], check=True)
    try:
        with worker_running(env, jezero), serving(env) as url:
            turn = subprocess.run(
                [str(CODEX), "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check",
                 "-c", f'model_providers.fake={{name="fake", base_url="{model.url}/v1", wire_api="responses", '
                       'env_key="OPENAI_API_KEY"}',
                 "-c", "model_provider=fake", "-c", "model=gpt-test",
                 "why do the gunicorn workers time out during the quokkavelt export?"],
                env={**os.environ, "CODEX_HOME": str(installed), "JEZERO_URL": url, "JEZERO_TOKEN": token,
                     "JEZERO_PLUGIN_STATE": str(tmp_path / "state"), "OPENAI_API_KEY": "sk-test-not-real"},
                cwd=project, capture_output=True, text=True, timeout=120)
            assert "hook: Stop Completed" in turn.stdout + turn.stderr, turn.stdout + turn.stderr
            ended = time.monotonic()

            def listed():
                return json.loads(jezero("timeline", "--json").stdout)["results"] or None

            found = wait_until(listed, timeout=60, interval=1, what="the Codex session in jezero timeline")
            took = time.monotonic() - ended
            assert found[0]["source"] == "uploads-laptop" and took < 60
            assert json.loads(jezero("search", "quokkavelt", "--json").stdout)["results"]

            # The next session asks the library through the plugin's MCP server (its address
            # given once, as for a server elsewhere): the model calls search, Codex calls Jezero.
            assert codex(installed, "mcp", "add", "jezero", "--url", f"{url}/mcp", "--bearer-token-env-var",
                         "JEZERO_TOKEN").returncode == 0
            model.requests.clear()
            model.script(responses_reply(call=("mcp__jezero/search", {"query": "quokkavelt export timeout"})),
                         responses_reply("Found it: raise the timeout."), responses_reply("Done."))
            asked = subprocess.run(
                [str(CODEX), "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check",
                 "-c", f'model_providers.fake={{name="fake", base_url="{model.url}/v1", wire_api="responses", '
                       'env_key="OPENAI_API_KEY"}', "-c", "model_provider=fake", "-c", "model=gpt-test",
                 "-c", 'approval_policy="never"', "what did we do about the export timeout?"],
                env={**os.environ, "CODEX_HOME": str(installed), "JEZERO_URL": url, "JEZERO_TOKEN": token,
                     "JEZERO_PLUGIN_STATE": str(tmp_path / "state"), "OPENAI_API_KEY": "sk-test-not-real"},
                cwd=project, capture_output=True, text=True, timeout=120)
            outputs = [item for request in model.requests[1:] for item in request.body.get("input", [])
                       if item.get("type") == "function_call_output"]
            assert asked.returncode == 0 and outputs, asked.stdout[-1500:]
            assert "quokkavelt" in json.dumps(outputs).lower()   # what Jezero's search tool answered
            offered = json.dumps(model.requests[0].body)
            assert '"mcp__jezero"' in offered                       # the server's tools, as Codex offers them
            assert "Data from the Jezero library" in offered        # the first-prompt hook's related record
    finally:
        model.stop()
