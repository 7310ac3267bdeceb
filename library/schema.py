"""The configuration's schema as data, and the checks derived from it: a `Key` per option
(type, default, allowed range, one-line description), the `[summarizer]` table's keys
(`check_summarizer`), the connector options every type shares and each type's own, and `check_connector`, which checks one connector's table the
same way whether it comes from jezero.toml, the web app or the CLI.

No Django here: `jezero_site.config` loads the file with it before Django starts, and
`library.ingest.configured` checks the connectors kept in the database with it.
"""

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from connectors.types import AGENT_TYPES
from connectors.types import TYPES as CONNECTOR_TYPES
from library.vocabulary import SLUG_RE, SOURCE_NAME_RE

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the key and what is allowed.
    `problems` maps each key at fault to what is wrong with it (one connector's checks
    collect them all, so that a form can show each beside its field)."""

    def __init__(self, message, problems=None):
        super().__init__(message)
        self.problems = problems or {}


@dataclass(frozen=True)
class Key:
    """One configuration key.

    `kind` is one of: int, float, str, bool, enum, list[str], table[str]
    (a table of string → slug), patterns (a list of {kind, pattern} tables).
    """

    name: str
    kind: str
    default: Any
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple = ()
    nullable: bool = False
    required: bool = False
    check: Any = None  # extra validator: value -> error message or None


def _slug_problem(value):
    return None if SLUG_RE.match(value) else "must be a slug: lowercase letters, digits, '.', '_', '-'"


def _env_problem(value):
    return None if ENV_NAME_RE.match(value) else "must be the name of an environment variable"


def _glob_problem(value):
    return "must not be empty" if not value.strip() else None


def _date_problem(value):
    if not re.match(r"^\d{4}-\d{2}-\d{2}$", value):
        return "must be a date, YYYY-MM-DD"
    try:
        day = date.fromisoformat(value)
    except ValueError:
        return "is not a date that exists"
    return None if 1900 <= day.year < 2200 else "is out of range (1900-01-01 to 2199-12-31)"


# The `[summarizer]` table (docs/design.md "The summariser", "Configuration as data"): jezero.toml's, and the values set in the web app
# or with `jezero summarizer set` over it (`library.ingest.summarize.configuration`).
SUMMARIZER_KEYS = (
    Key("provider", "enum", "extractive", "who writes the records: a model API, a local agent CLI, or no model",
        choices=("extractive", "anthropic", "openai", "command")),
    Key("model", "str", None, "model name; required for anthropic, openai and command", nullable=True),
    Key("base_url", "str", None, "API base URL (OpenAI-compatible servers, proxies)", nullable=True),
    Key("api_key_env", "str", None, "environment variable holding the API key (default ANTHROPIC_API_KEY / OPENAI_API_KEY)",
        nullable=True, check=_env_problem),
    Key("command", "list[str]", [], "for provider = command: the agent CLI and its arguments, prompt on stdin"),
    Key("max_input_chars", "int", 60_000, "longest segment sent in one call, in characters", minimum=1_000, maximum=2_000_000),
    Key("timeout_seconds", "int", 120, "timeout of one model call", minimum=1, maximum=3_600),
    Key("max_concurrency", "int", 4, "model calls at a time", minimum=1, maximum=64),
    Key("output_language", "str", None, "write every record in this language (e.g. \"English\")", nullable=True),
    Key("known_projects", "list[str]", [], "project slugs the model should prefer"),
    Key("max_calls_per_run", "int", None, "stop a run after this many model calls", minimum=1, maximum=1_000_000, nullable=True),
    Key("daily_token_budget", "int", None, "stop calling the model once a day's input + output tokens reach this",
        minimum=1, maximum=10**12, nullable=True),
    Key("response_format", "enum", "json_schema", "openai provider: strict json_schema, or json_object for servers without it",
        choices=("json_schema", "json_object")),
)


# What is never read (docs/design.md "Kept out"; library.ingest.exclusions): `[privacy]` holds the
# global ones, every connector may add its own.
EXCLUDE_KEYS = (
    Key("exclude_paths", "list[str]", [], "path globs never read: a unit whose file or working folder (or a "
        "folder above either) matches one is left out (`~` is home; `*` crosses `/`)", check=_glob_problem),
    Key("exclude_projects", "list[str]", [], "project slugs never read: units the project rules give one of "
        "these are left out", check=_slug_problem),
)
PRIVACY_KEYS = EXCLUDE_KEYS

# Options every connector has; `min_chars` and `trust` defaults depend on the type.
CONNECTOR_COMMON = (
    Key("name", "str", None, "unique; becomes the items' source", required=True,
        check=lambda v: None if SOURCE_NAME_RE.match(v) else "must be letters, digits, '.', '_', '-' (no ':' or spaces)"),
    Key("type", "enum", None, "what it reads", choices=CONNECTOR_TYPES, required=True),
    Key("trust", "enum", None, "own, or external for third-party text (default: by type)", choices=("own", "external")),
    Key("interval_minutes", "int", 15, "run every this many minutes", minimum=1, maximum=10_080),
    Key("settle_minutes", "int", None, "leave units younger than this for a later run (default 30; 0 for upload: "
        "a device sends a session once a turn or at its end, and it is read as soon as it arrives)",
        minimum=0, maximum=10_080),
    Key("min_chars", "int", None, "skip units with fewer characters (default 400 for agent sessions, else 0)",
        minimum=0, maximum=10_000_000),
    Key("user_prompt_markers", "list[str]", [], "a user block containing one of these is dropped"),
    Key("user_prompt_drop_lines", "list[str]", [], "lines of user blocks containing one of these are removed"),
    Key("project", "str", None, "a fixed project for everything this connector reads", nullable=True, check=_slug_problem),
    Key("enabled", "bool", True, "false keeps the connector configured but never run"),
    *EXCLUDE_KEYS,
)

_PATH = "path"
CONNECTOR_TYPE_KEYS: dict[str, tuple[Key, ...]] = {
    "claude_code": (Key(_PATH, "str", "~/.claude/projects", "the projects folder"),),
    "codex": (Key(_PATH, "str", "~/.codex/sessions", "the sessions folder"),),
    "hermes": (Key(_PATH, "str", "~/.hermes/state.db", "the Hermes state database (opened read-only)"),),
    "gemini_cli": (Key(_PATH, "str", "~/.gemini/tmp", "the Gemini CLI tmp folder"),),
    "pi": (Key(_PATH, "str", "~/.pi/agent/sessions", "the pi sessions folder"),),
    "opencode": (Key(_PATH, "str", "~/.local/share/opencode", "the OpenCode data folder"),),
    "specstory": (Key(_PATH, "str", None, "a folder of SpecStory exports", required=True),),
    "upload": (),
    "imap": (
        Key("host", "str", None, "IMAP server (TLS)", required=True),
        Key("port", "int", 993, "IMAP over TLS port", minimum=1, maximum=65_535),
        Key("user", "str", None, "login name", required=True),
        Key("password_env", "str", None, "environment variable holding the password", required=True, check=_env_problem),
        Key("folders", "list[str]", ["INBOX"], "mailboxes to read"),
        Key("since", "str", None, "ignore mail before this date (YYYY-MM-DD)", nullable=True, check=_date_problem),
        Key("ca_file", "str", None, "CA bundle for a server with a private certificate", nullable=True),
    ),
    "markdown": (
        Key(_PATH, "str", None, "a folder of Markdown files", required=True),
        Key("glob", "str", "**/*.md", "which files, relative to path"),
    ),
}


# What each type reads, in a line: the web app's type chooser and the configuration reference.
TYPE_DOCS = {
    "claude_code": "Claude Code sessions: a folder laid out like ~/.claude/projects",
    "codex": "Codex CLI rollouts: a folder laid out like ~/.codex/sessions",
    "hermes": "Hermes Agent sessions: its state.db, opened read-only",
    "gemini_cli": "Gemini CLI chats: a folder laid out like ~/.gemini/tmp",
    "pi": "pi sessions: a folder laid out like ~/.pi/agent/sessions",
    "opencode": "OpenCode sessions: its data folder (opencode.db or the older JSON tree)",
    "specstory": "SpecStory exports: a folder of Markdown session files",
    "upload": "sessions that devices upload with a client's token (the Claude Code plugin, the Codex hooks)",
    "imap": "a mailbox over IMAP/TLS, one item per thread (third-party text: trust external)",
    "markdown": "a folder of Markdown files: a task board such as Backlog.md, or notes",
}


def default_trust(connector_type):
    return "external" if connector_type == "imap" else "own"


def default_min_chars(connector_type):
    return 400 if connector_type in AGENT_TYPES else 0


def default_settle_minutes(connector_type):
    return 0 if connector_type == "upload" else 30


# --- validation ------------------------------------------------------------------------

def _number(value):
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def _range_text(key):
    low = "" if key.minimum is None else _number(key.minimum)
    high = "" if key.maximum is None else _number(key.maximum)
    return f"{low}–{high}"


def _check_value(where, key, value):
    """Return the value converted to its kind, or raise ConfigError naming `where`."""
    if value is None:
        # TOML has no null; only reachable through defaults.
        return value
    kind = key.kind
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
    elif kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        value = float(value)
    elif kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
    elif kind in ("str", "enum"):
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        if kind == "enum" and value not in key.choices:
            raise ConfigError(f"{where}: {value!r} is not one of {', '.join(key.choices)}")
    elif kind == "list[str]":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    elif kind == "table[str]":
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a table of path = \"slug\", got {value!r}")
        for prefix, slug in value.items():
            if not isinstance(slug, str) or _slug_problem(slug):
                raise ConfigError(f"{where}.{prefix!r}: {slug!r} must be a project slug "
                                  "(lowercase letters, digits, '.', '_', '-')")
        value = dict(value)
    elif kind == "patterns":
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list of {{kind, pattern}} tables")
        for i, entry in enumerate(value):
            at = f"{where}[{i}]"
            if not isinstance(entry, dict):
                raise ConfigError(f"{at}: expected a table {{kind = \"…\", pattern = \"…\"}}")
            unknown = set(entry) - {"kind", "pattern"}
            if unknown:
                raise ConfigError(f"{at}.{sorted(unknown)[0]}: unknown key (allowed: kind, pattern)")
            kind_name, pattern = entry.get("kind"), entry.get("pattern")
            if not isinstance(kind_name, str) or not SLUG_RE.match(kind_name):
                raise ConfigError(f"{at}.kind: must be a slug such as \"internal-token\"")
            if not isinstance(pattern, str) or not pattern:
                raise ConfigError(f"{at}.pattern: must be a non-empty regular expression")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"{at}.pattern: not a valid regular expression ({exc})") from None
        value = [dict(entry) for entry in value]
    else:  # pragma: no cover - a schema mistake, not user input
        raise AssertionError(f"unknown kind {kind}")
    if key.kind in ("int", "float") and (
        (key.minimum is not None and value < key.minimum) or (key.maximum is not None and value > key.maximum)
    ):
        raise ConfigError(f"{where}: {value:g} is out of range (allowed {_range_text(key)})")
    if key.check is not None:
        for one in [value] if isinstance(value, str) else value if key.kind == "list[str]" else ():
            problem = key.check(one)
            if problem:
                raise ConfigError(f"{where}: {one!r} {problem}")
    return value


def _fill(where, keys, given, problems=None):
    """Validate the table `given` against `keys`; return it with defaults filled in.

    Without `problems` the first mistake raises ConfigError; with a dict, every mistake is
    recorded there as key → what is wrong (without the `where.key: ` prefix) and the valid
    keys are returned."""
    if not isinstance(given, dict):
        raise ConfigError(f"{where}: expected a table")
    by_name = {key.name: key for key in keys}

    def fault(name, message):
        at = f"{where}.{name}" if where else name
        if problems is None:
            raise ConfigError(f"{at}: {message}")
        problems.setdefault(name, message)

    for name in given:
        if name not in by_name:
            fault(name, f"unknown key (allowed: {', '.join(by_name) or 'none'})")
    out = {}
    for key in keys:
        at = f"{where}.{key.name}" if where else key.name
        if key.name in given:
            try:
                out[key.name] = _check_value(at, key, given[key.name])
            except ConfigError as exc:
                fault(key.name, str(exc).removeprefix(f"{at}: "))
        elif key.required:
            fault(key.name, "required")
        else:
            out[key.name] = _copy(key.default)
    return out


def _copy(value):
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def connector_keys(ctype):
    """Every key a connector of type `ctype` takes: the common ones, then the type's own."""
    return CONNECTOR_COMMON + CONNECTOR_TYPE_KEYS[ctype]


def check_connector(given, where="connector"):
    """One connector's table checked as `[[connectors]]` in jezero.toml is — the one check
    for the file, the web app and the CLI. Returns (the table with every default filled in,
    {}) when it is valid, else (None, {key: what is wrong}) naming every key at fault."""
    if not isinstance(given, dict):
        raise ConfigError(f"{where}: expected a table")
    ctype = given.get("type")
    if ctype is None:
        return None, {"type": f"required (one of {', '.join(CONNECTOR_TYPES)})"}
    if ctype not in CONNECTOR_TYPES:
        return None, {"type": f"{ctype!r} is not one of {', '.join(CONNECTOR_TYPES)}"}
    problems = {}
    out = _fill(where, connector_keys(ctype), given, problems)
    if problems:
        return None, problems
    if out["trust"] is None:
        out["trust"] = default_trust(ctype)
    if out["min_chars"] is None:
        out["min_chars"] = default_min_chars(ctype)
    if out["settle_minutes"] is None:
        out["settle_minutes"] = default_settle_minutes(ctype)
    return out, {}


def check_summarizer(given):
    """A `[summarizer]` table checked as jezero.toml's is when it loads (the same `_fill`):
    (the table with every default filled in, {}) when it is valid, else (None, {key: what is
    wrong}) naming every key at fault. The Settings page and `jezero summarizer set` check
    the file's table with their values laid over it through this."""
    problems = {}
    out = _fill("summarizer", SUMMARIZER_KEYS, given, problems)
    return (None, problems) if problems else (out, {})


def validate_connector(given, where="connector"):
    """`check_connector`, raising ConfigError for the first key at fault (in schema order)
    as `where.key: what is wrong`, with every problem in `.problems`."""
    out, problems = check_connector(given, where)
    if problems:
        key, message = next(iter(problems.items()))
        raise ConfigError(f"{where}.{key}: {message}", problems)
    return out


def text_values(keys, values, *, refused=None, unknown="unknown key"):
    """Values typed into a form or given on the command line, as their keys' kinds:
    ({name: value}, {name: problem}). `keys` maps names to Keys; `refused` maps names that
    may not be given here to why; a name in neither is `unknown (allowed: …)`. A value given
    empty maps to None (its default). The connector forms, the summariser settings and both
    CLIs check input this one way."""
    refused = refused or {}
    typed, faults = {}, {}
    for name, value in (values or {}).items():
        if name in refused:
            faults[name] = refused[name]
            continue
        key = keys.get(name)
        if key is None:
            faults[name] = f"{unknown} (allowed: {', '.join(k for k in keys if k not in refused)})"
            continue
        try:
            typed[name] = text_value(key, value)
        except ConfigError as exc:
            faults[name] = str(exc)
    return typed, faults


def text_value(key, value):
    """A value typed into a form or given on the command line (`--option key=value`), as
    `key`'s kind: whole numbers, true/false, a list from one line per item (or repeated
    options). Values of the right type already pass through. Returns None for an empty
    value (the key's default applies); raises ConfigError (message without the key)."""
    if isinstance(value, list):
        items = [str(v).strip() for v in value if str(v).strip()]
        if key.kind == "list[str]":
            return items or None
        if len(items) > 1:
            raise ConfigError(f"takes one value, got {len(items)}")
        value = items[0] if items else ""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text:
        return None
    if key.kind == "int":
        try:
            return int(text.replace("_", "").replace(",", ""))
        except ValueError:
            raise ConfigError(f"expected a whole number, got {text!r}") from None
    if key.kind == "float":
        try:
            return float(text)
        except ValueError:
            raise ConfigError(f"expected a number, got {text!r}") from None
    if key.kind == "bool":
        lowered = text.lower()
        if lowered in ("true", "yes", "on", "1"):
            return True
        if lowered in ("false", "no", "off", "0"):
            return False
        raise ConfigError(f"expected true or false, got {text!r}")
    if key.kind == "list[str]":
        return [line.strip() for line in text.splitlines() if line.strip()] or None
    return text


def key_help(key):
    """One line about `key` for a form: its meaning, what is allowed and its default — the
    same words as the configuration reference."""
    parts = [key.doc]
    if key.choices:
        parts.append(f"one of {', '.join(key.choices)}")
    elif key.kind in ("int", "float") and (key.minimum is not None or key.maximum is not None):
        parts.append(f"allowed {_range_text(key)}")
    if key.required:
        parts.append("required")
    elif key.default not in (None, [], {}):
        parts.append(f"default {_toml_value(key.default)}")
    return "; ".join(parts)


def _toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"{value:,}".replace(",", "_") if isinstance(value, int) and value >= 10_000 else repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_value(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)
