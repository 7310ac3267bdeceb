"""Every connector Jezero knows, and the one place that adds, edits and removes them (docs/design.md "Connectors").

Two kinds in one list, their names unique across both:
- **file** connectors: the `[[connectors]]` tables of jezero.toml, read when a process starts
  and read-only here (edit the file and restart, as before);
- **database** connectors: `Connector` rows added from the web app or `jezero connector add`,
  read at every call, so a running worker sees an added, edited or disabled one at its next
  tick without a restart.

Both are checked by the same schema code (`library.schema.check_connector`). A database
connector may not take a name the file uses. Should the file later define a name the
database also has, the file's connector is the one used and the row is reported as a problem
(`problems()`: the Sources page, `jezero connector list`, the `jezero.W002` check that
`jezero check`, `serve` and `worker` run) until one of them goes. Removing a connector keeps
its items and forgets its cursors. Every reader — the pipeline, the scheduler, the pages, the
API's catalog, the CLI — goes through this module, never `settings.JEZERO["connectors"]`.
"""

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from connectors.types import TYPES, UPLOAD
from library.errors import BadInput, InvalidConnector, NotFound
from library.ingest import locks
from library.models import Client, Connector, Item, UnitCursor
from library.schema import CONNECTOR_TYPE_KEYS, check_connector, connector_keys, text_values

logger = logging.getLogger(__name__)

FILE, DATABASE = "file", "database"
_FIXED = ("name", "type")   # chosen when a connector is added; a rename would orphan its items
SHADOWED = ("jezero.toml also defines a connector named {name!r}: the file's connector is used and this one, "
            "added in the web app or the CLI, is ignored; remove one of them")


@dataclass(frozen=True)
class Defined:
    """One connector as defined: where (`origin`), its configuration with every default
    filled in (None for a database row that no longer fits the schema), what was given
    (the stored options of a database row, for its edit form) and why it is not used, if
    it is not (`problem`)."""

    name: str
    type: str
    origin: str
    config: dict | None
    given: dict
    problem: str = ""

    @property
    def editable(self):
        return self.origin == DATABASE

    @property
    def usable(self):
        return self.config is not None and not self.problem


def _file():
    return settings.JEZERO["connectors"]


def _from_row(row, file_names):
    given = {"name": row.name, "type": row.type, **row.options, "enabled": row.enabled}
    config, problems = check_connector(given, where=row.name)
    problem = ""
    if row.name in file_names:
        problem = SHADOWED.format(name=row.name)
    elif problems:
        problem = "its options no longer fit the schema (" + "; ".join(f"{k}: {m}" for k, m in problems.items()) \
                  + "): edit or remove it"
    return Defined(row.name, row.type, DATABASE, config, given, problem)


def defined():
    """Every connector: the file's in file order, then the database's by name — including
    rows that are not used (see `Defined.problem`)."""
    file = _file()
    names = {config["name"] for config in file}
    found = [Defined(c["name"], c["type"], FILE, c, dict(c)) for c in file]
    return found + [_from_row(row, names) for row in Connector.objects.all()]


def configs():
    """The configuration of every connector in use, file first (each a dict with every
    default filled in, as `jezero.toml`'s tables are after loading)."""
    return [entry.config for entry in defined() if entry.usable]


def names():
    return [config["name"] for config in configs()]


def upload_names():
    """The names of the upload connectors in use (where devices' uploads become items)."""
    return [config["name"] for config in configs() if config["type"] == UPLOAD]


def problems():
    """[(name, what is wrong)] for the database rows that are not used."""
    return [(entry.name, entry.problem) for entry in defined() if entry.problem]


def entry(name):
    """The Defined connector named `name` (the file's when both define it), or None."""
    for config in _file():
        if config["name"] == name:
            return Defined(name, config["type"], FILE, config, dict(config))
    row = Connector.objects.filter(name=name).first()
    return None if row is None else _from_row(row, set())


def find(name):
    """The configuration of the connector `name` in use, or None. One query at most."""
    found = entry(name)
    return found.config if found is not None and found.usable else None


def fixed_projects():
    """{connector name: its fixed `project`} for the connectors that set one."""
    return {config["name"]: config["project"] for config in configs() if config["project"]}


# --- changing the database's connectors ---------------------------------------------------------------

def _typed(ctype, values):
    """The values given (text from a form or the command line, or typed), as the schema's
    kinds: ({key: value}, {key: problem}); a key given empty maps to None (its default)."""
    keys = {key.name: key for key in connector_keys(ctype) if key.name not in _FIXED}
    values = {name: value for name, value in (values or {}).items() if name not in _FIXED}
    return text_values(keys, values, unknown=f"unknown option for a {ctype} connector")


def _check(name, ctype, options, extra_faults):
    """Validate a database connector's full table; returns its configuration or raises
    InvalidConnector with every fault, schema order first."""
    config, faults = check_connector({"name": name, "type": ctype, **options}, where=name or "connector")
    faults = {**faults, **{k: v for k, v in extra_faults.items() if k not in faults}}
    if faults:
        raise InvalidConnector(faults)
    return config


def _split(config_options):
    options = {k: v for k, v in config_options.items() if k != "enabled"}
    return options, config_options.get("enabled", True)


def add(ctype, name, values=None):
    """Add a connector to the database from `values` ({key: text or value}; an empty value
    means the key's default; `enabled` among them, default true). Returns its configuration.

    Raises InvalidConnector — every key at fault, nothing stored — when the schema refuses a
    value, the type is unknown, or the name is taken (by jezero.toml or another connector)."""
    if ctype not in TYPES:
        raise InvalidConnector({"type": f"{ctype!r} is not one of {', '.join(TYPES)}"})
    typed, faults = _typed(ctype, values)
    options = {k: v for k, v in typed.items() if v is not None}
    if any(config["name"] == name for config in _file()):
        faults["name"] = f"jezero.toml defines a connector named {name!r}: choose another name"
    elif Connector.objects.filter(name=name).exists():
        faults["name"] = f"a connector named {name!r} exists already"
    config = _check(name, ctype, options, faults)
    options, enabled = _split(options)
    try:
        with transaction.atomic():  # a savepoint: a name taken meanwhile must not break the caller's transaction
            Connector.objects.create(name=name, type=ctype, options=options, enabled=enabled)
    except IntegrityError:
        raise InvalidConnector({"name": f"a connector named {name!r} exists already"}) from None
    logger.info("connector added name=%s type=%s", name, ctype)
    return config


def _row(name):
    """The database row of `name`; raises BadInput for a connector of jezero.toml, NotFound
    for none."""
    row = Connector.objects.filter(name=name).first()
    if row is not None:
        return row
    if any(config["name"] == name for config in _file()):
        raise BadInput(f"connector {name!r} is defined in jezero.toml and is read-only here: change it in the file")
    raise NotFound(f"no connector named {name!r}")


def edit(name, values, *, replace=False):
    """Change a database connector: the keys in `values` (an empty value puts the key back to
    its default); with `replace`, `values` is the whole new set (a submitted form). Name and
    type stay (a new name would leave its items behind: remove it and add another).
    Returns the new configuration. Raises NotFound, BadInput (a connector of jezero.toml) or
    InvalidConnector, and then nothing is changed."""
    row = _row(name)
    faults = {key: "cannot be changed: remove the connector and add another" for key in _FIXED
              if key in (values or {}) and str(values[key]).strip() not in ("", getattr(row, key))}
    typed, more = _typed(row.type, values)
    faults.update(more)
    options = {} if replace else {**row.options, "enabled": row.enabled}
    for key, value in typed.items():
        if value is None:
            options.pop(key, None)
        else:
            options[key] = value
    config = _check(name, row.type, options, faults)
    row.options, row.enabled = _split(options)
    row.updated_at = timezone.now()
    row.save(update_fields=["options", "enabled", "updated_at"])
    logger.info("connector edited name=%s", name)
    return config


def set_enabled(name, enabled):
    """Enable or disable a database connector (a disabled one is kept but never run on
    schedule). Returns its configuration. Raises as `edit`. Idempotent."""
    return edit(name, {"enabled": bool(enabled)})


@dataclass(frozen=True)
class Removed:
    name: str
    items_kept: int
    cursors_forgotten: int


def remove(name):
    """Remove a database connector. Its items stay (their source keeps the name); its unit
    cursors are forgotten, so a connector added again under the name reads its source anew.
    An upload connector that a client still uploads to is refused (its uploads would pile up
    unseen). Raises NotFound, BadInput (jezero.toml's, a client's upload source, running)."""
    row = _row(name)
    if row.type == UPLOAD:
        uploaders = [client.name for client in Client.objects.filter(upload_source=name, revoked_at=None)
                     if "upload" in client.scopes]
        if uploaders:
            raise BadInput(f"client {', '.join(uploaders)} uploads to {name!r}: revoke it or give it another upload "
                           "source first, or its uploads would never become items")
    shadowed = any(config["name"] == name for config in _file())
    with locks.connector_lock(name), transaction.atomic():
        row.delete()
        # When jezero.toml defines the name too, the cursors are the file's connector's.
        forgotten = 0 if shadowed else UnitCursor.objects.filter(connector=name).delete()[0]
    kept = Item.objects.filter(source=name).count()
    logger.info("connector removed name=%s items_kept=%d cursors_forgotten=%d", name, kept, forgotten)
    return Removed(name, kept, forgotten)


def ensure_upload(name):
    """Make sure an `upload` connector named `name` exists (a client's upload source);
    returns True when this call added it. Raises BadInput, adding nothing, when a connector of
    another type has the name or the name is not a valid source name. Idempotent."""
    found = entry(name)
    if found is not None:
        if found.type != UPLOAD:
            raise BadInput(f"upload source: {name!r} is a {found.type} connector, not an upload one; "
                           "choose another name")
        return False
    try:
        add(UPLOAD, name)
    except InvalidConnector as exc:
        raise BadInput(f"upload source: {exc}") from None
    return True


# --- where agents keep their sessions ---------------------------------------------------------

# Words in a folder's name that say which agent wrote it (`/sources/claude-code`).
_HINTS = (("claude", "claude_code"), ("codex", "codex"), ("gemini", "gemini_cli"), ("hermes", "hermes"),
          ("opencode", "opencode"), ("specstory", "specstory"), ("pi", "pi"), ("notes", "markdown"),
          ("backlog", "markdown"), ("markdown", "markdown"))


@dataclass(frozen=True)
class Suggestion:
    path: str
    type: str     # the type it probably is ("" when unknown)
    where: str    # "home" (an agent's usual folder) or "mounted" (under JEZERO_SOURCES_DIR)


def _guess(folder):
    words = folder.name.lower().replace("_", "-").split("-") + [folder.name.lower()]
    for word, ctype in _HINTS:
        if word in words or (len(word) > 2 and word in folder.name.lower()):
            return ctype
    try:
        if next(folder.glob("*.md"), None) is not None:
            return "markdown"
        if next(folder.glob("*/*.jsonl"), None) is not None:
            return "claude_code"
    except OSError:
        return ""
    return ""


def suggested_paths():
    """Folders worth offering as a connector's path: each type's usual location under the
    home folder when it exists (`~/.claude/projects`, `~/.codex/sessions`, …), then every
    sub-folder of the mount root `JEZERO_SOURCES_DIR` (default /sources, where the compose
    file mounts agents' folders read-only), each with the type it probably is."""
    from pathlib import Path

    found = []
    for ctype, keys in CONNECTOR_TYPE_KEYS.items():
        default = next((key.default for key in keys if key.name == "path" and key.default), None)
        if default and Path(default).expanduser().exists():
            found.append(Suggestion(default, ctype, "home"))
    root = settings.JEZERO_SOURCES_DIR
    try:
        folders = sorted(child for child in root.iterdir() if child.is_dir() and not child.name.startswith("."))
    except OSError:
        folders = []
    for folder in folders:
        ctype = _guess(folder)
        path = folder
        if ctype == "hermes" and (folder / "state.db").is_file():
            path = folder / "state.db"
        found.append(Suggestion(str(path), ctype, "mounted"))
    return found


def suggested_name(ctype, path=""):
    """A free name for a new connector: `agent-<folder>` for a mounted folder, else by type."""
    from pathlib import Path

    base = Path(path).name if path and str(Path(path).parent) == str(settings.JEZERO_SOURCES_DIR) else ""
    stem = (base or ctype.replace("_", "-")).lower()
    stem = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in stem).strip("-") or "connector"
    prefix = {UPLOAD: "uploads", "imap": "mail", "markdown": "notes"}.get(ctype, "agent")
    candidate = stem if stem.startswith(prefix) else f"{prefix}-{stem}"
    taken = {entry.name for entry in defined()}
    name, n = candidate, 2
    while name in taken:
        name, n = f"{candidate}-{n}", n + 1
    return name
