#!/usr/bin/env python3
"""Codex hooks for Jezero: `jezero_codex_hooks.py SessionStart|UserPromptSubmit|Stop` with
the hook's JSON on stdin, configured in `~/.codex/hooks.json` (or inline `[hooks]` tables of
`~/.codex/config.toml`); `jezero_codex_hooks.py --print-config [json|toml]` prints that
configuration for this checkout.

Codex sends every command hook `session_id` (the thread id), `transcript_path` (the rollout,
or null), `cwd`, `hook_event_name`, `model` and `permission_mode`; SessionStart adds `source`
(startup, resume, clear, compact), UserPromptSubmit and Stop add `turn_id`, UserPromptSubmit
adds `prompt`. A SessionStart or UserPromptSubmit hook that exits 0 with
`{"hookSpecificOutput": {"hookEventName": …, "additionalContext": …}}` on stdout adds that
text to the model's context; an empty stdout adds nothing.

- SessionStart: the project's newest items and the protocol (as for Claude Code).
- UserPromptSubmit: related items for the first real prompt of a session; later prompts
  add nothing.
- Stop (after every turn): uploads the rollout like the `notify` program does, at most once
  every 15 minutes per session — use one or the other for uploads, not both.

The context hooks, the hook process and the uploads are `jezero_client.py`'s (shared with
the Claude Code plugin; found as `jezero_notify.py` finds it). Whatever goes wrong the hook
prints nothing and exits 0; context hooks give up after 2 seconds in all.
"""

import json
import os
import shlex
import sys
import time

STARTED = time.monotonic()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jezero_notify as codex  # noqa: E402 — beside this file; importing it puts jezero_client on the path

try:
    import jezero_client as client
except ImportError:  # copied without the client: a hook must still exit 0 in silence
    client = None

EVENTS = {  # event → (matcher, timeout in seconds, status message)
    "SessionStart": ("startup|resume|clear|compact", 5, "Jezero: recent work of this project"),
    "UserPromptSubmit": (None, 5, "Jezero: related records"),
    "Stop": (None, 10, None),
}


def stop(config, payload, budget):
    session_id = payload["session_id"]
    path = codex.rollout_of(session_id, known=payload.get("transcript_path"))
    if path is not None:
        cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        client.request_upload("codex", session_id, path, cwd, ended=False)


def handlers():
    return {"SessionStart": client.session_start_context, "UserPromptSubmit": client.first_prompt_context,
            "Stop": stop}


def hooks_config(script=None):
    """The `hooks` object of a Codex hooks.json that runs this script (by its absolute path)."""
    script = script or os.path.abspath(__file__)
    hooks = {}
    for event, (matcher, timeout, status) in EVENTS.items():
        handler = {"type": "command", "command": "python3 %s %s" % (shlex.quote(script), event), "timeout": timeout}
        if status:
            handler["statusMessage"] = status
        group = {"matcher": matcher} if matcher else {}
        group["hooks"] = [handler]
        hooks[event] = [group]
    return hooks


def config_text(form="json", script=None):
    """The configuration to paste: a whole `~/.codex/hooks.json`, or the equivalent inline
    tables for `~/.codex/config.toml`."""
    hooks = hooks_config(script)
    if form == "json":
        return json.dumps({"hooks": hooks}, indent=2)
    lines = []
    for event, groups in hooks.items():
        for group in groups:
            lines.append("[[hooks.%s]]" % event)
            if "matcher" in group:
                lines.append("matcher = %s" % json.dumps(group["matcher"]))
            for handler in group["hooks"]:
                lines.append("[[hooks.%s.hooks]]" % event)
                lines += ["%s = %s" % (key, json.dumps(value)) for key, value in handler.items()]
            lines.append("")
    return "\n".join(lines).rstrip("\n")


def main():
    if sys.argv[1:2] == ["--print-config"]:
        form = sys.argv[2] if len(sys.argv) > 2 else "json"
        if form not in ("json", "toml"):
            sys.stderr.write("usage: jezero_codex_hooks.py --print-config [json|toml]\n")
            sys.exit(2)
        print(config_text(form))
        return
    if client is None:
        os._exit(0)
    client.hook_main(handlers(), STARTED)


if __name__ == "__main__":
    main()
