"""Helpers every kind of test shares. `make_item(**overrides)` saves an item through the
model (and so keeps the full-text index in step); `NOW` is a fixed clock for ranking tests;
`real_fixture` finds a real transcript; `texts` and `everything` read a connector's output;
`Counting` is the real extractive summariser, counted; `wait_until` waits for something to
happen instead of sleeping."""

import itertools
import threading
import time
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


@pytest.fixture(autouse=True)
def _transactional_tests_leave_no_index_rows(request):
    """A test with a transactional database ends in Django's flush, which empties the models'
    tables but not the full-text indexes, vectors and postings beside them (`library.store`):
    their rows would stay in the process's test database and change bm25's counts for every
    test after it there (which tests depends on the order pytest-xdist hands out files).
    Deleting the items is not enough: FTS5 does not lower a contentless table's row and token
    counts when a row is deleted. So the items go through the model (out of every index and
    the vectors), then the indexes are made anew, empty, with those counts at 0."""
    yield
    marker = request.node.get_closest_marker("django_db")
    if not ((marker and marker.kwargs.get("transaction")) or "transactional_db" in request.fixturenames):
        return
    from library import store
    from library.models import Item

    Item.objects.all().delete()
    store.rebuild()


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


class Counting:
    """The real extractive summariser, counting (and optionally failing) calls."""

    def __init__(self, fail_when=None):
        from library.ingest.summarize.extractive import ExtractiveSummarizer

        self.inner = ExtractiveSummarizer()
        self.name = self.inner.name
        self.requests = []
        self.fail_when = fail_when
        self.lock = threading.Lock()

    def summarize(self, request):
        from library.ingest.summarize import SummaryError

        with self.lock:
            self.requests.append(request)
        if self.fail_when and self.fail_when in request.document:
            raise SummaryError("the model answered 400 (test)")
        return self.inner.summarize(request)


def wait_until(condition, *, timeout=10.0, what="the condition", ignoring=(), interval=0.05):
    """Call `condition()` until it returns something true and return that, or fail the test
    naming `what` once `timeout` seconds have passed; an exception listed in `ignoring` (a
    server not listening yet) counts as "not yet". For what happens in another thread or
    process (a file appearing, a request arriving, a process ending): the test goes on the
    moment it happens, where a fixed `sleep` would either waste time or be too short."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except ignoring:
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        time.sleep(interval)

