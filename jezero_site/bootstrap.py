"""The parts of `jezero init` that must exist before Django can start: the data folder, the
commented configuration file and the secret key. Idempotent: what exists is "skipped".

An init that refuses (a weak JEZERO_ADMIN_PASSWORD, a bad admin name, a configuration error)
leaves nothing behind: `prepare_data_folder` notes what it made and what the data folder held
before, and `take_back()` removes exactly what this process added since — the folders and
files made here and the databases Django opened — never what was there before."""

import os
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from jezero_site import config, env
from library.schema import ConfigError


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


# SQLite's files beside a database: they belong to it, and one that existed keeps them.
_SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


@dataclass
class Made:
    """What one `prepare_data_folder` found and made, for `take_back`."""

    data: Path
    before: frozenset = frozenset()   # the names in the data folder before this run
    paths: list = field(default_factory=list)   # folders and files made, in the order made


_made = None   # this process's Made, set by prepare_data_folder


def _missing_folders(folder):
    """`folder` and those of its parents that do not exist, outermost first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing[::-1]


def take_back():
    """Remove what this process added to the data folder since `prepare_data_folder` ran (the
    folders and files it made, and any new entry of the data folder, such as the databases
    Django opened), never what was there before; the caller closes its database connections
    first. Returns the paths removed; a no-op when `prepare_data_folder` did not run in this
    process."""
    if _made is None:
        return []
    removed = []
    data = _made.data
    if data.is_dir():
        for entry in sorted(data.iterdir()):
            owner = next((entry.name.removesuffix(end) for end in _SQLITE_SIDE_FILES if entry.name.endswith(end)), None)
            if entry.name in _made.before or owner in _made.before:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed.append(entry)
    for path in reversed(_made.paths):
        try:
            if path.is_dir() and not path.is_symlink():
                path.rmdir()   # only when empty: a folder made here that someone filled stays
            elif path.exists():
                path.unlink()
            else:
                continue
        except OSError:
            continue
        removed.append(path)
    return removed


def prepare_data_folder(say):
    """Create what is missing; `say(line)` reports each step ("created …" / "skipped …").
    Notes what it made for `take_back`."""
    global _made
    try:
        data = env.data_dir()
        config_path = env.config_path()
        secret_in_env = env.secret("JEZERO_SECRET_KEY") is not None
    except env.EnvError as exc:
        raise BootstrapError(str(exc)) from None
    _made = made = Made(data=data)
    try:
        if data.is_dir():
            made.before = frozenset(entry.name for entry in data.iterdir())
            say(f"data folder {data}: skipped (exists)")
        else:
            made.paths += _missing_folders(data)
            data.mkdir(parents=True, mode=0o750)
            say(f"data folder {data}: created")
        if config_path.exists():
            say(f"config {config_path}: skipped (exists)")
        else:
            made.paths += _missing_folders(config_path.parent)
            config_path.parent.mkdir(parents=True, exist_ok=True)
            found = local_agent_connectors()
            made.paths.append(config_path)
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
            made.paths.append(secret_path)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(secrets.token_urlsafe(50) + "\n")
            say(f"secret key {secret_path}: created")
    except OSError as exc:
        raise BootstrapError(f"{exc.filename}: {exc.strerror}") from None
    try:
        config.load(config_path)
    except ConfigError as exc:
        raise BootstrapError(str(exc)) from None
