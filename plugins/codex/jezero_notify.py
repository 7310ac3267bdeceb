#!/usr/bin/env python3
"""A Codex `notify` program that uploads the session's rollout to Jezero.

Codex runs `notify = ["python3", "/path/to/jezero_notify.py"]` after every turn with one
argument, a JSON object `{"type": "agent-turn-complete", "thread-id", "turn-id", "cwd",
"input-messages", "last-assistant-message"}`. This finds the rollout of that thread under
`$CODEX_HOME/sessions` (default `~/.codex/sessions`; the file name
`rollout-<timestamp>-<uuid>.jsonl` ends with the thread id) and hands it to the detached
uploader: at most one upload per session every 15 minutes; a throttled turn schedules one
upload for the end of the window, so the last turns of a session arrive even though Codex
has no "session ended" event.

Anything between the script and the JSON argument is another notify command to run as well
(Codex allows one `notify` program): `notify = ["python3", "jezero_notify.py",
"notify-send-codex"]` runs `notify-send-codex '<json>'` too.

It prints nothing and exits 0 whatever happens, and returns at once.

The HTTP, configuration and state logic is `jezero_client.py`, looked up beside this file
first and then in the Claude Code plugin of the same checkout. Codex's hooks
(`jezero_codex_hooks.py`) can do this program's uploads on their Stop event instead.
"""

import json
import os
import re
import subprocess
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
for _folder in (_HERE, os.path.join(os.path.dirname(_HERE), "claude-code", "hooks")):
    if os.path.isfile(os.path.join(_folder, "jezero_client.py")):
        sys.path.insert(0, _folder)
        break

_THREAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{7,127}")


def codex_home(env=None):
    env = os.environ if env is None else env
    return env.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")


def find_rollout(thread_id, sessions_dir):
    """The path of `rollout-*-<thread_id>.jsonl` under `sessions_dir`, searching the newest
    `YYYY/MM/DD` folders first; None when there is none or the id is not a plain id."""
    if not _THREAD_ID.fullmatch(thread_id or ""):
        return None
    suffix = "-%s.jsonl" % thread_id
    for folder in _newest_first(sessions_dir, depth=3):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.startswith("rollout-") and name.endswith(suffix):
                return os.path.join(folder, name)
    return None


def _newest_first(folder, depth):
    """Folders `depth` levels below `folder`, newest name first (dates sort as text), then
    `folder` itself, in case a future Codex lays the files out differently."""
    if depth > 0:
        try:
            children = sorted(os.listdir(folder), reverse=True)
        except OSError:
            children = []
        for child in children:
            path = os.path.join(folder, child)
            if os.path.isdir(path):
                yield from _newest_first(path, depth - 1)
    yield folder


def handle(argument, env=None):
    """Upload the rollout named by a notify argument (a JSON string); returns the upload
    decision ("now", "later", "skip") or None when there is nothing to do. Raises on bad
    JSON or an unwritable state folder."""
    import jezero_client as client

    if client.load_config(env) is None:
        return None
    payload = json.loads(argument)
    if not isinstance(payload, dict) or payload.get("type") != "agent-turn-complete":
        return None
    thread_id = payload.get("thread-id")
    if not isinstance(thread_id, str):
        return None
    path = rollout_of(thread_id, env)
    if path is None:
        return None
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    return client.request_upload("codex", thread_id, path, cwd, ended=False, env=env)


def rollout_of(thread_id, env=None, known=None):
    """The rollout file of a thread: `known` (a path Codex gave, e.g. a hook's
    `transcript_path`) when it exists, else the one remembered in the session's state, else
    the one found under `$CODEX_HOME/sessions` (then remembered). None when there is none.
    Raises OSError when the state cannot be written."""
    import jezero_client as client

    if isinstance(known, str) and os.path.isfile(known):
        return known
    path = client.read_state(thread_id, env).get("rollout_path")
    if isinstance(path, str) and os.path.isfile(path):
        return path
    path = find_rollout(thread_id, os.path.join(codex_home(env), "sessions"))
    if path is not None:
        client.update_state(thread_id, env, rollout_path=path)
    return path


def _chain(command, argument):
    subprocess.Popen(list(command) + [argument], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, close_fds=True, start_new_session=os.name != "nt")


def main(argv):
    if len(argv) < 2:
        return 0
    try:
        if len(argv) > 2:
            _chain(argv[1:-1], argv[-1])
    except OSError:
        pass
    try:
        handle(argv[-1])
    except Exception as error:  # noqa: BLE001 — a notify program must never disturb Codex
        try:
            import jezero_client as client

            client.log("notify failed: %s" % type(error).__name__)
        except ImportError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
