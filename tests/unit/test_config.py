"""docs/design.md "Configuration as data": the configuration is validated whole; mistakes name the key and the range."""

import tomllib

import pytest

from jezero_site import config
from jezero_site.config import validate
from library.schema import ConfigError


def test_the_default_file_is_valid_and_means_every_default():
    assert validate(tomllib.loads(config.default_text())) == validate({})


def test_a_key_an_earlier_version_read_is_named_with_what_to_do():
    with pytest.raises(ConfigError, match=r"search\.original_common_share: removed: the search is exact .* delete"):
        validate({"search": {"original_common_share": 0.05}})


def test_defaults_match_the_spec():
    conf = validate({})
    assert conf["search"] == {"candidate_pool": 200, "recency_half_life_days": 90.0, "recency_weight": 0.3,
                              "default_limit": 10, "max_limit": 50, "record_weight": 1.0, "original_weight": 2.0,
                              "meaning_weight": 1.0, "proximity_weight": 1.0}
    assert conf["storage"]["tokenizer"] == "trigram remove_diacritics 1"
    assert conf["storage"]["original_tokenizer"] == "unicode61 remove_diacritics 2"
    assert conf["summarizer"]["provider"] == "extractive"
    assert conf["summarizer"]["max_input_chars"] == 60_000
    assert conf["summarizer"]["timeout_seconds"] == 120
    assert conf["summarizer"]["max_concurrency"] == 4
    assert conf["projects"]["roots"][0] == "~/src"


@pytest.mark.parametrize(("raw", "message"), [
    ({"search": {"candidate_pol": 100}}, "search.candidate_pol: unknown key"),
    ({"serch": {}}, "serch: unknown section"),
    ({"search": {"candidate_pool": 5}}, "search.candidate_pool: 5 is out of range (allowed 10–5,000)"),
    ({"search": {"candidate_pool": 9000}}, "search.candidate_pool: 9000 is out of range"),
    ({"search": {"recency_weight": 1.5}}, "search.recency_weight: 1.5 is out of range (allowed 0–1)"),
    ({"search": {"candidate_pool": True}}, "search.candidate_pool: expected an integer"),
    ({"search": {"default_limit": 60}}, "search.default_limit: 60 is above search.max_limit"),
    ({"summarizer": {"max_input_chars": 999}}, "summarizer.max_input_chars: 999 is out of range (allowed 1,000–"),
    ({"summarizer": {"provider": "gpt"}}, "summarizer.provider: 'gpt' is not one of"),
    ({"summarizer": {"api_key_env": "not a name"}}, "summarizer.api_key_env"),
    ({"storage": {"tokenizer": "trigram'); DROP TABLE items; --"}}, "storage.tokenizer"),
    ({"storage": {"tokenizer": "simple"}}, "storage.tokenizer: 'simple' must be an FTS5 tokenizer"),
    ({"projects": {"paths": {"/home/ana/src/shop": "Shop Site"}}}, "projects.paths.'/home/ana/src/shop'"),
    ({"redaction": {"extra_patterns": [{"kind": "corp-token", "pattern": "corp_[a-z"}]}},
     "redaction.extra_patterns[0].pattern: not a valid regular expression"),
])
def test_a_mistake_is_an_error_naming_the_key(raw, message):
    with pytest.raises(ConfigError) as caught:
        validate(raw)
    assert message in str(caught.value)


def test_connector_defaults_depend_on_the_type():
    conf = validate({"connectors": [
        {"name": "agent-laptop", "type": "claude_code"},
        {"name": "mail-home", "type": "imap", "host": "imap.example.org", "user": "ana", "password_env": "MAIL_PW"},
    ]})
    laptop, mail = conf["connectors"]
    assert (laptop["trust"], laptop["min_chars"], laptop["interval_minutes"], laptop["settle_minutes"]) == ("own", 400, 15, 30)
    assert laptop["path"] == "~/.claude/projects"
    assert (mail["trust"], mail["min_chars"], mail["port"], mail["folders"]) == ("external", 0, 993, ["INBOX"])


@pytest.mark.parametrize(("connector", "message"), [
    ({"name": "x", "type": "claude_code", "colour": "red"}, "connectors[0].colour: unknown key"),
    ({"name": "x", "type": "claude_code", "host": "a"}, "connectors[0].host: unknown key"),
    ({"name": "x", "type": "fax"}, "connectors[0].type: 'fax' is not one of"),
    ({"type": "codex"}, "connectors[0].name: required"),
    ({"name": "has:colon", "type": "codex"}, "connectors[0].name"),
    ({"name": "x", "type": "imap", "host": "h", "user": "u"}, "connectors[0].password_env: required"),
    ({"name": "x", "type": "codex", "settle_minutes": -1}, "connectors[0].settle_minutes: -1 is out of range"),
    ({"name": "x", "type": "codex", "project": "Not A Slug"}, "connectors[0].project"),
])
def test_connector_mistakes_name_the_connector_and_option(connector, message):
    with pytest.raises(ConfigError) as caught:
        validate({"connectors": [connector]})
    assert message in str(caught.value)


def test_connector_names_are_unique():
    with pytest.raises(ConfigError, match=r"connectors\[1\].name: 'a' is used by another connector"):
        validate({"connectors": [{"name": "a", "type": "codex"}, {"name": "a", "type": "pi"}]})


def test_a_bad_file_names_itself(tmp_path):
    path = tmp_path / "jezero.toml"
    path.write_text("[search]\ncandidate_pool = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        config.load(path)
    path.write_text("[search]\nmax_limit = 0\n")
    with pytest.raises(ConfigError, match=r"jezero.toml: search.max_limit: 0 is out of range"):
        config.load(path)


def test_a_missing_file_means_the_defaults(tmp_path):
    assert config.load(tmp_path / "absent.toml") == validate({})


def test_the_configuration_reference_in_docs_matches_the_schema():
    """docs/configuration.md is generated from the schema: regenerate it when this fails
    (`python -m jezero_site.config > docs/configuration.md`)."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
    assert path.read_text(encoding="utf-8") == config.reference_markdown()
    for section, keys in config.SECTIONS.items():
        assert all(f"| `{key.name}` |" in path.read_text() for key in keys), section
