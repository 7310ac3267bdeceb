"""The client plugins against a real Jezero: `jezero serve` in a fresh data folder with an
upload connector and a client token, the Claude Code hook script, the Codex hook script and
the Codex notify program run as the agents run them. What the agent is shown, what reaches
the library — and that uploads never go backwards, whatever order they arrive in."""

import gzip
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import wait_until
from tests.e2e.conftest import free_port, wait_for_health

JEZERO = Path(sys.executable).with_name("jezero")
PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
HOOK = PLUGINS / "claude-code" / "hooks" / "jezero_hook.py"
NOTIFY = PLUGINS / "codex" / "jezero_notify.py"
CODEX_HOOKS = PLUGINS / "codex" / "jezero_codex_hooks.py"
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
    # SessionEnd's upload failed quietly; Stop's, waiting two seconds for the transcript to
    # settle, gave way to it (a newer upload had started) and sent nothing.
    log = Path(device["JEZERO_PLUGIN_STATE"]) / "plugin.log"
    wait_until(lambda: log.exists() and "session=s4 superseded" in log.read_text(), timeout=10,
               what="the Stop upload to give way")
    assert log.read_text().count("session=s4 failed: unreachable") == 1


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
    """docs/design.md "HTTP API": no or invalid token → 401, on the device routes too."""
    request = urllib.request.Request(library.url + "/api/v1/hooks/session-start", data=b"{}", method="POST",
                                     headers={"Authorization": "Bearer not-a-real-token",
                                              "Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)
    refused.value.close()
    assert refused.value.code == 401


# --- Codex hooks -------------------------------------------------------------------------------------

CODEX_HOOK_THREAD = "019e9625-802f-7e91-840a-cfe88d14117b"  # another thread than notify's test


def codex_hook(event, payload, env):
    """Run the Codex hook as Codex does: the command through `$SHELL -lc`, the JSON on stdin
    (no trailing newline), in the session's folder; returns (stdout, seconds)."""
    command = "python3 %s %s" % (CODEX_HOOKS, event)
    started = time.monotonic()
    proc = subprocess.run([os.environ.get("SHELL") or "/bin/sh", "-lc", command], input=json.dumps(payload),
                          capture_output=True, text=True, env={**env, "PATH": os.path.dirname(sys.executable) + ":"
                                                               + env.get("PATH", "")}, timeout=10)
    assert (proc.returncode, proc.stderr) == (0, "")
    return proc.stdout, time.monotonic() - started


def codex_payload(event, thread=CODEX_HOOK_THREAD, rollout=None, turn=1, **extra):
    """What Codex writes to a command hook's stdin (its hooks' input schemas)."""
    payload = {"session_id": thread, "transcript_path": str(rollout) if rollout else None,
               "cwd": "/home/ana/src/shop-site", "hook_event_name": event, "model": "gpt-5.5-codex",
               "permission_mode": "default"}
    if event == "SessionStart":
        payload["source"] = "startup"
    else:
        payload["turn_id"] = "019e9626-0000-7000-8000-%012d" % turn
    if event == "Stop":
        payload.update(stop_hook_active=False, last_assistant_message="Done.")
    return {**payload, **extra}


def codex_context(stdout, event):
    """The answer as Codex's output parser takes it (only the keys its schema allows)."""
    answer = json.loads(stdout)
    assert list(answer) == ["hookSpecificOutput"]
    assert sorted(answer["hookSpecificOutput"]) == ["additionalContext", "hookEventName"]
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    return answer["hookSpecificOutput"]["additionalContext"]


def test_a_codex_session_starts_with_the_projects_newest_items(library, device):
    """Codex's SessionStart hook in ~/src/shop-site: the project's items and the protocol, as Codex reads them."""
    out, took = codex_hook("SessionStart", codex_payload("SessionStart"), device)
    context = codex_context(out, "SessionStart")
    assert f"[{library.ids['Remove the analytics script from the shop']}] 2026-08-01 Remove the analytics script" in context
    assert "Café menu" not in context and "later" in context
    assert took < 2.5


def test_a_codex_first_prompt_brings_related_items_once(library, device):
    """UserPromptSubmit: the thread's first prompt gets the related item; the next one nothing."""
    first = codex_payload("UserPromptSubmit", prompt="Why did we remove the analytics script?")
    context = codex_context(codex_hook("UserPromptSubmit", first, device)[0], "UserPromptSubmit")
    assert f"[{library.ids['Remove the analytics script from the shop']}] 2026-08-01" in context
    assert "get_item" in context
    again = codex_payload("UserPromptSubmit", prompt="And remove the analytics script from the menu?", turn=2)
    assert codex_hook("UserPromptSubmit", again, device)[0] == ""


def test_a_codex_stop_hook_uploads_the_rollout_into_the_library(library, device, tmp_path):
    """Stop with the rollout as transcript_path: uploaded as agent=codex, and the connector stores it."""
    rollout = tmp_path / f"rollout-2026-01-02T10-00-00-{CODEX_HOOK_THREAD}.jsonl"
    shutil.copyfile(FIXTURES / "codex_2.jsonl", rollout)
    out, took = codex_hook("Stop", codex_payload("Stop", rollout=rollout), device)
    assert out == "" and took < 2.0
    upload = wait_for_upload(device, CODEX_HOOK_THREAD)
    assert upload["status"] == 201, upload
    assert upload["receipt"]["agent"] == "codex" and upload["receipt"]["stored"] is True
    library.run_json("run", "--connector", "uploads-laptop")
    keys = [hit["key"] for hit in library.run_json("timeline", "--source", "uploads-laptop", "--limit", "50")["results"]]
    assert any(key.startswith(f"uploads-laptop:{CODEX_HOOK_THREAD}") for key in keys), keys


@pytest.fixture
def black_hole():
    """A server that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield "http://127.0.0.1:%d" % sock.getsockname()[1]


@pytest.mark.parametrize("where", ["closed port", "black hole", "wrong token"])
def test_codex_hooks_never_disturb_codex(library, device, tmp_path, black_hole, where):
    """Server down, hanging or refusing: every Codex hook exits 0 with no output, within 2.5 s."""
    if where == "closed port":
        device["JEZERO_URL"] = "http://127.0.0.1:%d" % free_port()
    elif where == "black hole":
        device["JEZERO_URL"] = black_hole
    else:
        device["JEZERO_TOKEN"] = "not-a-real-token"
    thread = "019e9625-802f-7e91-840a-cfe88d1411%02d" % ["closed port", "black hole", "wrong token"].index(where)
    rollout = tmp_path / "rollout.jsonl"
    shutil.copyfile(FIXTURES / "codex_2.jsonl", rollout)
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        out, took = codex_hook(event, codex_payload(event, thread, rollout, prompt="remove analytics script"), device)
        assert out == "" and took < 2.5
    if where == "wrong token":
        assert wait_for_upload(device, thread)["error"] == "http 401"
    elif where == "closed port":
        assert wait_for_upload(device, thread)["error"].startswith("unreachable")


# --- uploads never go backwards ------------------------------------------------------------------------

TRANSCRIPT_LINES = (FIXTURES / "claude_7.jsonl").read_bytes().splitlines(keepends=True)


def transcript_of(lines):
    """The first `lines` lines of a real Claude Code transcript (from 4 on, each a valid transcript)."""
    return b"".join(TRANSCRIPT_LINES[:lines])


def grown(body, words="and one more thing"):
    line = {"type": "user", "uuid": "late-1", "parentUuid": None, "sessionId": "s", "timestamp": "2026-01-23T18:00:00Z",
            "message": {"role": "user", "content": words}}
    return body + json.dumps(line).encode() + b"\n"


def post_upload(library, session_id, body, ended):
    """POST /api/v1/sessions as the plugins do (gzip, the device's token); returns (status, answer)."""
    query = urllib.parse.urlencode({"agent": "claude_code", "session_id": session_id,
                                    "ended": "true" if ended else "false"})
    request = urllib.request.Request(f"{library.url}/api/v1/sessions?{query}", data=gzip.compress(body), method="POST",
                                     headers={"Authorization": "Bearer " + library.token,
                                              "Content-Type": "application/x-ndjson", "Content-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, json.loads(response.read())


def inbox_row(library, session_id):
    """(version, ended, size) of the session's inbox row, read from the server's database."""
    database = library.root / "data" / "jezero.sqlite3"
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=10) as db:
        row = db.execute("SELECT version, ended, size FROM inbox_sessions WHERE source = 'uploads-laptop' "
                         "AND session_id = ?", (session_id,)).fetchone()
    return row and (row[0], bool(row[1]), row[2])


def test_a_late_stop_upload_cannot_replace_the_final_one(library):
    """SessionEnd's upload (the whole transcript, ended) arrives first; the Stop upload started
    earlier (a shorter copy, not ended) arrives after it: 200, `stored: false`, nothing changes."""
    final, late = transcript_of(24), transcript_of(16)
    assert post_upload(library, "race-1", final, ended=True)[0] == 201
    status, answer = post_upload(library, "race-1", late, ended=False)
    assert status == 200
    assert (answer["stored"], answer["replaced"], answer["version"], answer["ended"]) == (False, False, 1, True)
    assert answer["size"] == len(final) and "newer" in answer["detail"]
    assert inbox_row(library, "race-1") == (1, True, len(final))


def test_a_copy_no_newer_than_the_one_held_changes_nothing_but_ended(library):
    """The same transcript again: not stored. The same transcript, ended: marks the session ended
    (no new version). A longer one (the session resumed): stored — and the session stays ended."""
    body = transcript_of(20)
    assert post_upload(library, "race-2", body, ended=False)[0] == 201
    status, answer = post_upload(library, "race-2", body, ended=False)
    assert (status, answer["stored"], answer["version"]) == (200, False, 1)
    assert "already holds" in answer["detail"]
    status, answer = post_upload(library, "race-2", body, ended=True)
    assert (status, answer["stored"], answer["version"], answer["ended"]) == (200, True, 1, True)
    assert inbox_row(library, "race-2") == (1, True, len(body))
    status, answer = post_upload(library, "race-2", grown(body), ended=False)
    assert (status, answer["stored"], answer["replaced"], answer["version"], answer["ended"]) == (200, True, True, 2, True)
    assert inbox_row(library, "race-2") == (2, True, len(grown(body)))


def test_racing_uploads_of_one_session_end_with_the_newest(library):
    """Eight copies of a growing transcript sent at once in a random order (the last one ended):
    whatever order the server takes them in, each version it writes is longer than the one
    before, and the inbox ends with the whole transcript, ended."""
    copies = [(transcript_of(lines), lines == 24) for lines in (4, 8, 12, 14, 16, 18, 20, 24)]
    random.Random(13).shuffle(copies)
    start = threading.Barrier(len(copies))
    answers = []

    def send(body, ended):
        start.wait()
        answers.append(post_upload(library, "race-3", body, ended))

    threads = [threading.Thread(target=send, args=copy) for copy in copies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(answers) == len(copies) and {status for status, _ in answers} <= {200, 201}
    written = sorted((answer["version"], answer["size"]) for status, answer in answers
                     if status == 201 or answer["replaced"])
    sizes = [size for _, size in written]
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)  # never backwards
    assert [version for version, _ in written] == list(range(1, len(written) + 1))
    assert inbox_row(library, "race-3") == (len(written), True, len(transcript_of(24)))


def test_a_stop_right_before_session_end_leaves_the_final_transcript(library, device, tmp_path):
    """The hooks as Claude Code runs them: Stop, then SessionEnd before Stop's upload went out. The
    library holds the whole transcript, marked ended, in one version."""
    transcript = tmp_path / "s6.jsonl"
    transcript.write_bytes(transcript_of(16))
    hook("Stop", payload("Stop", "s6", tmp_path, stop_hook_active=False), device)
    transcript.write_bytes(transcript_of(24))  # the last turn lands before the session ends
    hook("SessionEnd", payload("SessionEnd", "s6", tmp_path, reason="exit"), device)
    log = Path(device["JEZERO_PLUGIN_STATE"]) / "plugin.log"
    wait_until(lambda: log.exists() and "session=s6 superseded" in log.read_text(), timeout=10,
               what="the Stop upload to give way")
    assert wait_for_upload(device, "s6")["ended"] is True
    assert inbox_row(library, "s6") == (1, True, len(transcript_of(24)))
