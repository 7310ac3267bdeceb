"""The configuration file: its schema, its validation and its commented default text.

Everything a user tunes lives in one TOML file (SPEC §17). This module owns the schema as
data — every key with its type, default, allowed range and a one-line description — and
derives from it both the validation and the commented file that `jezero init` writes, so
the two cannot drift. `load()` returns plain dictionaries with every default filled in.

Unknown keys and out-of-range values raise `ConfigError`, whose message names the key
(`search.candidate_pool`, `connectors[2].settle_minutes`) and what is allowed. Secrets are
never read from the file: it names environment variables that hold them.
"""

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connectors.types import AGENT_TYPES
from connectors.types import TYPES as CONNECTOR_TYPES
from library.vocabulary import SLUG_RE, SOURCE_NAME_RE

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TOKENIZERS = ("trigram", "unicode61", "ascii", "porter")
TOKENIZER_RE = re.compile(r'^[a-z0-9_]+( ([a-z0-9_]+|"[^"\']*"))*$')



class ConfigError(ValueError):
    """The configuration cannot be used; the message names the key and what is allowed."""


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


def _tokenizer_problem(value):
    if not TOKENIZER_RE.match(value) or value.split()[0] not in TOKENIZERS:
        return f"must be an FTS5 tokenizer spec starting with one of {', '.join(TOKENIZERS)}"
    return None


def _word_tokenizer_problem(value):
    problem = _tokenizer_problem(value)
    if problem is None and "trigram" in value.split():
        problem = "must be a word tokenizer (unicode61, porter or ascii): a trigram index of every original would be huge"
    return problem


def _slug_problem(value):
    return None if SLUG_RE.match(value) else "must be a slug: lowercase letters, digits, '.', '_', '-'"


def _env_problem(value):
    return None if ENV_NAME_RE.match(value) else "must be the name of an environment variable"


def _date_problem(value):
    return None if re.match(r"^\d{4}-\d{2}-\d{2}$", value) else "must be a date, YYYY-MM-DD"


SECTIONS: dict[str, tuple[Key, ...]] = {
    "summarizer": (
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
    ),
    "storage": (
        Key("tokenizer", "str", "trigram remove_diacritics 1", "FTS5 tokenizer; changing it needs `jezero reindex`",
            check=_tokenizer_problem),
        Key("original_tokenizer", "str", "unicode61 remove_diacritics 2",
            "FTS5 word tokenizer of the original-text index; changing it needs `jezero reindex`",
            check=_word_tokenizer_problem),
    ),
    "search": (
        Key("candidate_pool", "int", 200, "rows kept by BM25 before the recency re-rank", minimum=10, maximum=5_000),
        Key("recency_half_life_days", "float", 90.0, "age at which the recency boost halves", minimum=1, maximum=36_500),
        Key("recency_weight", "float", 0.3, "share of the score that recency can take away (0 = pure BM25)", minimum=0, maximum=1),
        Key("default_limit", "int", 10, "search results when the caller asks for no number", minimum=1, maximum=500),
        Key("max_limit", "int", 50, "the most results any read returns", minimum=1, maximum=500),
        Key("record_weight", "float", 1.0, "fused search: weight of the record index's relevance (each index's "
            "relevance is divided by its best hit's first)", minimum=0, maximum=10),
        Key("original_weight", "float", 2.0, "fused search: weight of the original-text index's relevance (chosen "
            "on bench/recall.py)", minimum=0, maximum=10),
    ),
    "projects": (
        Key("paths", "table[str]", {}, "path prefix → project slug; the longest prefix wins"),
        Key("roots", "list[str]", ["~/src", "~/code", "~/projects", "~/dev", "~/work", "~/git", "~/repos"],
            "folders whose first sub-folder names the project"),
    ),
    "redaction": (
        Key("extra_patterns", "patterns", [], "more secrets to redact: [{kind = \"…\", pattern = \"<regex>\"}]"),
    ),
}

# Options every connector has; `min_chars` and `trust` defaults depend on the type.
CONNECTOR_COMMON = (
    Key("name", "str", None, "unique; becomes the items' source", required=True,
        check=lambda v: None if SOURCE_NAME_RE.match(v) else "must be letters, digits, '.', '_', '-' (no ':' or spaces)"),
    Key("type", "enum", None, "what it reads", choices=CONNECTOR_TYPES, required=True),
    Key("trust", "enum", None, "own, or external for third-party text (default: by type)", choices=("own", "external")),
    Key("interval_minutes", "int", 15, "run every this many minutes", minimum=1, maximum=10_080),
    Key("settle_minutes", "int", 30, "leave units younger than this for a later run", minimum=0, maximum=10_080),
    Key("min_chars", "int", None, "skip units with fewer characters (default 400 for agent sessions, else 0)",
        minimum=0, maximum=10_000_000),
    Key("user_prompt_markers", "list[str]", [], "a user block containing one of these is dropped"),
    Key("user_prompt_drop_lines", "list[str]", [], "lines of user blocks containing one of these are removed"),
    Key("project", "str", None, "a fixed project for everything this connector reads", nullable=True, check=_slug_problem),
    Key("enabled", "bool", True, "false keeps the connector configured but never run"),
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


def default_trust(connector_type):
    return "external" if connector_type == "imap" else "own"


def default_min_chars(connector_type):
    return 400 if connector_type in AGENT_TYPES else 0


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
    if key.check is not None and isinstance(value, str):
        problem = key.check(value)
        if problem:
            raise ConfigError(f"{where}: {value!r} {problem}")
    return value


def _fill(where, keys, given):
    """Validate the table `given` against `keys`; return it with defaults filled in."""
    if not isinstance(given, dict):
        raise ConfigError(f"{where}: expected a table")
    by_name = {key.name: key for key in keys}
    for name in given:
        if name not in by_name:
            allowed = ", ".join(by_name) or "none"
            raise ConfigError(f"{where}.{name}: unknown key (allowed: {allowed})" if where else
                              f"{name}: unknown key (allowed: {allowed})")
    out = {}
    for key in keys:
        at = f"{where}.{key.name}" if where else key.name
        if key.name in given:
            out[key.name] = _check_value(at, key, given[key.name])
        elif key.required:
            raise ConfigError(f"{at}: required")
        else:
            out[key.name] = _copy(key.default)
    return out


def _copy(value):
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def _connector(index, given):
    where = f"connectors[{index}]"
    if not isinstance(given, dict):
        raise ConfigError(f"{where}: expected a table")
    ctype = given.get("type")
    if ctype is None:
        raise ConfigError(f"{where}.type: required (one of {', '.join(CONNECTOR_TYPES)})")
    if ctype not in CONNECTOR_TYPES:
        raise ConfigError(f"{where}.type: {ctype!r} is not one of {', '.join(CONNECTOR_TYPES)}")
    out = _fill(where, CONNECTOR_COMMON + CONNECTOR_TYPE_KEYS[ctype], given)
    if out["trust"] is None:
        out["trust"] = default_trust(ctype)
    if out["min_chars"] is None:
        out["min_chars"] = default_min_chars(ctype)
    return out


def validate(raw: dict) -> dict:
    """Validate a parsed TOML document; return the full configuration with defaults."""
    known = (*SECTIONS, "connectors")
    for name in raw:
        if name not in known:
            raise ConfigError(f"{name}: unknown section (allowed: {', '.join(known)})")
    config = {name: _fill(name, keys, raw.get(name, {})) for name, keys in SECTIONS.items()}
    search = config["search"]
    if search["default_limit"] > search["max_limit"]:
        raise ConfigError(f"search.default_limit: {search['default_limit']} is above "
                          f"search.max_limit ({search['max_limit']})")
    if search["record_weight"] + search["original_weight"] <= 0:
        raise ConfigError("search.original_weight: record_weight and original_weight cannot both be 0")
    connectors = raw.get("connectors", [])
    if not isinstance(connectors, list):
        raise ConfigError("connectors: write each one as a [[connectors]] table")
    config["connectors"] = [_connector(i, c) for i, c in enumerate(connectors)]
    seen = set()
    for i, connector in enumerate(config["connectors"]):
        if connector["name"] in seen:
            raise ConfigError(f"connectors[{i}].name: {connector['name']!r} is used by another connector")
        seen.add(connector["name"])
    return config


def load(path: Path) -> dict:
    """Read and validate the file at `path`; a missing file means every default."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return validate({})
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    try:
        return validate(raw)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


# --- the commented default file ----------------------------------------------------------

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


def _key_line(key, indent=""):
    allowed = ""
    if key.choices:
        allowed = f" ({' | '.join(key.choices)})"
    elif key.kind in ("int", "float") and (key.minimum is not None or key.maximum is not None):
        allowed = f" ({_range_text(key)})"
    value = "…" if key.default is None else _toml_value(key.default)
    return f"{indent}# {key.name} = {value}    # {key.doc}{allowed}"


def default_text(connectors=()) -> str:
    """The commented configuration that `jezero init` writes: every key at its default,
    then the given connectors ({name, type, path}) as live [[connectors]] tables."""
    out = [
        "# Jezero configuration. Every key is shown commented out at its default;",
        "# uncomment and change what you need. Unknown keys are errors.",
        "# Secrets never go here: name the environment variable that holds them.",
        "",
    ]
    for section, keys in SECTIONS.items():
        out.append(f"[{section}]")
        out.extend(_key_line(key) for key in keys)
        out.append("")
    out.append("# Connectors: one [[connectors]] table each. Options every connector has:")
    out.extend(_key_line(key) for key in CONNECTOR_COMMON)
    for ctype, keys in CONNECTOR_TYPE_KEYS.items():
        if keys:
            out.append(f"# type = \"{ctype}\" adds:")
            out.extend(_key_line(key, "#  ") for key in keys)
    out += [
        "#",
        "# [[connectors]]",
        "# name = \"agent-claude-laptop\"",
        "# type = \"claude_code\"",
        "# path = \"~/.claude/projects\"",
        "",
    ]
    for connector in connectors:
        out.append("[[connectors]]")
        out.extend(f"{key} = {_toml_value(value)}" for key, value in connector.items())
        out.append("")
    return "\n".join(out)


# --- the configuration reference (docs/configuration.md) --------------------------------------

def _cell(value):
    return "—" if value is None or value == [] or value == {} else f"`{_toml_value(value)}`"


def _allowed(key):
    if key.choices:
        return " \\| ".join(f"`{choice}`" for choice in key.choices)
    if key.kind in ("int", "float") and (key.minimum is not None or key.maximum is not None):
        return _range_text(key)
    return {"list[str]": "list of strings", "table[str]": "table: path = \"slug\"", "bool": "true \\| false",
            "patterns": "list of {kind, pattern}"}.get(key.kind, "string")


def _table(keys):
    rows = ["| key | default | allowed | meaning |", "|---|---|---|---|"]
    for key in keys:
        default = "required" if key.required else _cell(key.default)
        rows.append(f"| `{key.name}` | {default} | {_allowed(key)} | {key.doc} |")
    return rows


def reference_markdown():
    """The configuration reference, generated from the schema the loader validates."""
    out = ["# Configuration reference", "",
           "Generated from `jezero_site/config.py` (`python -m jezero_site.config > docs/configuration.md`); "
           "a test fails when this file and the schema disagree.", "",
           "The file is `$JEZERO_CONFIG` (default `<data folder>/jezero.toml`). Unknown keys and out-of-range "
           "values stop Jezero with a message naming the key. Secrets never go in the file: it names the "
           "environment variables that hold them.", ""]
    for section, keys in SECTIONS.items():
        out += [f"## [{section}]", "", *_table(keys), ""]
    out += ["## [[connectors]]", "", "One table per connector. Options every connector has:", "",
            *_table(CONNECTOR_COMMON), "",
            "`trust` defaults to `external` for `imap` and `own` for the rest; `min_chars` to 400 for agent "
            f"sessions ({', '.join(AGENT_TYPES)}) and 0 otherwise.", ""]
    for ctype, keys in CONNECTOR_TYPE_KEYS.items():
        if keys:
            out += [f"### type = \"{ctype}\"", "", *_table(keys), ""]
        else:
            out += [f"### type = \"{ctype}\"", "", "No options of its own.", ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(reference_markdown(), end="")
