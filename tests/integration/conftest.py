"""Helpers the integration tests share: a folder of real Claude Code sessions and the
`agent-laptop` connector over it, the settings a test changes (connectors, summariser), and
the people every page is tried with (a staff user and a plain user; the anonymous visitor
is the bare `client`)."""

import json
import os
import shutil
import time

import pytest

from jezero_site.config import validate
from tests.conftest import REAL_FIXTURES
from tests.fakes.model_server import ModelServer

# Three real sessions (tests/fixtures/real/SOURCES.md), by the session id Claude Code names them with.
SESSIONS = {"claude_6.jsonl": "03eb5929-52b3-4b13-ada3-b93ae35806b8",
            "claude_7.jsonl": "2b4ed4c0-b905-41de-9238-273db3ec737a",
            "claude_10.jsonl": "3680252d-d4e3-4416-bddd-8f5b5b4fdb7f"}
TWO_DAYS = 2 * 86_400
# A GitHub token's shape: the redactor must catch it wherever it appears.
SECRET = "ghp_aB3dE5gH7jK9mN1pQ3rS5tU7vW9xY1zA2bC4"


def age(path, seconds=TWO_DAYS):
    """Set a file's modification time `seconds` back, so a connector finds it settled."""
    old = time.time() - seconds
    os.utime(path, (old, old))


def sessions_folder(tmp_path):
    """A Claude Code projects folder holding three real sessions, modified two days ago (settled)."""
    project = tmp_path / "projects" / "-src-experiments"
    project.mkdir(parents=True)
    for name, session in SESSIONS.items():
        target = project / f"{session}.jsonl"
        shutil.copyfile(REAL_FIXTURES / name, target)
        age(target)
    return tmp_path / "projects"


def configure(settings, *connectors):
    """Replace the configured connectors (each a dict as in jezero.toml, validated as at start-up)."""
    settings.JEZERO = {**settings.JEZERO, "connectors": validate({"connectors": list(connectors)})["connectors"]}


def summarizer(settings, **values):
    """Change keys of the `[summarizer]` configuration for one test."""
    settings.JEZERO = {**settings.JEZERO, "summarizer": {**settings.JEZERO["summarizer"], **values}}


@pytest.fixture
def laptop(settings, tmp_path):
    """A configured claude_code connector `agent-laptop` over real sessions."""
    configure(settings, {"name": "agent-laptop", "type": "claude_code", "path": str(sessions_folder(tmp_path))})
    return "agent-laptop"


@pytest.fixture
def people(django_user_model):
    """A staff user (ana) and a plain user (tomas) who reads every source, as every user from
    before migration 0015 does. Tests log them in with `force_login`; they have no password,
    because hashing one costs a good part of a second."""
    from library.models import Person

    staff = django_user_model.objects.create_user("ana", is_staff=True)
    plain = django_user_model.objects.create_user("tomas")
    Person.objects.create(user=plain, sources=["*"])
    return {"staff": staff, "plain": plain}


@pytest.fixture
def staff(people):
    """A browser (Django's test client) logged in as the staff user."""
    from django.test import Client

    browser = Client()
    browser.force_login(people["staff"])
    return browser


@pytest.fixture
def server():
    """A fake model API on loopback (Anthropic and OpenAI shapes), for the real SDKs."""
    fake = ModelServer().start()
    yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def _no_search_caches_across_tests():
    """The search keeps, per process, what it read of the postings and the items
    (`library.postings`, `library.catalog`); each test rolls its database back, which a
    running server never does: start every test without them."""
    from library import catalog, postings, search

    postings.forget_cached_bases()
    catalog.forget_versions()
    search.forget_script_counts()
    yield


RECORD = {"title": "A session worth keeping", "summary": "Someone did something and it worked.",
          "questions": ["What was done?"], "atoms": [{"kind": "fact", "text": "it worked"}], "project": None}


@pytest.fixture
def model(monkeypatch):
    """A fake OpenAI-compatible model server on loopback answering RECORD to every call (up to
    200), with OPENAI_API_KEY set; `model.requests` holds what the real SDK sent."""
    from tests.fakes.model_server import openai_reply

    server = ModelServer().start()
    server.script(*[openai_reply(json.dumps(RECORD)) for _ in range(200)])
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    yield server
    server.stop()
