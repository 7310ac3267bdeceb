"""The one client for Jezero's device API, shared by the Claude Code hooks, the Codex hooks
and the Codex `notify` program: configuration, per-session state, the two context hooks
(what both agents' SessionStart and UserPromptSubmit hooks do, and how a hook process runs),
and transcript uploads (planned in the agent's process, performed by a detached child).

Standard library only, Python 3.9+. It lives inside the Claude Code plugin because Claude
Code copies the plugin folder on install; the Codex programs in `plugins/codex/` import it
from here by a path relative to themselves (or from their own folder, if the files were
copied together). There is one copy of it in the repository.

Rules (docs/design.md "Agent hooks"): nothing here may block or break an agent. Public functions either return
quietly (None, "") or raise `JezeroError`, which callers turn into "print nothing, exit 0".
The token is only ever put in the Authorization header; transcript and prompt text are never
logged. Run as `python3 jezero_client.py upload '<job json>'` it is the detached uploader.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

VERSION = "0.2.0"
CONTEXT_TIMEOUT = 2.0  # seconds for a whole context hook, start to finish
UPLOAD_TIMEOUT = 30.0  # seconds for one upload request, in the detached child
UPLOAD_INTERVAL = 15 * 60  # while a session runs, at most one upload per this many seconds
SETTLE_SECONDS = 2.0  # the agent may still be writing the last turn when Stop/notify fires
STATE_MAX_AGE = 30 * 24 * 3600  # state files of sessions idle this long are removed
LOG_MAX_BYTES = 256 * 1024

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class JezeroError(Exception):
    """Anything that went wrong talking to Jezero; the message never contains a secret."""


class Config:
    """Where the library is and the client token for it."""

    def __init__(self, url: str, token: str):
        self.url = url
        self.token = token

    def __repr__(self) -> str:  # never show the token, even in a traceback
        return "Config(url=%r, token=***)" % self.url


# --- configuration -------------------------------------------------------------------------

def _home_dir(env, xdg_name: str, fallback: str) -> str:
    base = env.get(xdg_name) or os.path.join(env.get("HOME") or os.path.expanduser("~"), fallback)
    return os.path.join(base, "jezero")


def config_path(env=None) -> str:
    """The JSON config file: `$JEZERO_PLUGIN_CONFIG`, else `~/.config/jezero/plugin.json`
    (`$XDG_CONFIG_HOME/jezero/plugin.json` when that is set)."""
    env = os.environ if env is None else env
    return env.get("JEZERO_PLUGIN_CONFIG") or os.path.join(_home_dir(env, "XDG_CONFIG_HOME", ".config"), "plugin.json")


def load_config(env=None) -> Config | None:
    """The URL and token: each from `JEZERO_URL` / `JEZERO_TOKEN` when set, else from the
    config file's `url` / `token`. Returns None when either is missing or unusable (the
    plugin is then switched off); never raises."""
    env = os.environ if env is None else env
    url = (env.get("JEZERO_URL") or "").strip()
    token = (env.get("JEZERO_TOKEN") or "").strip()
    if not (url and token):
        stored = _read_json(config_path(env))
        if isinstance(stored, dict):
            url = url or str(stored.get("url") or "").strip()
            token = token or str(stored.get("token") or "").strip()
    url = url.rstrip("/")
    if url.endswith("/mcp"):  # people paste the MCP address; the API lives beside it
        url = url[: -len("/mcp")]
    if not token or not re.match(r"https?://[^/\s]+", url) or any(c.isspace() for c in token):
        return None
    return Config(url, token)


# --- per-session state ---------------------------------------------------------------------

def state_dir(env=None) -> str:
    """`$JEZERO_PLUGIN_STATE`, else `~/.cache/jezero/plugin` (XDG_CACHE_HOME respected)."""
    env = os.environ if env is None else env
    return env.get("JEZERO_PLUGIN_STATE") or os.path.join(_home_dir(env, "XDG_CACHE_HOME", ".cache"), "plugin")


def state_file(session_id: str, env=None) -> str:
    """`<state dir>/<session id>.json`; an id that is not a plain file name is hashed."""
    name = session_id if _SAFE_ID.fullmatch(session_id) else hashlib.sha256(session_id.encode()).hexdigest()[:32]
    return os.path.join(state_dir(env), name + ".json")


def read_state(session_id: str, env=None) -> dict:
    """The session's state (`{}` when there is none or it is unreadable)."""
    state = _read_json(state_file(session_id, env))
    return state if isinstance(state, dict) else {}


def update_state(session_id: str, env=None, **changes) -> dict:
    """Merge `changes` into the session's state and write it atomically (a concurrent
    reader sees the old file or the new one, never half of one). Returns the new state.
    Raises OSError when the state folder cannot be written."""
    state = read_state(session_id, env)
    state.update(changes)
    path = state_file(session_id, env)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    temporary = "%s.%d.tmp" % (path, os.getpid())
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(state, handle)
    os.replace(temporary, path)
    return state


def prune_states(env=None, now: float | None = None) -> int:
    """Remove state files untouched for `STATE_MAX_AGE`; returns how many. Never raises."""
    now = time.time() if now is None else now
    removed = 0
    folder = state_dir(env)
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        if not name.endswith((".json", ".tmp")):
            continue
        path = os.path.join(folder, name)
        try:
            if now - os.path.getmtime(path) > STATE_MAX_AGE:
                os.remove(path)
                removed += 1
        except OSError:
            continue
    return removed


def log(message: str, env=None) -> None:
    """Append one line to `<state dir>/plugin.log` (kept under 256 KB). Callers pass only
    ids, sizes and statuses — never a token, a prompt or transcript text. Never raises."""
    path = os.path.join(state_dir(env), "plugin.log")
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        if os.path.exists(path) and os.path.getsize(path) > LOG_MAX_BYTES:
            os.replace(path, path + ".1")
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with open(path, "a", encoding="utf-8") as handle:
            handle.write("%s pid=%d %s\n" % (stamp, os.getpid(), message))
    except OSError:
        pass


# --- git, read cheaply from the files ---------------------------------------------------------

def git_info(cwd: str) -> tuple[str | None, str | None]:
    """`(branch, remote url)` of the repository containing `cwd`, read from `.git` without
    running git; either is None when unknown (detached HEAD, no remote). Credentials in the
    remote URL are removed. Never raises."""
    try:
        git_dir = _find_git_dir(cwd)
        if git_dir is None:
            return None, None
        branch = None
        head = _read_text(os.path.join(git_dir, "HEAD")).strip()
        if head.startswith("ref: refs/heads/"):
            branch = head[len("ref: refs/heads/"):] or None
        common = git_dir
        commondir = os.path.join(git_dir, "commondir")  # a worktree keeps its config in the main .git
        if os.path.isfile(commondir):
            common = os.path.normpath(os.path.join(git_dir, _read_text(commondir).strip()))
        remote = _remote_url(_read_text(os.path.join(common, "config")))
        return branch, remote
    except (OSError, ValueError):
        return None, None


def _find_git_dir(cwd: str) -> str | None:
    path = os.path.abspath(cwd)
    while True:
        dot_git = os.path.join(path, ".git")
        if os.path.isdir(dot_git):
            return dot_git
        if os.path.isfile(dot_git):  # a worktree or submodule: "gitdir: <path>"
            line = _read_text(dot_git).strip()
            if line.startswith("gitdir:"):
                return os.path.normpath(os.path.join(path, line[len("gitdir:"):].strip()))
            return None
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def _remote_url(config_text: str) -> str | None:
    remotes = {}
    section = None
    for raw in config_text.splitlines():
        line = raw.strip()
        match = re.match(r'\[remote\s+"([^"]+)"\]', line)
        if match:
            section = match.group(1)
            continue
        if line.startswith("["):
            section = None
            continue
        if section is not None and section not in remotes:
            key, _, value = line.partition("=")
            if key.strip() == "url" and value.strip():
                remotes[section] = value.strip()
    url = remotes.get("origin") or next(iter(remotes.values()), None)
    return strip_credentials(url) if url else None


def strip_credentials(url: str) -> str:
    """`https://user:secret@host/x` → `https://host/x`; scp-style `git@host:x` is kept."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme and "@" in parts.netloc:
        return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
    return url


# --- HTTP ------------------------------------------------------------------------------------

def _request(config: Config, method: str, path: str, body: bytes, headers: dict, timeout: float):
    """Send one request; returns `(status, parsed JSON or None)` for any 2xx answer and
    raises JezeroError for everything else (the status only, never the body we sent)."""
    request = urllib.request.Request(config.url + path, data=body, method=method)
    request.add_header("Authorization", "Bearer " + config.token)
    request.add_header("Accept", "application/json")
    request.add_header("User-Agent", "jezero-plugin/" + VERSION)
    for name, value in headers.items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=max(timeout, 0.05)) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        raise JezeroError("http %d" % error.code) from None
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise JezeroError("unreachable (%s)" % type(reason).__name__) from None
    try:
        return status, json.loads(raw.decode("utf-8")) if raw else None
    except ValueError:
        return status, None


def fetch_context(config: Config, path: str, body: dict, budget: float = CONTEXT_TIMEOUT) -> str:
    """POST `body` to a context hook route and return its `context` ("" when there is none).
    The whole call — name lookup, connect, answer — is bounded by `budget` seconds: it runs
    in a daemon thread that is abandoned when time is up. Raises JezeroError on any failure
    or timeout."""
    outcome = {}

    def call():
        try:
            outcome["answer"] = _request(config, "POST", path, json.dumps(body).encode("utf-8"),
                                         {"Content-Type": "application/json"}, budget)[1]
        except JezeroError as error:
            outcome["error"] = error
        except Exception as error:  # noqa: BLE001 — any surprise in the thread means "no context"
            outcome["error"] = JezeroError(type(error).__name__)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(max(budget, 0.0))
    if worker.is_alive():
        raise JezeroError("timeout after %.1fs" % budget)
    if "error" in outcome:
        raise outcome["error"]
    answer = outcome.get("answer")
    context = answer.get("context") if isinstance(answer, dict) else None
    return context.strip() if isinstance(context, str) else ""


def upload_transcript(config: Config, agent: str, session_id: str, path: str, cwd: str | None,
                      ended: bool, timeout: float = UPLOAD_TIMEOUT) -> tuple[int, dict | None, int]:
    """Upload the transcript at `path` (whole lines only: a line still being written is left
    for the next upload), gzip-compressed, to `POST /api/v1/sessions`. Returns
    `(status, answer, bytes sent before compression)`. Raises JezeroError (HTTP status or
    unreachable) and OSError (unreadable file)."""
    with open(path, "rb") as handle:
        data = handle.read()
    data = data[: data.rfind(b"\n") + 1]
    if not data.strip():
        raise JezeroError("empty transcript")
    params = {"agent": agent, "session_id": session_id}
    if cwd:
        params["cwd"] = cwd
        branch, remote = git_info(cwd)
        if branch:
            params["git_branch"] = branch
        if remote:
            params["git_remote"] = remote
    params["ended"] = "true" if ended else "false"
    status, answer = _request(config, "POST", "/api/v1/sessions?" + urllib.parse.urlencode(params),
                              gzip.compress(data, compresslevel=6),
                              {"Content-Type": "application/x-ndjson", "Content-Encoding": "gzip"}, timeout)
    return status, answer if isinstance(answer, dict) else None, len(data)


# --- the agents' hooks -------------------------------------------------------------------------
# Claude Code and Codex run a hook as a command with the event's JSON on stdin and read the
# same answer from a SessionStart or UserPromptSubmit hook on stdout:
# {"hookSpecificOutput": {"hookEventName": <event>, "additionalContext": <text>}}; an empty
# stdout with exit 0 adds nothing. `plugins/claude-code/hooks/jezero_hook.py` and
# `plugins/codex/jezero_codex_hooks.py` are these functions plus their agent's upload events.

MAX_PROMPT_CHARS = 10000  # the server keeps at most 20 words; a pasted log needs not travel
CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit")


def session_start_context(config: Config, payload: dict, budget: float) -> str:
    """SessionStart: the project's newest items and the protocol, from the working folder
    (and its git remote). Also removes the state files of long-idle sessions."""
    prune_states()
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else ""
    body = {"cwd": cwd, "session_id": payload["session_id"]}
    remote = git_info(cwd)[1] if cwd else None
    if remote:
        body["git_remote"] = remote
    return fetch_context(config, "/api/v1/hooks/session-start", body, budget)


def first_prompt_context(config: Config, payload: dict, budget: float) -> str:
    """UserPromptSubmit: the first real prompt of a session (not a bare `/command`) asks the
    library for related items; later prompts add nothing and send nothing."""
    prompt = payload.get("prompt")
    session_id = payload["session_id"]
    if not isinstance(prompt, str) or re.fullmatch(r"\s*/\S*\s*", prompt) or not prompt.strip():
        return ""  # a bare slash command is not the first thing the person asked
    if read_state(session_id).get("first_prompt_at"):
        return ""
    # Marked before asking: if the library is slow now, later prompts still add nothing.
    update_state(session_id, first_prompt_at=time.time())
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else ""
    body = {"prompt": prompt[:MAX_PROMPT_CHARS], "session_id": session_id, "cwd": cwd}
    remote = git_info(cwd)[1] if cwd else None
    if remote:
        body["git_remote"] = remote
    return fetch_context(config, "/api/v1/hooks/first-prompt", body, budget)


def run_hook(event: str | None, stdin, handlers: dict, started: float) -> str:
    """Handle one hook call: read the JSON on `stdin`, run `handlers[event]` (the event from
    the command line, else the payload's `hook_event_name`) as `handler(config, payload,
    budget)`, and return what to print: the hookSpecificOutput JSON when a context event
    produced text, else "". `budget` is what is left of CONTEXT_TIMEOUT since `started`
    (a `time.monotonic()` taken when the process began). Never raises: without
    configuration, on bad input or any failure it returns "" (and logs why)."""
    try:
        config = load_config()
        if config is None or stdin is None or stdin.isatty():
            return ""
        payload = json.loads(stdin.read())
        if not isinstance(payload, dict) or not isinstance(payload.get("session_id"), str) or not payload["session_id"]:
            return ""
        event = event or payload.get("hook_event_name")
        handler = handlers.get(event)
        context = handler(config, payload, CONTEXT_TIMEOUT - (time.monotonic() - started)) if handler else None
        if event not in CONTEXT_EVENTS or not isinstance(context, str) or not context:
            return ""
        return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}})
    except Exception as error:  # noqa: BLE001 — docs/design.md "Agent hooks": a hook never breaks the agent
        log("hook %s failed: %s" % (event, error if isinstance(error, JezeroError) else type(error).__name__))
        return ""


def hook_main(handlers: dict, started: float) -> None:
    """The body of a hook program: `<program> <event>` with the JSON on stdin. Prints the
    answer (if any) and ends the process with status 0 at once: a context request still
    running in its thread is abandoned, not waited for (os._exit)."""
    output = run_hook(sys.argv[1] if len(sys.argv) > 1 else None, sys.stdin, handlers, started)
    try:
        if output:
            sys.stdout.write(output + "\n")
        sys.stdout.flush()
    except OSError:
        pass
    os._exit(0)


# --- upload planning (in the agent's process) ---------------------------------------------------

def plan_upload(state: dict, now: float, ended: bool, interval: float = UPLOAD_INTERVAL) -> tuple[str, float | None]:
    """Decide what an upload request does, from the session's state:
    - `("now", None)`: the session ended (always uploads), or this is the first upload, or
      `interval` has passed since the last one started;
    - `("later", at)`: throttled, and no upload is pending: one is scheduled for `at`, the end
      of the window, so the tail of a session that goes quiet still arrives;
    - `("skip", None)`: throttled and an upload is already pending.
    A pure function of its arguments."""
    last = state.get("upload_started_at")
    if ended or not isinstance(last, (int, float)) or now - last >= interval:
        return "now", None
    if isinstance(state.get("upload_pending_at"), (int, float)):
        return "skip", None
    return "later", last + interval


def request_upload(agent: str, session_id: str, path: str, cwd: str | None, ended: bool,
                   settle: float = SETTLE_SECONDS, env=None, now: float | None = None) -> str:
    """Plan an upload (see `plan_upload`), record the plan in the session's state and start
    the detached uploader when there is something to do. Returns the decision ("now",
    "later", "skip"). Returns at once: the child does the reading and the network.
    Raises OSError when the state cannot be written or the child cannot start."""
    now = time.time() if now is None else now
    decision, at = plan_upload(read_state(session_id, env), now, ended)
    job = {"agent": agent, "session_id": session_id, "path": path, "cwd": cwd, "ended": ended}
    if decision == "now":
        # Clearing upload_pending_at cancels a scheduled upload: this one supersedes it.
        update_state(session_id, env, upload_started_at=now, upload_pending_at=None)
        job["delay"] = settle
        job["started"] = now  # an upload started after this one, while it waits, supersedes it
        spawn_uploader(job)
    elif decision == "later":
        update_state(session_id, env, upload_pending_at=at)
        job["at"] = at
        spawn_uploader(job)
    return decision


def spawn_uploader(job: dict) -> None:
    """Start `python jezero_client.py upload <job>` detached from the agent: its own session,
    no inherited stdin/stdout/stderr (an agent that waits for the hook's output would
    otherwise wait for the upload too). The token is not in the arguments; the child reads
    the configuration itself."""
    options = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL,
               "close_fds": True}
    if os.name == "nt":
        options["creationflags"] = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(
            subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    else:
        options["start_new_session"] = True
    subprocess.Popen([sys.executable or "python3", os.path.abspath(__file__), "upload", json.dumps(job)], **options)


# --- the detached uploader ---------------------------------------------------------------------

def run_upload_job(job: dict, env=None, sleep=time.sleep) -> str:
    """Carry out one planned upload and record the outcome in the session's state
    (`last_upload`: time, status, version, whether the server stored it, or the error) and in
    the log. A scheduled job (`at`) first waits, then gives up if a newer upload superseded it
    or the transcript has not changed since the last successful upload; a job that waits for
    the transcript to settle (`delay`) gives up when another upload of the session started
    meanwhile (a SessionEnd right after a Stop: the later upload reads the longer file). The
    server, too, keeps the newest upload whatever order they arrive in. Returns a short
    outcome word; never raises."""
    session_id = str(job.get("session_id") or "")
    try:
        config = load_config(env)
        if config is None or not session_id or not job.get("path"):
            return "no-config"
        if isinstance(job.get("at"), (int, float)):
            sleep(max(0.0, job["at"] - time.time()))
            state = read_state(session_id, env)
            if state.get("upload_pending_at") != job["at"]:
                return _superseded(job, env)
            update_state(session_id, env, upload_started_at=time.time(), upload_pending_at=None)
            if _fingerprint(job["path"]) == state.get("uploaded_fingerprint"):
                return "unchanged"
        elif job.get("delay"):
            sleep(float(job["delay"]))
            started = job.get("started")
            if isinstance(started, (int, float)) and read_state(session_id, env).get("upload_started_at") != started:
                return _superseded(job, env)
        ended = bool(job.get("ended"))
        fingerprint = _fingerprint(job["path"])
        status, answer, size = upload_transcript(config, job["agent"], session_id, job["path"], job.get("cwd"), ended)
        # The server's receipt (source, agent, version, …), kept so a person can see where it went.
        receipt = {key: value for key, value in (answer or {}).items()
                   if value is None or isinstance(value, (str, int, float, bool))}
        version = receipt.get("version")
        # `stored: false`: the server already holds this transcript or a longer one (a late
        # upload overtaken by a newer one); it kept what it had.
        stored = receipt.get("stored", True) is not False
        update_state(session_id, env, uploaded_fingerprint=fingerprint,
                     last_upload={"at": time.time(), "status": status, "version": version, "ended": ended,
                                  "stored": stored, "receipt": receipt})
        log("upload agent=%s session=%s ended=%s status=%d version=%s bytes=%d%s"
            % (job["agent"], session_id, str(ended).lower(), status, version, size,
               "" if stored else " stored=false"), env)
        return "uploaded" if stored else "kept"
    except (JezeroError, OSError, ValueError, KeyError, TypeError) as error:
        message = str(error) if isinstance(error, JezeroError) else type(error).__name__
        try:
            update_state(session_id, env, last_upload={"at": time.time(), "error": message,
                                                       "ended": bool(job.get("ended"))})
        except OSError:
            pass
        log("upload agent=%s session=%s failed: %s" % (job.get("agent"), session_id, message), env)
        return "failed"


def _superseded(job: dict, env) -> str:
    log("upload agent=%s session=%s superseded by a newer upload" % (job.get("agent"), job.get("session_id")), env)
    return "superseded"


def _fingerprint(path: str) -> list | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns]


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read(1024 * 1024)


def _read_json(path: str):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def main(argv: list) -> int:
    if len(argv) == 3 and argv[1] == "upload":
        try:
            job = json.loads(argv[2])
        except ValueError:
            return 0
        if isinstance(job, dict):
            run_upload_job(job)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
