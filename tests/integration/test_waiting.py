"""An empty read says why when sessions are on their way (docs/design.md "Device uploads"): a device's first upload
is not an item until its connector runs, and a new user who searches in between should read
that — on the API, the CLI, the MCP tools' text and the web pages — not a bare "no results"."""

import io
import json
from datetime import UTC, datetime

import pytest
from django.core.management import call_command

from library import search
from library.ingest import pipeline, scheduling
from tests.integration.conftest import configure
from tests.integration.test_api import get, token_for, transcript, upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def uploaded(settings):
    configure(settings, {"name": "uploads-laptop", "type": "upload", "settle_minutes": 0})
    token = token_for("laptop", sources="*", scopes="read,upload", upload_source="uploads-laptop")
    assert upload(token, transcript()).status_code == 201
    return token


def test_every_read_says_an_upload_waits_for_its_run_and_when(uploaded, staff):
    said = "1 uploaded session of uploads-laptop"
    assert "no worker is running" in search.waiting(search.ALL_SOURCES)
    scheduling.beat()
    hint = search.waiting(search.ALL_SOURCES)
    assert hint.startswith("nothing searchable yet") and said in hint and "next run, about" in hint

    timeline = get("/api/v1/timeline", uploaded).json()
    assert timeline["results"] == [] and said in timeline["hint"]
    found = get("/api/v1/search", uploaded, q="WebSearch Haiku").json()
    assert found["results"] == [] and said in found["hint"]
    out = io.StringIO()
    call_command("timeline", stdout=out)
    assert said in out.getvalue()
    out = io.StringIO()
    call_command("search", "WebSearch", "Haiku", stdout=out)
    assert said in out.getvalue()
    assert said in staff.get("/timeline/").content.decode()
    assert said in staff.get("/", {"q": "WebSearch Haiku"}).content.decode()
    assert said in staff.get("/").content.decode()

    pipeline.run("uploads-laptop")
    assert search.waiting(search.ALL_SOURCES) is None
    assert get("/api/v1/timeline", uploaded).json()["hint"] is None


def test_a_caller_who_may_not_read_the_source_is_told_nothing_of_it(uploaded):
    other = token_for("other", sources="mail-*", scopes="read")
    assert get("/api/v1/timeline", other).json() == {"results": [], "hint": None}
    assert search.waiting(["mail-*"]) is None


def test_the_next_run_is_on_the_workers_five_minute_check_after_the_interval(settings):
    configure(settings, {"name": "uploads-laptop", "type": "upload", "interval_minutes": 15})
    config = settings.JEZERO["connectors"][0]
    now = datetime(2026, 12, 2, 14, 1, 30, tzinfo=UTC)
    assert scheduling.next_run(config, now) == datetime(2026, 12, 2, 14, 5, tzinfo=UTC)   # never ran: the next check


def test_an_empty_library_says_how_to_fill_it_on_the_cli():
    out = io.StringIO()
    call_command("timeline", stdout=out)
    assert "no items yet: `jezero run`" in out.getvalue()
    out = io.StringIO()
    call_command("timeline", json=True, stdout=out)
    assert json.loads(out.getvalue()) == {"results": [], "hint": None}


def test_an_upload_is_read_by_the_worker_within_seconds_not_at_the_next_scheduled_run(
        settings, django_capture_on_commit_callbacks):
    from huey.contrib.djhuey import HUEY

    from library import tasks
    from library.models import Item

    configure(settings, {"name": "uploads-laptop", "type": "upload"})   # settle_minutes: 0 by default for uploads
    assert settings.JEZERO["connectors"][0]["settle_minutes"] == 0
    token = token_for("laptop", sources="*", scopes="read,upload", upload_source="uploads-laptop")
    HUEY.storage.flush_schedule()
    with django_capture_on_commit_callbacks(execute=True):
        assert upload(token, transcript()).status_code == 201   # not ended: a session still running (Codex's always)

    scheduled = [task for task in HUEY.scheduled() if task.name.endswith("ingest_uploads")]
    assert [task.args for task in scheduled] == [("uploads-laptop",)]
    assert (scheduled[0].eta - datetime.now(UTC).replace(tzinfo=None)).total_seconds() < 5
    tasks.ingest_uploads.call_local("uploads-laptop")   # what the worker does two seconds later
    assert Item.objects.filter(source="uploads-laptop").exists()
    assert get("/api/v1/timeline", token).json()["hint"] is None
