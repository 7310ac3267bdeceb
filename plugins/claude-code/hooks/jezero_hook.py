#!/usr/bin/env python3
"""Claude Code hooks for Jezero: `jezero_hook.py SessionStart|UserPromptSubmit|Stop|SessionEnd`
with the hook's JSON on stdin (see hooks.json).

- SessionStart: asks the library for the project's newest items and the protocol text and
  prints them as `additionalContext`.
- UserPromptSubmit: the first real prompt of a session (not a bare `/command`) asks the
  library for related items; later prompts add nothing.
- Stop: uploads the transcript, at most once every 15 minutes per session (a throttled
  upload is scheduled for the end of the window instead).
- SessionEnd: always uploads, with `ended=true`.

Uploads run in a detached child, so the agent never waits for them. Whatever goes wrong —
no configuration, bad stdin, the server down, slow or refusing — the hook prints nothing
and exits 0; context hooks give up after 2 seconds in all.
"""

import json
import os
import re
import sys
import time

STARTED = time.monotonic()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jezero_client as client  # noqa: E402 — found through the path set just above

MAX_PROMPT_CHARS = 10000  # the server keeps at most 20 words; a pasted log needs not travel


def session_start(config, payload):
    client.prune_states()
    cwd = payload.get("cwd") or ""
    body = {"cwd": cwd, "session_id": payload["session_id"]}
    remote = client.git_info(cwd)[1] if cwd else None
    if remote:
        body["git_remote"] = remote
    return "SessionStart", client.fetch_context(config, "/api/v1/hooks/session-start", body, _budget())


def first_prompt(config, payload):
    prompt = payload.get("prompt")
    session_id = payload["session_id"]
    if not isinstance(prompt, str) or re.fullmatch(r"\s*/\S*\s*", prompt) or not prompt.strip():
        return None  # a bare slash command is not the first thing the person asked
    if client.read_state(session_id).get("first_prompt_at"):
        return None
    # Marked before asking: if the library is slow now, later prompts still add nothing.
    client.update_state(session_id, first_prompt_at=time.time())
    cwd = payload.get("cwd") or ""
    body = {"prompt": prompt[:MAX_PROMPT_CHARS], "session_id": session_id, "cwd": cwd}
    remote = client.git_info(cwd)[1] if cwd else None
    if remote:
        body["git_remote"] = remote
    return "UserPromptSubmit", client.fetch_context(config, "/api/v1/hooks/first-prompt", body, _budget())


def stop(config, payload):
    _upload(payload, ended=False)


def session_end(config, payload):
    _upload(payload, ended=True)


def _upload(payload, ended):
    path = payload.get("transcript_path")
    if isinstance(path, str) and os.path.isfile(path):
        client.request_upload("claude_code", payload["session_id"], path, payload.get("cwd"), ended,
                              settle=0.0 if ended else client.SETTLE_SECONDS)


def _budget():
    return client.CONTEXT_TIMEOUT - (time.monotonic() - STARTED)


HANDLERS = {
    "SessionStart": session_start,
    "UserPromptSubmit": first_prompt,
    "Stop": stop,
    "SessionEnd": session_end,
}


def run(argv, stdin):
    """Handle one hook call; returns the text to print ("" for nothing). Never raises."""
    event = argv[1] if len(argv) > 1 else None
    try:
        config = client.load_config()
        if config is None or stdin is None or stdin.isatty():
            return ""
        payload = json.loads(stdin.read())
        if not isinstance(payload, dict) or not isinstance(payload.get("session_id"), str) or not payload["session_id"]:
            return ""
        event = event or payload.get("hook_event_name")
        handler = HANDLERS.get(event)
        answer = handler(config, payload) if handler else None
        if not answer or not answer[1]:
            return ""
        name, context = answer
        return json.dumps({"hookSpecificOutput": {"hookEventName": name, "additionalContext": context}})
    except Exception as error:  # noqa: BLE001 — SPEC §13: a hook never breaks the agent
        client.log("hook %s failed: %s" % (event, error if isinstance(error, client.JezeroError) else type(error).__name__))
        return ""


def main():
    output = run(sys.argv, sys.stdin)
    try:
        if output:
            sys.stdout.write(output + "\n")
        sys.stdout.flush()
    except OSError:
        pass
    # os._exit: a context request still running in its thread is abandoned, not waited for.
    os._exit(0)


if __name__ == "__main__":
    main()
