"""Summarising one segment into one structured record (docs/design.md "The summariser").

The public API is `get_summarizer(config)` → a `Summarizer` whose `summarize(request)`
returns a `Summary` or raises `SummaryError`, plus the data classes in `base`. Writing a
summary onto an item is `library.records.write_record`. The provider modules import their
SDKs only when chosen, so the extractive default needs neither `anthropic` nor `openai` at
import time.
"""

import os
import random
import shutil
import time
from pathlib import Path

from library.ingest.summarize.base import NotConfigured, Record, Summarizer, Summary, SummaryError, SummaryRequest

__all__ = [
    "NotConfigured", "Record", "Summarizer", "Summary", "SummaryError", "SummaryRequest", "api_key_source",
    "get_summarizer", "key_variable",
]

DEFAULT_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
# Local OpenAI-compatible servers (Ollama, llama.cpp) ignore the key, but the SDK wants one.
LOCAL_SERVER_KEY = "not-needed"


def get_summarizer(config, *, sleep=time.sleep, uniform=random.uniform, env=os.environ, key_file=None,
                   max_attempts=None):
    """The summariser that `config` (the `[summarizer]` table, defaults filled) describes.

    `sleep` and `uniform` drive the retry waits (tests record them); `max_attempts` (default:
    the retry policy's 5) of 1 makes each call once, unretried. API keys come from
    `api_key_source`: the environment first (`env`), then `key_file` (the key typed into the
    Settings page). Raises `NotConfigured`, naming the key or variable to set, when the
    provider needs a model, key or command it does not have. Builds a client but makes no
    call. Callers take `config` and `key_file` from `configuration.build()`, which passes both.
    """
    provider = config.get("provider") or "extractive"
    if provider == "extractive":
        from library.ingest.summarize.extractive import ExtractiveSummarizer

        return ExtractiveSummarizer()
    if provider not in ("anthropic", "openai", "command"):
        raise NotConfigured(f"summarizer.provider: unknown provider {provider!r}")
    model = (config.get("model") or "").strip()
    if not model:
        raise NotConfigured(f"summarizer.model must be set for provider {provider}")
    common = {
        "model": model,
        "timeout_seconds": config.get("timeout_seconds", 120),
        "output_language": config.get("output_language"),
        "known_projects": config.get("known_projects") or (),
    }
    if provider == "command":
        return _command(config, common, env)
    api = {**common, "base_url": config.get("base_url"), "sleep": sleep, "uniform": uniform}
    if max_attempts is not None:
        api["max_attempts"] = max_attempts
    api_key = _api_key(provider, config, env, key_file)
    if provider == "anthropic":
        from library.ingest.summarize.anthropic_provider import AnthropicSummarizer

        return AnthropicSummarizer(api_key=api_key, **api)
    from library.ingest.summarize.openai_provider import OpenAISummarizer

    return OpenAISummarizer(api_key=api_key, response_format=config.get("response_format", "json_schema"), **api)


def _command(config, common, env):
    from library.ingest.summarize.command_provider import CommandSummarizer

    command = list(config.get("command") or [])
    if not command:
        raise NotConfigured('summarizer.command must be set for provider command, e.g. ["claude", "-p"]')
    if shutil.which(command[0], path=env.get("PATH")) is None:
        raise NotConfigured(f"summarizer.command: {command[0]!r} is not an executable on PATH")
    return CommandSummarizer(command=command, env=env, **common)


def key_variable(provider, config):
    """The environment variable an API provider's key is read from: `api_key_env`, else the
    provider's usual one (None for a provider without an API key)."""
    if provider not in DEFAULT_KEY_ENV:
        return None
    return config.get("api_key_env") or DEFAULT_KEY_ENV[provider]


def api_key_source(provider, config, env=os.environ, key_file=None):
    """(where the key comes from, the key) for an API provider, in the order they are tried:
    ("env", …) the variable `key_variable()` names; ("env_file", …) the file its `<NAME>_FILE`
    names; ("file", …) `key_file`, the key typed into the Settings page; else (None, None).
    Raises NotConfigured when a `<NAME>_FILE` cannot be read. Never logs the key."""
    name = key_variable(provider, config)
    if name is None:
        return None, None
    value = env.get(name) or None
    if value is not None:
        return "env", value
    if env.get(f"{name}_FILE"):
        path = env[f"{name}_FILE"]
        try:
            value = Path(path).read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            raise NotConfigured(f"{name}_FILE={path!r} cannot be read: {exc.strerror}") from None
        if value is not None:
            return "env_file", value
    if key_file is not None:
        try:
            value = Path(key_file).read_text(encoding="utf-8").strip() or None
        except FileNotFoundError:
            value = None
        except OSError as exc:
            raise NotConfigured(f"the API key saved in the Settings page ({key_file}) cannot be read: "
                                f"{exc.strerror}") from None
        if value is not None:
            return "file", value
    return None, None


def _api_key(provider, config, env, key_file=None):
    """The key (environment, then the Settings page's file); a dummy for a keyless local
    server; else NotConfigured."""
    name = key_variable(provider, config)
    _origin, value = api_key_source(provider, config, env, key_file)
    if value is not None:
        return value
    # Only when the user named no key variable: one they named and left empty is a mistake
    # worth a message, not a silent 401 later.
    if provider == "openai" and config.get("base_url") and not config.get("api_key_env"):
        return LOCAL_SERVER_KEY
    hint = "" if config.get("api_key_env") else " (or name another variable in summarizer.api_key_env)"
    raise NotConfigured(f"set the environment variable {name} (or {name}_FILE) to an API key "
                        f"for provider {provider}{hint}, or type the key into Settings in the web app "
                        "(`jezero summarizer set-key`)")
