"""docs/design.md "Jobs and the worker": the periodic task runs connectors whose interval has elapsed, one run per
connector at a time; the worker's heartbeat shows in /health."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jezero_site.config import validate
from library.ingest import locks, scheduling
from library.models import RunReport

pytestmark = pytest.mark.django_db


@pytest.fixture
def connectors(settings, tmp_path):
    settings.JEZERO = {**settings.JEZERO, "connectors": validate({"connectors": [
        {"name": "fast", "type": "claude_code", "path": str(tmp_path), "interval_minutes": 15},
        {"name": "slow", "type": "codex", "path": str(tmp_path), "interval_minutes": 240},
        {"name": "off", "type": "codex", "path": str(tmp_path), "enabled": False},
    ]})["connectors"]}


def test_a_connector_is_due_when_its_interval_has_elapsed(connectors):
    now = timezone.now()
    assert scheduling.due(now) == ["fast", "slow"]  # never ran; disabled ones never are
    RunReport.objects.create(connector="fast", started_at=now - timedelta(minutes=10))
    RunReport.objects.create(connector="slow", started_at=now - timedelta(minutes=100))
    assert scheduling.due(now) == []
    assert scheduling.due(now + timedelta(minutes=5)) == ["fast"]
    assert scheduling.due(now + timedelta(minutes=141)) == ["fast", "slow"]


def test_dry_runs_and_samples_do_not_count_as_runs(connectors):
    now = timezone.now()
    RunReport.objects.create(connector="fast", started_at=now, dry_run=True)
    RunReport.objects.create(connector="fast", started_at=now, sample=3)
    assert "fast" in scheduling.due(now)


def test_the_periodic_task_runs_what_is_due_and_skips_a_busy_connector(connectors):
    from library.tasks import run_due_connectors

    with locks.connector_lock("slow"):
        run_due_connectors()  # Huey immediate mode in tests
    assert list(RunReport.objects.values_list("connector", "outcome")) == [("fast", "ok")]
    outcomes = scheduling.run_due(timezone.now() + timedelta(minutes=20))
    assert outcomes == {"fast": "ok", "slow": "ok"}


def test_the_heartbeat_shows_in_health(client):
    assert client.get("/health").json()["worker_heartbeat_age"] is None
    scheduling.beat(timezone.now() - timedelta(seconds=90))
    body = client.get("/health").json()
    assert 89 <= body["worker_heartbeat_age"] <= 120
    assert body["database"] and body["fts"] and body["status"] == "ok"
