"""The configuration file: its schema, its validation and its commented default text.

Everything a user tunes lives in one TOML file (docs/design.md "Configuration as data"). The schema is data — every key
with its type, default, allowed range and a one-line description: the sections here, the
`Key` type, its checks, the `[summarizer]` keys and the connectors' options in `library.schema`
(which the connectors and summariser settings kept in the database are checked with too) — and both the validation and the commented file
that `jezero init` writes derive from it, so the two cannot drift. `load()` returns plain
dictionaries with every default filled in.

Unknown keys and out-of-range values raise `ConfigError`, whose message names the key
(`search.candidate_pool`, `connectors[2].settle_minutes`) and what is allowed. Secrets are
never read from the file: it names environment variables that hold them.
"""

import re
import tomllib
from pathlib import Path

from connectors.types import AGENT_TYPES
from library.schema import (
    CONNECTOR_COMMON,
    CONNECTOR_TYPE_KEYS,
    PRIVACY_KEYS,
    SUMMARIZER_KEYS,
    TYPE_DOCS,
    ConfigError,
    Key,
    _fill,
    _range_text,
    _toml_value,
    validate_connector,
)

TOKENIZERS = ("trigram", "unicode61", "ascii", "porter")
TOKENIZER_RE = re.compile(r'^[a-z0-9_]+( ([a-z0-9_]+|"[^"\']*"))*$')


def _tokenizer_problem(value):
    if not TOKENIZER_RE.match(value) or value.split()[0] not in TOKENIZERS:
        return f"must be an FTS5 tokenizer spec starting with one of {', '.join(TOKENIZERS)}"
    return None


def _word_tokenizer_problem(value):
    problem = _tokenizer_problem(value)
    if problem is None and "trigram" in value.split():
        problem = "must be a word tokenizer (unicode61, porter or ascii): a trigram index of every original would be huge"
    return problem


SECTIONS: dict[str, tuple[Key, ...]] = {
    "summarizer": SUMMARIZER_KEYS,
    "storage": (
        Key("tokenizer", "str", "trigram remove_diacritics 1", "FTS5 tokenizer; changing it needs `jezero reindex`",
            check=_tokenizer_problem),
        Key("original_tokenizer", "str", "unicode61 remove_diacritics 2",
            "FTS5 word tokenizer of the original-text and record word indexes; changing it needs `jezero reindex`",
            check=_word_tokenizer_problem),
    ),
    "search": (
        Key("candidate_pool", "int", 200, "the most results a search ranks (pages end there); with "
            "records_only, the rows kept by BM25 before the recency re-rank", minimum=10, maximum=5_000),
        Key("recency_half_life_days", "float", 90.0, "age at which the recency boost halves", minimum=1, maximum=36_500),
        Key("recency_weight", "float", 0.3, "share of the score that recency can take away (0 = pure BM25)", minimum=0, maximum=1),
        Key("default_limit", "int", 10, "search results when the caller asks for no number", minimum=1, maximum=500),
        Key("max_limit", "int", 50, "the most results any read returns", minimum=1, maximum=500),
        Key("record_weight", "float", 1.0, "fused search: weight of the record index's relevance (each index's "
            "relevance is divided by its best hit's first)", minimum=0, maximum=10),
        Key("original_weight", "float", 2.0, "fused search: weight of the original-text index's relevance (chosen "
            "on bench/recall.py)", minimum=0, maximum=10),
        Key("meaning_weight", "float", 1.0, "fused search: the best 50 results are re-ranked by how close what "
            "was said is to the query's meaning (the packaged embedding model): the weight of that closeness, scaled "
            "0 to 1 over them (0 = off; chosen on bench/recall.py)", minimum=0, maximum=10),
        Key("proximity_weight", "float", 1.0, "fused search: the best 10 results are re-ranked by how many of the "
            "query's words what was said holds close together (within a snippet's width): the weight of that share "
            "(0 = off; chosen on bench/recall.py)", minimum=0, maximum=10),
    ),
    "projects": (
        Key("paths", "table[str]", {}, "path prefix → project slug; the longest prefix wins"),
        Key("roots", "list[str]", ["~/src", "~/code", "~/projects", "~/dev", "~/work", "~/git", "~/repos"],
            "folders whose first sub-folder names the project"),
    ),
    "redaction": (
        Key("extra_patterns", "patterns", [], "more secrets to redact: [{kind = \"…\", pattern = \"<regex>\"}]"),
    ),
    "privacy": PRIVACY_KEYS,
}

def _connector(index, given):
    return validate_connector(given, f"connectors[{index}]")


# Keys an earlier version read, with what to do now: named, rather than "unknown key".
REMOVED = {
    ("search", "original_common_share"): "removed: the search is exact at every size and needs no budget "
                                         "(docs/design.md \"Exact at speed\"); delete this line",
}


def validate(raw: dict) -> dict:
    """Validate a parsed TOML document; return the full configuration with defaults."""
    known = (*SECTIONS, "connectors")
    for name in raw:
        if name not in known:
            raise ConfigError(f"{name}: unknown section (allowed: {', '.join(known)})")
    for (section, key), what in REMOVED.items():
        if isinstance(raw.get(section), dict) and key in raw[section]:
            raise ConfigError(f"{section}.{key}: {what}")
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
        if section == "summarizer":
            out += ["Staff can also choose the summariser in the web app (Settings) or with `jezero summarizer "
                    "set KEY=VALUE`: a value set there is kept in the database and overrides this table key by "
                    "key; a key it does not set stays as this file says, and clearing it there puts the file's "
                    "value back. `command` and `api_key_env` are set in this file only. The API key typed into "
                    "Settings is written to `<data folder>/summarizer-api-key` (mode 0600) and used when the "
                    "environment holds none. The worker and the web app pick a change up at their next run, "
                    "without a restart.", ""]
    out += ["## [[connectors]]", "",
            "Connectors come from two places, with one schema (the tables below) and names unique across both:", "",
            "- **`[[connectors]]` tables in this file.** They work as they always have: read when Jezero starts "
            "(restart the web server and the worker after a change), shown read-only in the web app as "
            "\"defined in jezero.toml\".",
            "- **Connectors added in the web app** (Sources → Add connector) **or with `jezero connector add`.** "
            "They live in the database, can be edited, enabled, disabled and removed there (`jezero connector "
            "edit|remove`), and the worker picks up a change at its next check, without a restart.", "",
            "A connector added in the web app or the CLI cannot take a name this file uses. If the file later "
            "defines a name the database also has, the file's connector is used and the other is ignored; "
            "`jezero check`, `jezero serve` and `jezero worker` say so (`jezero.W002`), and so does the Sources "
            "page, until one of them is removed. Removing a connector keeps its items (their source keeps the "
            "name) and forgets its cursors.", "",
            "Options every connector has:", "",
            *_table(CONNECTOR_COMMON), "",
            "`trust` defaults to `external` for `imap` and `own` for the rest; `min_chars` to 400 for agent "
            f"sessions ({', '.join(AGENT_TYPES)}) and 0 otherwise.", ""]
    for ctype, keys in CONNECTOR_TYPE_KEYS.items():
        out += [f"### type = \"{ctype}\"", "", f"Reads {TYPE_DOCS[ctype]}.", ""]
        out += [*_table(keys), ""] if keys else ["No options of its own.", ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(reference_markdown(), end="")
