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

The two context hooks and the hook process itself are shared with the Codex hooks
(`jezero_client.py`). Uploads run in a detached child, so the agent never waits for them.
Whatever goes wrong — no configuration, bad stdin, the server down, slow or refusing — the
hook prints nothing and exits 0; context hooks give up after 2 seconds in all.
"""

import os
import sys
import time

STARTED = time.monotonic()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jezero_client as client  # noqa: E402 — found through the path set just above


def stop(config, payload, budget):
    _upload(payload, ended=False)


def session_end(config, payload, budget):
    _upload(payload, ended=True)


def _upload(payload, ended):
    path = payload.get("transcript_path")
    if isinstance(path, str) and os.path.isfile(path):
        client.request_upload("claude_code", payload["session_id"], path, payload.get("cwd"), ended,
                              settle=0.0 if ended else client.SETTLE_SECONDS)


HANDLERS = {
    "SessionStart": client.session_start_context,
    "UserPromptSubmit": client.first_prompt_context,
    "Stop": stop,
    "SessionEnd": session_end,
}


if __name__ == "__main__":
    client.hook_main(HANDLERS, STARTED)
