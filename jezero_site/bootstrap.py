"""The parts of `jezero init` that must exist before Django can start: the data folder, the
commented configuration file and the secret key. Idempotent: what exists is "skipped"."""

import os
import secrets

from jezero_site import config, env


class BootstrapError(Exception):
    """The data folder cannot be prepared (permissions, a file in the way, a bad config)."""


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
            config_path.write_text(config.default_text(), encoding="utf-8")
            say(f"config {config_path}: created (every key commented at its default)")
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
