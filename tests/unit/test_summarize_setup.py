"""docs/design.md "The summariser": choosing a provider, what it refuses to start without, and the retry arithmetic."""

import sys
from datetime import UTC, datetime

import pytest

from jezero_site.config import validate
from library.ingest.summarize import NotConfigured, SummaryRequest, api_key_source, get_summarizer
from library.ingest.summarize.prompt import escape_document, user_message
from library.ingest.summarize.retry import backoff, parse_retry_after


def config(**summarizer):
    return validate({"summarizer": summarizer})["summarizer"]


def test_the_default_is_the_extractive_summarizer():
    assert get_summarizer(config(), env={}).name == "extractive"


@pytest.mark.parametrize("provider", ["anthropic", "openai", "command"])
def test_a_model_provider_without_a_model_refuses_to_start(provider):
    with pytest.raises(NotConfigured, match=f"summarizer.model must be set for provider {provider}"):
        get_summarizer(config(provider=provider, command=["claude", "-p"]), env={"ANTHROPIC_API_KEY": "k"})


@pytest.mark.parametrize(("provider", "variable"), [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")])
def test_a_missing_key_names_the_variable_to_set(provider, variable):
    with pytest.raises(NotConfigured) as caught:
        get_summarizer(config(provider=provider, model="m"), env={})
    assert f"set the environment variable {variable} (or {variable}_FILE)" in str(caught.value)
    assert "summarizer.api_key_env" in str(caught.value)


def test_the_environment_key_wins_then_its_file_then_the_key_saved_in_settings(tmp_path):
    """The order `api_key_source` tries: NAME, NAME_FILE, the Settings page's key file."""
    saved = tmp_path / "summarizer-api-key"
    saved.write_text("sk-saved\n")
    in_file = tmp_path / "secret"
    in_file.write_text("sk-env-file\n")
    anthropic = config(provider="anthropic", model="m")
    assert api_key_source("anthropic", anthropic, {"ANTHROPIC_API_KEY": "sk-env"}, saved) == ("env", "sk-env")
    assert api_key_source("anthropic", anthropic, {"ANTHROPIC_API_KEY_FILE": str(in_file)}, saved) == \
        ("env_file", "sk-env-file")
    assert api_key_source("anthropic", anthropic, {}, saved) == ("file", "sk-saved")
    assert api_key_source("anthropic", anthropic, {}, tmp_path / "none") == (None, None)
    assert api_key_source("extractive", config(), {"ANTHROPIC_API_KEY": "sk-env"}, saved) == (None, None)


def test_a_named_key_variable_that_is_unset_is_an_error_even_for_a_local_server():
    """Only a keyless default falls back to the dummy key; a key the user named must exist."""
    with pytest.raises(NotConfigured, match="OPENROUTER_KEY"):
        get_summarizer(config(provider="openai", model="m", base_url="http://127.0.0.1:11434/v1",
                              api_key_env="OPENROUTER_KEY"), env={})


def test_an_unreadable_key_file_is_named(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(NotConfigured, match="ANTHROPIC_API_KEY_FILE="):
        get_summarizer(config(provider="anthropic", model="m"), env={"ANTHROPIC_API_KEY_FILE": str(missing)})


def test_the_key_comes_from_the_configured_variable():
    with get_summarizer(config(provider="anthropic", model="claude-haiku-4-5", api_key_env="MY_KEY"),
                        env={"MY_KEY": "sk-ant-x"}) as summarizer:
        assert summarizer.name == "anthropic:claude-haiku-4-5"


def test_the_command_provider_needs_a_command_on_path():
    with pytest.raises(NotConfigured, match=r"summarizer\.command must be set"):
        get_summarizer(config(provider="command", model="haiku"), env={})
    with pytest.raises(NotConfigured, match="'no-such-agent-cli' is not an executable on PATH"):
        get_summarizer(config(provider="command", model="haiku", command=["no-such-agent-cli", "-p"]),
                       env={"PATH": "/nonexistent"})
    summarizer = get_summarizer(config(provider="command", model="haiku", command=[sys.executable]), env={})
    assert summarizer.name == "command:haiku"


def test_backoff_doubles_from_two_seconds_plus_jitter():
    assert [backoff(n, lambda low, high: high) for n in range(1, 5)] == [3.0, 5.0, 9.0, 17.0]
    assert [backoff(n, lambda low, high: low) for n in range(1, 5)] == [2.0, 4.0, 8.0, 16.0]


@pytest.mark.parametrize(("headers", "seconds"), [
    ({"retry-after": "3"}, 3.0),
    ({"retry-after": "1.5"}, 1.5),
    ({"retry-after-ms": "2500", "retry-after": "9"}, 2.5),
    ({"retry-after": "Sun, 29 Nov 2026 12:00:30 GMT"}, 30.0),
    ({"retry-after": "Sun, 29 Nov 2026 11:00:00 GMT"}, 0.0),
    ({"retry-after": "soon"}, None),
    ({}, None),
])
def test_retry_after_is_read_as_seconds_or_a_date(headers, seconds):
    assert parse_retry_after(headers, now=datetime(2026, 11, 29, 12, 0, tzinfo=UTC)) == seconds


def test_the_user_message_carries_only_the_lines_that_are_set():
    assert user_message(SummaryRequest(document="user: hi")) == "<document>\nuser: hi\n</document>"
    message = user_message(SummaryRequest(document="d", title_hint="A\nB  (part 1/2)", context="src\tx"))
    assert message.splitlines()[:2] == ["Title hint: A B (part 1/2)", "Context: src x"]


def test_document_tags_inside_the_text_are_defused():
    assert escape_document("a </document> b <DOCUMENT> c </ document>") == \
        "a &lt;/document> b &lt;DOCUMENT> c &lt;/ document>"
