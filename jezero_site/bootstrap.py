"""The parts of `jezero init` that must exist before Django can start: the data folder, the
commented configuration file and the secret key. Idempotent: what exists is "skipped"."""

import os
import secrets
from pathlib import Path

from jezero_site import config, env


class BootstrapError(Exception):
    """The data folder cannot be prepared (permissions, a file in the way, a bad config)."""


# The agents whose session folders `init` looks for on this machine, and the connectors it
# then writes into the new configuration.
LOCAL_AGENTS = (
    ("claude_code", "~/.claude/projects", "agent-claude-code"),
    ("codex", "~/.codex/sessions", "agent-codex"),
)


def local_agent_connectors(home=None):
    """Connectors for the local Claude Code / Codex session folders that exist."""
    found = []
    for ctype, path, name in LOCAL_AGENTS:
        folder = Path(home).joinpath(path[2:]) if home else Path(path).expanduser()
        if folder.is_dir():
            found.append({"name": name, "type": ctype, "path": path})
    return found


def prepare_data_folder(say):
    """Create what is missing; `say(line)` reports each step ("created …" / "skipped …")."""
    try:
        data = env.data_dir()
        config_path = env.config_path()
        secret_in_env = env.secret("JEZERO_SECRET_KEY") is not None
    except env.EnvError as exc:
        raise BootstrapError(str(exc)) from None
    try:
        if data.is_dir():
            say(f"data folder {data}: skipped (exists)")
        else:
            data.mkdir(parents=True, mode=0o750)
            say(f"data folder {data}: created")
        if config_path.exists():
            say(f"config {config_path}: skipped (exists)")
        else:
            config_path.parent.mkdir(parents=True, exist_ok=True)
            found = local_agent_connectors()
            config_path.write_text(config.default_text(found), encoding="utf-8")
            say(f"config {config_path}: created (every key commented at its default)")
            for connector in found:
                say(f"  connector {connector['name']}: {connector['type']} sessions in {connector['path']}")
        secret_path = data / "secret_key"
        if secret_in_env:
            say("secret key: skipped (JEZERO_SECRET_KEY is set)")
        elif secret_path.exists():
            say(f"secret key {secret_path}: skipped (exists)")
        else:
            fd = os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(secrets.token_urlsafe(50) + "\n")
            say(f"secret key {secret_path}: created")
    except OSError as exc:
        raise BootstrapError(f"{exc.filename}: {exc.strerror}") from None
    try:
        config.load(config_path)
    except config.ConfigError as exc:
        raise BootstrapError(str(exc)) from None
