"""The Claude Code hook script, the Codex hook script and the Codex notify program as the
agents run them: real processes, JSON in, against a small fake Jezero on 127.0.0.1 that
records every request. Checks the exact requests they send, the exact answer each agent
reads, and that no failure ever reaches the agent."""

import contextlib
import gzip
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import wait_until

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
HOOK = PLUGINS / "claude-code" / "hooks" / "jezero_hook.py"
NOTIFY = PLUGINS / "codex" / "jezero_notify.py"
CODEX_HOOKS = PLUGINS / "codex" / "jezero_codex_hooks.py"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real"
TOKEN = "jz-test-token-0123456789"
THREAD = "019e9625-802f-7e91-840a-cfe88d14117a"


class FakeJezero:
    """Answers the plugin routes with canned JSON and records (method, path, query, headers, body)."""

    def __init__(self):
        self.requests = []
        self.answers = {
            "/api/v1/hooks/session-start": (200, {"project": "shop-site", "context": "[7] 2026-05-01 Keep GA"}),
            "/api/v1/hooks/first-prompt": (200, {"context": "[8] 2026-08-01 Remove the analytics script"}),
            "/api/v1/sessions": (201, {"source": "uploads-laptop", "session_id": "s1", "version": 1}),
        }
        self.delay = 0.0
        self.closing = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                url = urllib.parse.urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fake.requests.append({"path": url.path, "query": dict(urllib.parse.parse_qsl(url.query)),
                                      "headers": dict(self.headers), "body": body})
                # A slow or hanging server is what some tests are about: the answer waits `delay`
                # seconds, or until the test ends, so no handler outlives its test.
                fake.closing.wait(fake.delay)
                status, answer = fake.answers.get(url.path, (404, {"detail": "not found"}))
                raw = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self):
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def wait_for(self, path, count=1, timeout=10.0):
        """The requests to `path`, once there are `count` of them."""

        def arrived():
            found = [r for r in self.requests if r["path"] == path]
            return found if len(found) >= count else None

        return wait_until(arrived, timeout=timeout, what="%d request(s) to %s" % (count, path))


@pytest.fixture
def fake():
    server = FakeJezero()
    yield server
    server.close()


@pytest.fixture
def env(tmp_path, fake):
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith(("JEZERO_", "XDG_", "CODEX_")) and "proxy" not in k.lower()}
    environment.update(HOME=str(tmp_path / "home"), JEZERO_URL=fake.url, JEZERO_TOKEN=TOKEN,
                       JEZERO_PLUGIN_STATE=str(tmp_path / "state"), CODEX_HOME=str(tmp_path / "codex"))
    yield environment
    leftover = scheduled_uploaders(str(tmp_path))
    for pid in leftover:
        os.kill(pid, signal.SIGTERM)
    assert leftover == [], "a test left an uploader sleeping until the end of its 15-minute window"


def uploaders(marker, scheduled_only=False):
    """Pids of the detached uploaders alive whose job mentions `marker`, or only those waiting
    for a scheduled time (Linux /proc; a zombie has no command line and does not count)."""
    pids = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        try:
            command = Path("/proc", name, "cmdline").read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        if name.isdigit() and "jezero_client.py" in command and marker in command and (
                '"at": ' in command or not scheduled_only):
            pids.append(int(name))
    return pids


def scheduled_uploaders(marker):
    return uploaders(marker, scheduled_only=True)


def uploads_done(marker, timeout=10.0):
    """Wait until no uploader whose job mentions `marker` is running. The hook starts its
    uploader before it exits, so once the hook has returned and this has, every upload it
    started has reached the server (or given up): what has not arrived never will."""
    wait_until(lambda: not uploaders(marker), timeout=timeout, what="the uploaders of %s to finish" % marker)


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def hook(event, payload, env, stdin=None):
    """Run the hook as Claude Code does; returns (stdout, seconds taken)."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(HOOK), event], input=stdin if stdin is not None else json.dumps(payload),
                          capture_output=True, text=True, env=env, timeout=10)
    took = time.monotonic() - started
    assert proc.returncode == 0
    assert proc.stderr == ""
    assert TOKEN not in proc.stdout
    return proc.stdout, took


def state(env, session_id):
    path = Path(env["JEZERO_PLUGIN_STATE"]) / (session_id + ".json")
    return json.loads(path.read_text()) if path.exists() else {}


def wait_for_state(env, session_id, key, timeout=10.0):
    """The session's state once it holds `key` (the detached uploader writes it when done)."""
    return wait_until(lambda: key in state(env, session_id) and state(env, session_id), timeout=timeout,
                      what="%s in the state of %s" % (key, session_id))


def start_payload(tmp_path, **extra):
    return {"session_id": "s1", "transcript_path": str(tmp_path / "s1.jsonl"), "cwd": str(tmp_path / "shop-site"),
            "hook_event_name": "SessionStart", "source": "startup", **extra}


@pytest.fixture
def transcript(tmp_path):
    path = tmp_path / "s1.jsonl"
    shutil.copyfile(FIXTURES / "claude_7.jsonl", path)
    return path


# --- context hooks ----------------------------------------------------------------------------

def test_session_start_posts_cwd_and_session_and_prints_the_context(fake, env, tmp_path):
    """The exact request (path, JSON body, bearer header) and the hookSpecificOutput Claude Code reads."""
    (tmp_path / "shop-site").mkdir()
    out, _ = hook("SessionStart", start_payload(tmp_path), env)
    assert json.loads(out) == {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                      "additionalContext": "[7] 2026-05-01 Keep GA"}}
    (request,) = fake.requests
    assert request["path"] == "/api/v1/hooks/session-start"
    assert json.loads(request["body"]) == {"cwd": str(tmp_path / "shop-site"), "session_id": "s1"}
    assert request["headers"]["Authorization"] == "Bearer " + TOKEN
    assert request["headers"]["Content-Type"] == "application/json"


def test_session_start_sends_the_git_remote_of_the_working_folder(fake, env, tmp_path):
    """Inside a repository the origin URL goes along, stripped of credentials."""
    git = tmp_path / "shop-site" / ".git"
    git.mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "config").write_text('[remote "origin"]\n\turl = https://ana:pw@github.com/ana/shop-site.git\n')
    hook("SessionStart", start_payload(tmp_path), env)
    assert json.loads(fake.requests[0]["body"])["git_remote"] == "https://github.com/ana/shop-site.git"


def test_an_empty_context_prints_nothing(fake, env, tmp_path):
    """No project and no protocol text → no output at all (not an empty additionalContext)."""
    fake.answers["/api/v1/hooks/session-start"] = (200, {"project": None, "context": ""})
    assert hook("SessionStart", start_payload(tmp_path), env)[0] == ""


def test_only_the_first_prompt_of_a_session_asks_the_library(fake, env, tmp_path):
    """First prompt → context; second prompt → no request, no output."""
    payload = {"session_id": "s1", "cwd": "/home/ana/src/shop-site", "hook_event_name": "UserPromptSubmit",
               "transcript_path": str(tmp_path / "s1.jsonl"), "prompt": "remove the analytics script"}
    out, _ = hook("UserPromptSubmit", payload, env)
    assert json.loads(out)["hookSpecificOutput"] == {"hookEventName": "UserPromptSubmit",
                                                     "additionalContext": "[8] 2026-08-01 Remove the analytics script"}
    (request,) = fake.requests
    assert request["path"] == "/api/v1/hooks/first-prompt"
    assert json.loads(request["body"]) == {"prompt": "remove the analytics script", "session_id": "s1",
                                           "cwd": "/home/ana/src/shop-site"}
    assert hook("UserPromptSubmit", {**payload, "prompt": "and the consent banner too"}, env)[0] == ""
    assert len(fake.requests) == 1


def test_a_bare_slash_command_is_not_the_first_prompt(fake, env):
    """`/model` asks nothing and leaves the first-prompt turn to the real question."""
    payload = {"session_id": "s1", "cwd": "/w", "prompt": "/model"}
    assert hook("UserPromptSubmit", payload, env)[0] == ""
    assert fake.requests == []
    hook("UserPromptSubmit", {**payload, "prompt": "why did we remove analytics"}, env)
    assert [r["path"] for r in fake.requests] == ["/api/v1/hooks/first-prompt"]


def test_prompts_of_other_sessions_are_first_prompts_again(fake, env):
    """The once-per-session mark is per session id."""
    hook("UserPromptSubmit", {"session_id": "s1", "cwd": "/w", "prompt": "remove analytics script"}, env)
    hook("UserPromptSubmit", {"session_id": "s2", "cwd": "/w", "prompt": "remove analytics script"}, env)
    assert [json.loads(r["body"])["session_id"] for r in fake.requests] == ["s1", "s2"]


# --- failures never reach the agent -------------------------------------------------------------

EVENTS = ["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"]


def every_event(tmp_path, env, stdin=None):
    """Run the four hooks at once (as separate processes), each in its own session so that no
    upload is throttled into a scheduled one; returns [(stdout, seconds)]."""
    return at_once(HOOK, [(event, start_payload(tmp_path, session_id="s-" + event, hook_event_name=event,
                                                prompt="remove the analytics script")) for event in EVENTS], env, stdin)


def at_once(script, calls, env, stdin=None):
    """Start `script EVENT` for every (event, payload) of `calls` at once, each with its payload
    (or `stdin`) on its standard input; each must exit 0 with nothing on stderr. Returns
    [(stdout, seconds since the start)]."""
    started = time.monotonic()
    procs = []
    for event, payload in calls:
        procs.append(subprocess.Popen([sys.executable, str(script), event], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
        # A hook with nothing to do may exit before it reads its input: that is not a failure.
        with contextlib.suppress(BrokenPipeError):
            procs[-1].stdin.write(stdin if stdin is not None else json.dumps(payload))
        with contextlib.suppress(BrokenPipeError):
            procs[-1].stdin.close()
    outputs = []
    for proc in procs:
        with proc:
            out, err = proc.stdout.read(), proc.stderr.read()
            proc.wait(timeout=10)
        assert (proc.returncode, err) == (0, "")
        outputs.append((out, time.monotonic() - started))
    return outputs


def test_without_configuration_every_hook_is_silent(fake, env, tmp_path, transcript):
    """No URL/token anywhere → exit 0, no output, no request, nothing written."""
    del env["JEZERO_URL"], env["JEZERO_TOKEN"]
    for out, took in every_event(tmp_path, env):
        assert out == "" and took < 2.5
    uploads_done(str(tmp_path))
    assert fake.requests == []
    assert not Path(env["JEZERO_PLUGIN_STATE"]).exists()


def test_a_closed_port_makes_every_hook_silent(env, tmp_path, transcript):
    """Server down → exit 0, no output, well within 2.5 s."""
    env["JEZERO_URL"] = "http://127.0.0.1:%d" % closed_port()
    for out, took in every_event(tmp_path, env):
        assert out == "" and took < 2.5
    # Both uploads (Stop, SessionEnd) were tried in the background and failed quietly.
    wait_for_state(env, "s-Stop", "last_upload")
    assert wait_for_state(env, "s-SessionEnd", "last_upload")["last_upload"]["error"].startswith("unreachable")


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"session_id": 5}', '{"cwd": "/w"}'])
def test_bad_stdin_makes_every_hook_silent(fake, env, tmp_path, stdin):
    """Whatever arrives on stdin, the agent sees exit 0 and no output."""
    for out, took in every_event(tmp_path, env, stdin=stdin):
        assert out == "" and took < 2.5
    assert fake.requests == []


def test_a_server_that_hangs_is_abandoned_after_two_seconds(fake, env, tmp_path):
    """Context hooks give up on a slow server: nothing printed, done in under 2.5 s."""
    fake.delay = 5.0
    for event in ("SessionStart", "UserPromptSubmit"):
        out, took = hook(event, start_payload(tmp_path, prompt="remove the analytics script"), env)
        assert out == ""
        assert 1.5 < took < 2.5


@pytest.mark.parametrize("answer", [(401, {"detail": "invalid token"}), (500, b"<h1>Server Error</h1>"),
                                    (200, b"<html>a login page</html>"), (200, {"context": ["not", "text"]})])
def test_errors_and_odd_answers_print_nothing(fake, env, tmp_path, answer):
    """4xx/5xx or a 200 that is not the expected JSON → no output."""
    fake.answers["/api/v1/hooks/session-start"] = answer
    assert hook("SessionStart", start_payload(tmp_path), env)[0] == ""


# --- uploads -------------------------------------------------------------------------------------

def test_session_end_uploads_the_gzipped_transcript_with_its_facts(fake, env, tmp_path, transcript):
    """POST /api/v1/sessions with agent, session, cwd, branch, ended=true; the body gunzips to the file."""
    git = tmp_path / "shop-site" / ".git"
    git.mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/cart\n")
    (git / "config").write_text('[remote "origin"]\n\turl = git@github.com:ana/shop-site.git\n')
    out, took = hook("SessionEnd", start_payload(tmp_path, hook_event_name="SessionEnd", reason="exit"), env)
    assert out == "" and took < 2.0
    (request,) = fake.wait_for("/api/v1/sessions")
    assert request["query"] == {"agent": "claude_code", "session_id": "s1", "cwd": str(tmp_path / "shop-site"),
                                "git_branch": "cart", "git_remote": "git@github.com:ana/shop-site.git",
                                "ended": "true"}
    assert request["headers"]["Authorization"] == "Bearer " + TOKEN
    assert request["headers"]["Content-Encoding"] == "gzip"
    assert request["headers"]["Content-Type"] == "application/x-ndjson"
    assert gzip.decompress(request["body"]) == transcript.read_bytes()
    recorded = wait_for_state(env, "s1", "last_upload")["last_upload"]
    assert (recorded["status"], recorded["version"], recorded["ended"]) == (201, 1, True)


def test_a_slow_upload_does_not_hold_up_the_agent(fake, env, tmp_path, transcript):
    """The upload runs in a detached child: the hook returns at once and the upload still lands."""
    fake.delay = 3.0
    out, took = hook("SessionEnd", start_payload(tmp_path, hook_event_name="SessionEnd"), env)
    assert out == "" and took < 2.0
    fake.wait_for("/api/v1/sessions")


def test_a_line_still_being_written_is_left_for_the_next_upload(fake, env, tmp_path, transcript):
    """Only whole lines are sent: a half-written last line would make the upload invalid."""
    whole = transcript.read_bytes()
    transcript.write_bytes(whole + b'{"type": "user", "mess')
    hook("SessionEnd", start_payload(tmp_path, hook_event_name="SessionEnd"), env)
    (request,) = fake.wait_for("/api/v1/sessions")
    assert gzip.decompress(request["body"]) == whole


def test_stop_uploads_once_and_then_waits_for_the_window(fake, env, tmp_path, transcript):
    """First Stop uploads (ended=false); a Stop while an upload is pending sends nothing more."""
    payload = start_payload(tmp_path, hook_event_name="Stop", stop_hook_active=False)
    assert hook("Stop", payload, env)[0] == ""
    (request,) = fake.wait_for("/api/v1/sessions")
    assert request["query"]["ended"] == "false"
    # The uploader records its outcome after the server answered: wait for it, so that the
    # state edited below is not overwritten by the uploader's own last write.
    started = wait_for_state(env, "s1", "last_upload")["upload_started_at"]
    # A Stop within 15 minutes would schedule one upload for the end of the window; with one
    # already scheduled it adds nothing.
    pending = started + 900
    path = Path(env["JEZERO_PLUGIN_STATE"]) / "s1.json"
    path.write_text(json.dumps({**state(env, "s1"), "upload_pending_at": pending}))
    hook("Stop", payload, env)
    assert state(env, "s1")["upload_started_at"] == started
    assert state(env, "s1")["upload_pending_at"] == pending
    uploads_done(str(tmp_path))
    assert len(fake.requests) == 1


def test_a_scheduled_upload_sends_the_grown_transcript_when_its_time_comes(fake, env, tmp_path, transcript):
    """The end-of-window upload (run here in-process, its time already come) sends the file and clears the mark."""
    client = _client()
    client.update_state("s1", env, upload_started_at=1.0, upload_pending_at=901.0, uploaded_fingerprint=[1, 2])
    job = {"agent": "claude_code", "session_id": "s1", "path": str(transcript), "cwd": None, "ended": False,
           "at": 901.0}
    assert client.run_upload_job(job, env=env) == "uploaded"
    (request,) = fake.requests
    assert request["query"] == {"agent": "claude_code", "session_id": "s1", "ended": "false"}
    assert state(env, "s1")["upload_pending_at"] is None
    assert state(env, "s1")["upload_started_at"] > 901.0


def _client():
    spec = importlib.util.spec_from_file_location("jezero_client", HOOK.with_name("jezero_client.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_session_end_right_after_a_stop_sends_the_only_upload(fake, env, tmp_path, transcript):
    """Stop waits two seconds for the transcript to settle; a SessionEnd meanwhile uploads at
    once, and the Stop upload, superseded, sends nothing (it would carry an older copy)."""
    hook("Stop", start_payload(tmp_path, hook_event_name="Stop", stop_hook_active=False), env)
    hook("SessionEnd", start_payload(tmp_path, hook_event_name="SessionEnd", reason="exit"), env)
    uploads_done(str(tmp_path))
    (request,) = fake.requests
    assert request["query"]["ended"] == "true"
    log = (Path(env["JEZERO_PLUGIN_STATE"]) / "plugin.log").read_text()
    assert "session=s1 superseded by a newer upload" in log


def test_an_upload_the_server_kept_no_copy_of_is_recorded_as_such(fake, env, tmp_path, transcript):
    """The server answers `stored: false` (it holds a newer copy): recorded, logged, nothing retried."""
    fake.answers["/api/v1/sessions"] = (200, {"source": "uploads-laptop", "session_id": "s1", "version": 3,
                                              "stored": False, "ended": True,
                                              "detail": "not stored: the inbox holds a newer copy"})
    hook("SessionEnd", start_payload(tmp_path, hook_event_name="SessionEnd"), env)
    recorded = wait_for_state(env, "s1", "last_upload")["last_upload"]
    assert (recorded["status"], recorded["stored"], recorded["receipt"]["version"]) == (200, False, 3)
    assert "stored=false" in (Path(env["JEZERO_PLUGIN_STATE"]) / "plugin.log").read_text()
    assert len(fake.requests) == 1


def test_a_refused_upload_is_recorded_and_the_agent_never_knows(fake, env, tmp_path, transcript):
    """413/422/403 from the server: hook output stays empty; the state and log keep the status."""
    fake.answers["/api/v1/sessions"] = (413, {"detail": "too large"})
    assert hook("SessionEnd", start_payload(tmp_path, hook_event_name="SessionEnd"), env)[0] == ""
    assert wait_for_state(env, "s1", "last_upload")["last_upload"]["error"] == "http 413"
    log = (Path(env["JEZERO_PLUGIN_STATE"]) / "plugin.log").read_text()
    assert "session=s1 failed: http 413" in log
    assert TOKEN not in log and "WebSearch" not in log


def test_a_missing_transcript_uploads_nothing(fake, env, tmp_path):
    """transcript_path that does not exist (yet) → no upload, no output."""
    assert hook("SessionEnd", start_payload(tmp_path, hook_event_name="SessionEnd"), env)[0] == ""
    uploads_done(str(tmp_path))
    assert fake.requests == []
    assert state(env, "s1") == {}  # no upload was even planned


# --- Codex notify -----------------------------------------------------------------------------------

def notify(argument, env, *extra):
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(NOTIFY), *extra, argument], capture_output=True, text=True,
                          env=env, timeout=10)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    return time.monotonic() - started


def turn(cwd="/home/ana/src/shop-site", thread=THREAD):
    return json.dumps({"type": "agent-turn-complete", "thread-id": thread, "turn-id": "t1", "cwd": cwd,
                       "input-messages": ["remove the analytics script"], "last-assistant-message": "Done."})


@pytest.fixture
def rollout(env):
    day = Path(env["CODEX_HOME"]) / "sessions" / "2026" / "01" / "02"
    day.mkdir(parents=True)
    path = day / f"rollout-2026-01-02T10-00-00-{THREAD}.jsonl"
    shutil.copyfile(FIXTURES / "codex_2.jsonl", path)
    return path


def test_codex_notify_uploads_the_threads_rollout_once_per_window(fake, env, rollout):
    """The rollout named by thread-id goes up as agent=codex, ended=false, gzipped, and notify
    returns at once; a second turn right after does not upload again."""
    assert notify(turn(), env) < 2.0
    (request,) = fake.wait_for("/api/v1/sessions")
    assert request["query"] == {"agent": "codex", "session_id": THREAD, "cwd": "/home/ana/src/shop-site",
                                "ended": "false"}
    assert request["headers"]["Authorization"] == "Bearer " + TOKEN
    assert gzip.decompress(request["body"]) == rollout.read_bytes()
    recorded = wait_for_state(env, THREAD, "last_upload")
    assert recorded["rollout_path"] == str(rollout)
    # Pretend the end-of-window upload is already scheduled, so no sleeping child outlives the test.
    first = recorded["upload_started_at"]
    path = Path(env["JEZERO_PLUGIN_STATE"]) / f"{THREAD}.json"
    path.write_text(json.dumps({**recorded, "upload_pending_at": first + 900}))
    notify(turn(), env)
    assert state(env, THREAD)["upload_started_at"] == first
    uploads_done(env["CODEX_HOME"])
    assert len(fake.requests) == 1


@pytest.mark.parametrize("argument", ["not json", "[]", json.dumps({"type": "other"}),
                                      json.dumps({"type": "agent-turn-complete"})])
def test_codex_notify_ignores_what_it_cannot_use(fake, env, rollout, argument):
    """Bad JSON, other events, no thread id → exit 0, no output, no request."""
    notify(argument, env)
    uploads_done(env["CODEX_HOME"])
    assert fake.requests == []


def test_codex_notify_without_a_rollout_or_configuration_does_nothing(fake, env, rollout):
    """An unknown thread, or no configuration → no request."""
    notify(turn(thread="11111111-2222-3333-4444-555555555555"), env)
    del env["JEZERO_URL"], env["JEZERO_TOKEN"]
    notify(turn(), env)
    uploads_done(env["CODEX_HOME"])
    assert fake.requests == []
    assert state(env, THREAD) == {}  # no upload was even planned


def test_codex_notify_passes_the_turn_to_a_chained_notify_program(fake, env, rollout, tmp_path):
    """Arguments before the JSON are another notify program, run with the same JSON."""
    seen = tmp_path / "seen.json"
    program = "import sys; open(sys.argv[1], 'w').write(sys.argv[2])"
    notify(turn(), env, sys.executable, "-c", program, str(seen))
    fake.wait_for("/api/v1/sessions")
    wait_until(seen.exists, timeout=5, what="the chained program to write its file")
    assert json.loads(seen.read_text())["thread-id"] == THREAD


# --- Codex hooks ------------------------------------------------------------------------------------
# The JSON Codex writes to a command hook's stdin (codex-rs/hooks/schema/generated/*.input.schema.json):
# every event has session_id (the thread id), transcript_path (the rollout, or null), cwd,
# hook_event_name, model and permission_mode; SessionStart adds source; UserPromptSubmit and Stop
# add turn_id; UserPromptSubmit adds prompt; Stop adds stop_hook_active and last_assistant_message.

def codex_payload(event, rollout=None, **extra):
    payload = {"session_id": THREAD, "transcript_path": str(rollout) if rollout else None,
               "cwd": "/home/ana/src/shop-site", "hook_event_name": event, "model": "gpt-5.5-codex",
               "permission_mode": "default"}
    if event == "SessionStart":
        payload["source"] = "startup"
    else:
        payload["turn_id"] = "019e9626-0000-7000-8000-000000000001"
    if event == "UserPromptSubmit":
        payload["prompt"] = "remove the analytics script"
    if event == "Stop":
        payload.update(stop_hook_active=False, last_assistant_message="Done.")
    payload.update(extra)
    return payload


def codex_hook(event, payload, env, stdin=None):
    """Run the Codex hook with its JSON on stdin (Codex writes it without a trailing newline);
    returns (stdout, seconds taken)."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(CODEX_HOOKS), event],
                          input=stdin if stdin is not None else json.dumps(payload), capture_output=True, text=True,
                          env=env, timeout=10)
    took = time.monotonic() - started
    assert (proc.returncode, proc.stderr) == (0, "")
    assert TOKEN not in proc.stdout
    return proc.stdout, took


def codex_output(stdout, event):
    """The answer as Codex parses it: one JSON object with only the keys its output schema
    allows (additionalProperties: false at both levels), the event's own name, and text."""
    answer = json.loads(stdout)
    assert set(answer) == {"hookSpecificOutput"}
    assert set(answer["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    return answer["hookSpecificOutput"]["additionalContext"]


def test_codex_session_start_asks_the_library_and_prints_what_codex_reads(fake, env):
    """SessionStart → POST hooks/session-start with the thread's cwd and id → hookSpecificOutput."""
    out, took = codex_hook("SessionStart", codex_payload("SessionStart"), env)
    assert codex_output(out, "SessionStart") == "[7] 2026-05-01 Keep GA"
    (request,) = fake.requests
    assert request["path"] == "/api/v1/hooks/session-start"
    assert json.loads(request["body"]) == {"cwd": "/home/ana/src/shop-site", "session_id": THREAD}
    assert request["headers"]["Authorization"] == "Bearer " + TOKEN
    assert took < 2.0


def test_codex_first_prompt_asks_once_per_thread(fake, env):
    """The first prompt of a thread gets related items; the next prompt sends nothing."""
    out, _ = codex_hook("UserPromptSubmit", codex_payload("UserPromptSubmit"), env)
    assert codex_output(out, "UserPromptSubmit") == "[8] 2026-08-01 Remove the analytics script"
    (request,) = fake.requests
    assert request["path"] == "/api/v1/hooks/first-prompt"
    assert json.loads(request["body"]) == {"prompt": "remove the analytics script", "session_id": THREAD,
                                           "cwd": "/home/ana/src/shop-site"}
    again = codex_payload("UserPromptSubmit", prompt="and the consent banner", turn_id="t2")
    assert codex_hook("UserPromptSubmit", again, env)[0] == ""
    assert len(fake.requests) == 1


def test_codex_stop_uploads_the_rollout_it_is_given(fake, env, rollout):
    """Stop with transcript_path → the rollout goes up as agent=codex, ended=false; nothing printed."""
    out, took = codex_hook("Stop", codex_payload("Stop", rollout), env)
    assert out == "" and took < 2.0
    (request,) = fake.wait_for("/api/v1/sessions")
    assert request["query"] == {"agent": "codex", "session_id": THREAD, "cwd": "/home/ana/src/shop-site",
                                "ended": "false"}
    assert gzip.decompress(request["body"]) == rollout.read_bytes()
    # The next turn within 15 minutes is throttled like notify's: pretend its upload is already
    # scheduled, so no sleeping child outlives the test.
    recorded = wait_for_state(env, THREAD, "last_upload")
    path = Path(env["JEZERO_PLUGIN_STATE"]) / f"{THREAD}.json"
    path.write_text(json.dumps({**recorded, "upload_pending_at": recorded["upload_started_at"] + 900}))
    codex_hook("Stop", codex_payload("Stop", rollout, turn_id="t2"), env)
    uploads_done(env["CODEX_HOME"])
    assert len(fake.requests) == 1


def test_codex_stop_without_a_transcript_path_finds_the_rollout(fake, env, rollout):
    """transcript_path null → the thread's rollout under $CODEX_HOME/sessions."""
    codex_hook("Stop", codex_payload("Stop"), env)
    (request,) = fake.wait_for("/api/v1/sessions")
    assert gzip.decompress(request["body"]) == rollout.read_bytes()


def test_codex_stop_of_a_thread_without_a_rollout_uploads_nothing(fake, env):
    """An ephemeral thread (no rollout anywhere) → no upload planned, nothing printed."""
    assert codex_hook("Stop", codex_payload("Stop"), env)[0] == ""
    uploads_done(env["CODEX_HOME"])
    assert fake.requests == []


CODEX_EVENTS = ["SessionStart", "UserPromptSubmit", "Stop"]


def codex_every_event(env, stdin=None, rollout=None):
    """The three Codex hooks at once, each for its own thread; returns [(stdout, seconds)]."""
    return at_once(CODEX_HOOKS, [(event, codex_payload(event, rollout, session_id=THREAD[:-1] + str(n)))
                                 for n, event in enumerate(CODEX_EVENTS)], env, stdin)


def test_codex_hooks_without_configuration_are_silent(fake, env, rollout):
    """No URL/token → exit 0, no output, no request, nothing written."""
    del env["JEZERO_URL"], env["JEZERO_TOKEN"]
    for out, took in codex_every_event(env, rollout=rollout):
        assert out == "" and took < 2.5
    uploads_done(env["CODEX_HOME"])
    assert fake.requests == []
    assert not Path(env["JEZERO_PLUGIN_STATE"]).exists()


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"session_id": 5}', '{"cwd": "/w"}'])
def test_codex_hooks_with_bad_stdin_are_silent(fake, env, stdin):
    for out, took in codex_every_event(env, stdin=stdin):
        assert out == "" and took < 2.5
    assert fake.requests == []


def test_codex_hooks_with_the_server_down_are_silent(env, rollout):
    """A closed port: exit 0, nothing printed, quickly; the Stop upload fails in the background."""
    env["JEZERO_URL"] = "http://127.0.0.1:%d" % closed_port()
    for out, took in codex_every_event(env, rollout=rollout):
        assert out == "" and took < 2.5
    assert wait_for_state(env, THREAD[:-1] + "2", "last_upload")["last_upload"]["error"].startswith("unreachable")


def test_codex_context_hooks_give_up_on_a_hanging_server_after_two_seconds(fake, env):
    fake.delay = 5.0
    for event in ("SessionStart", "UserPromptSubmit"):
        out, took = codex_hook(event, codex_payload(event), env)
        assert out == ""
        assert 1.5 < took < 2.5


@pytest.mark.parametrize("answer", [(401, {"detail": "invalid token"}), (500, b"<h1>Server Error</h1>"),
                                    (200, b"<html>a login page</html>"), (200, {"context": ""})])
def test_codex_hooks_print_nothing_for_errors_and_empty_answers(fake, env, answer):
    """Codex fails a hook whose stdout looks like JSON but is not its schema: print nothing rather."""
    fake.answers["/api/v1/hooks/session-start"] = answer
    assert codex_hook("SessionStart", codex_payload("SessionStart"), env)[0] == ""
