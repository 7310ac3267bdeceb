"""The client plugins against a real Jezero: `jezero serve` in a fresh data folder with an
upload connector and a client token, the Claude Code hook script and the Codex notify program
run as the agents run them. What the agent is shown, and what reaches the library."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import wait_until
from tests.e2e.conftest import free_port, wait_for_health

JEZERO = Path(sys.executable).with_name("jezero")
PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
HOOK = PLUGINS / "claude-code" / "hooks" / "jezero_hook.py"
NOTIFY = PLUGINS / "codex" / "jezero_notify.py"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real"
CODEX_THREAD = "019e9625-802f-7e91-840a-cfe88d14117a"  # the session_meta id inside codex_2.jsonl

RECORDS = [
    {"key": "d1", "title": "Keep analytics behind the consent banner", "summary": "Decided to keep GA behind consent.",
     "questions": ["Do we keep Google Analytics?"], "atoms": [{"kind": "decision", "text": "keep GA behind consent"}],
     "project": "shop-site", "occurred_at": "2026-05-01T09:00:00Z"},
    {"key": "d2", "title": "Remove the analytics script from the shop", "summary": "Replaced GA with server-side counts.",
     "questions": ["Why was analytics removed?"], "atoms": [{"kind": "decision", "text": "remove analytics script"}],
     "project": "shop-site", "occurred_at": "2026-08-01T09:00:00Z"},
    {"key": "d3", "title": "Café menu migration", "summary": "Moved the café menu to the new database migration.",
     "project": "recipes", "occurred_at": "2026-07-01T09:00:00Z"},
]
CONNECTOR = '\n[[connectors]]\nname = "uploads-laptop"\ntype = "upload"\nsettle_minutes = 0\nmin_chars = 0\n'


class Library:
    """A running Jezero and the `jezero` command for its data folder."""

    def __init__(self, root):
        self.root = root
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_") and "proxy" not in k.lower()}
        self.env.update(JEZERO_DATA_DIR=str(root / "data"), HOME=str(root / "home"))
        self.url = "http://127.0.0.1:%d" % free_port()
        self.process = None

    def run(self, *args):
        proc = subprocess.run([str(JEZERO), *args], env=self.env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def run_json(self, *args):
        return json.loads(self.run(*args, "--json"))

    def start(self):
        bind = self.url.removeprefix("http://")
        self.process = subprocess.Popen([str(JEZERO), "serve", "--bind", bind, "--workers", "1"], env=self.env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_health(self.url, self.process)

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    root = tmp_path_factory.mktemp("plugins")
    lib = Library(root)
    lib.run("init")
    with open(root / "data" / "jezero.toml", "a") as config:
        config.write(CONNECTOR)
    added = lib.run_json("client", "add", "laptop", "--sources", "*", "--scopes", "read,upload",
                         "--upload-source", "uploads-laptop")
    assert added["name"] == "laptop" and added["scopes"] == ["read", "upload"]
    lib.token = added["token"]
    records = root / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    lib.run("import-jsonl", str(records), "--source", "agent-x")
    lib.ids = {hit["title"]: hit["id"] for hit in lib.run_json("timeline", "--limit", "10")["results"]}
    lib.start()
    yield lib
    lib.stop()


@pytest.fixture
def device(library, tmp_path):
    """The environment of a machine whose agents use the plugins."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JEZERO_", "XDG_", "CODEX_")) and "proxy" not in k.lower()}
    env.update(HOME=str(tmp_path / "home"), JEZERO_URL=library.url, JEZERO_TOKEN=library.token,
               JEZERO_PLUGIN_STATE=str(tmp_path / "state"), CODEX_HOME=str(tmp_path / "codex"))
    return env


def hook(event, payload, env):
    """Run the Claude Code hook; returns (stdout, seconds)."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(HOOK), event], input=json.dumps(payload), capture_output=True,
                          text=True, env=env, timeout=10)
    assert (proc.returncode, proc.stderr) == (0, "")
    return proc.stdout, time.monotonic() - started


def context_of(stdout, event):
    out = json.loads(stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == event
    return out["additionalContext"]


def payload(event, session_id, tmp_path, **extra):
    return {"session_id": session_id, "transcript_path": str(tmp_path / f"{session_id}.jsonl"),
            "cwd": "/home/ana/src/shop-site", "hook_event_name": event, **extra}


def wait_for_upload(env, session_id, timeout=15.0):
    """The detached uploader records the server's answer in the session's state file."""
    path = Path(env["JEZERO_PLUGIN_STATE"]) / f"{session_id}.json"
    return wait_until(lambda: path.exists() and json.loads(path.read_text()).get("last_upload"), timeout=timeout,
                      what="an upload recorded for %s" % session_id)


def test_session_start_shows_the_projects_newest_items(library, device, tmp_path):
    """A session in ~/src/shop-site starts with the project's items as `[id] date title` lines and the protocol."""
    out, took = hook("SessionStart", payload("SessionStart", "s1", tmp_path, source="startup"), device)
    context = context_of(out, "SessionStart")
    ids = library.ids
    assert f"[{ids['Remove the analytics script from the shop']}] 2026-08-01 Remove the analytics script" in context
    assert f"[{ids['Keep analytics behind the consent banner']}] 2026-05-01 Keep analytics behind" in context
    assert "Café menu" not in context  # another project
    assert "later" in context  # the protocol
    assert took < 2.5


def test_the_first_prompt_brings_related_items_and_later_prompts_nothing(library, device, tmp_path):
    """A first prompt sharing words with a title gets that item; the next prompt gets nothing."""
    first = payload("UserPromptSubmit", "s2", tmp_path, prompt="Why did we remove the analytics script?")
    context = context_of(hook("UserPromptSubmit", first, device)[0], "UserPromptSubmit")
    assert f"[{library.ids['Remove the analytics script from the shop']}] 2026-08-01" in context
    assert "get_item" in context
    again = payload("UserPromptSubmit", "s2", tmp_path, prompt="And remove the analytics script from the menu?")
    assert hook("UserPromptSubmit", again, device)[0] == ""


def test_a_claude_code_session_end_lands_in_the_library(library, device, tmp_path):
    """SessionEnd uploads the transcript; the upload connector turns it into a searchable item."""
    shutil.copyfile(FIXTURES / "claude_7.jsonl", tmp_path / "s3.jsonl")
    out, took = hook("SessionEnd", payload("SessionEnd", "s3", tmp_path, reason="exit"), device)
    assert out == "" and took < 2.0
    upload = wait_for_upload(device, "s3")
    assert upload["status"] == 201, upload
    assert upload["receipt"]["source"] == "uploads-laptop" and upload["receipt"]["agent"] == "claude_code"
    (report,) = library.run_json("run", "--connector", "uploads-laptop")["runs"]
    assert report["units_stored"] == 1, report
    hits = library.run_json("search", "WebSearch")["results"]
    assert any(hit["source"] == "uploads-laptop" for hit in hits), hits


def test_a_codex_turn_uploads_its_rollout(library, device, tmp_path):
    """The notify program finds the thread's rollout under $CODEX_HOME and uploads it as agent=codex."""
    day = Path(device["CODEX_HOME"]) / "sessions" / "2026" / "01" / "02"
    day.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "codex_2.jsonl", day / f"rollout-2026-01-02T10-00-00-{CODEX_THREAD}.jsonl")
    turn = {"type": "agent-turn-complete", "thread-id": CODEX_THREAD, "turn-id": "t1",
            "cwd": "/home/ana/src/shop-site", "input-messages": ["hello"], "last-assistant-message": "hi"}
    proc = subprocess.run([sys.executable, str(NOTIFY), json.dumps(turn)], capture_output=True, text=True,
                          env=device, timeout=10)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    upload = wait_for_upload(device, CODEX_THREAD)
    assert upload["status"] in (200, 201), upload
    assert upload["receipt"]["agent"] == "codex" and upload["receipt"]["session_id"] == CODEX_THREAD
    (report,) = library.run_json("run", "--connector", "uploads-laptop")["runs"]
    assert report["units_stored"] == 1, report
    (item,) = [hit for hit in library.run_json("timeline", "--source", "uploads-laptop")["results"]
               if hit["key"].startswith(f"uploads-laptop:{CODEX_THREAD}")]
    assert library.run_json("show", str(item["id"]))["hints"]["agent"] == "codex"


def test_with_the_server_down_every_hook_is_silent_and_quick(library, device, tmp_path):
    """Nothing listening on the configured port: every hook exits 0 with no output within 2.5 s."""
    device["JEZERO_URL"] = "http://127.0.0.1:%d" % free_port()
    shutil.copyfile(FIXTURES / "claude_7.jsonl", tmp_path / "s4.jsonl")
    for event in ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"):
        out, took = hook(event, payload(event, "s4", tmp_path, source="startup", prompt="remove analytics script"),
                         device)
        assert out == "" and took < 2.5
    # Both background uploads (Stop's waits two seconds for the transcript to settle) failed quietly.
    log = Path(device["JEZERO_PLUGIN_STATE"]) / "plugin.log"
    wait_until(lambda: log.exists() and log.read_text().count("session=s4 failed") >= 2, timeout=10,
               what="both uploads to fail")
    assert log.read_text().count("session=s4 failed: unreachable") == 2


def test_with_a_wrong_token_every_hook_is_silent(library, device, tmp_path):
    """A revoked or mistyped token: no output, exit 0; the refused upload is recorded."""
    device["JEZERO_TOKEN"] = "not-a-real-token"
    shutil.copyfile(FIXTURES / "claude_7.jsonl", tmp_path / "s5.jsonl")
    for event in ("SessionStart", "UserPromptSubmit", "SessionEnd"):
        out, took = hook(event, payload(event, "s5", tmp_path, source="startup", prompt="remove analytics script"),
                         device)
        assert out == "" and took < 2.5
    assert wait_for_upload(device, "s5")["error"] == "http 401"


def test_a_post_with_a_wrong_token_is_401(library):
    """SPEC §12: no or invalid token → 401, on the device routes too."""
    request = urllib.request.Request(library.url + "/api/v1/hooks/session-start", data=b"{}", method="POST",
                                     headers={"Authorization": "Bearer not-a-real-token",
                                              "Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)
    refused.value.close()
    assert refused.value.code == 401
