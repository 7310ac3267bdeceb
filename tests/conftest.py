"""Shared factories. `make_item(**overrides)` saves an item through the model (and so keeps
the full-text index in step); `NOW` is a fixed clock for ranking tests."""

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
_numbers = itertools.count(1)


def make_item(**overrides):
    from library.models import Item

    n = next(_numbers)
    fields = {
        "key": f"agent-test:unit-{n}",
        "source": "agent-test",
        "title": f"Untitled record {n}",
        "summary": "Nothing in particular happened here.",
        "questions": [],
        "atoms": [],
        "project": None,
        "trust": "own",
        "occurred_at": NOW - timedelta(days=1),
    }
    fields.update(overrides)
    item = Item(**fields)
    item.save()
    return item


def days_ago(days):
    return NOW - timedelta(days=days)


@pytest.fixture
def jezero_config(settings):
    """Change configuration keys for one test: `jezero_config("search", candidate_pool=10)`."""

    def change(section, **values):
        config = {name: dict(value) if isinstance(value, dict) else value for name, value in settings.JEZERO.items()}
        config[section] = {**config[section], **values}
        settings.JEZERO = config

    return change


REAL_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "real"


def real_fixture(name):
    """The path of a real public transcript in tests/fixtures/real (byte-identical copies;
    SOURCES.md there says where each came from and its licence). Read it, never change it."""
    path = REAL_FIXTURES / name
    assert path.is_file(), f"{path} is missing"
    return path


def texts(reading):
    """A reading's entries as (role, text) pairs."""
    return [(entry.role, entry.text) for entry in reading.entries]


def everything(reading):
    """All of a reading's text, to assert what never reaches the summariser."""
    return "\n".join(entry.text for entry in reading.entries)
