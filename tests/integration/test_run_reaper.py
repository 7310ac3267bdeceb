"""Run reports of dead runs (docs/design.md "Budget and run reports"): a run killed half-way (kill -9, a crash, a restart)
left its report "running" for ever. A live run holds its connector's lock from before its
report is written until after it is saved finished, so a report still "running" whose lock
is free is of a dead run: the reaper (every 5 minutes, with the job reaper) and the
connector's next run mark it failed, saying it was interrupted, and the Sources page shows
that."""

import fcntl
import subprocess
import sys

import pytest
from django.conf import settings as django_settings

from library import tasks
from library.ingest import locks, pipeline
from library.models import RunReport
from tests.conftest import Counting, wait_until
from tests.integration.conftest import configure

pytestmark = pytest.mark.django_db


def outcome(row):
    row.refresh_from_db()
    return row.outcome


def test_a_report_left_running_with_its_lock_free_is_marked_failed_and_the_sources_page_says_so(laptop, staff):
    dead = RunReport.objects.create(connector=laptop, outcome="running")
    finished = RunReport.objects.create(connector=laptop, outcome="ok")
    tasks.reap_jobs.call_local()
    assert outcome(dead) == "failed" and dead.finished_at is not None
    assert dead.errors == [{"unit": "", "error": pipeline.INTERRUPTED}]
    assert outcome(finished) == "ok" and finished.errors == []
    assert pipeline.reap_runs() == 0   # once is enough
    page = staff.get("/sources/").content.decode()
    assert '<span class="badge external">failed</span>' in page
    assert "interrupted: the run stopped before it finished" in page and ">running<" not in page


def test_a_report_whose_run_holds_its_lock_stays_running(settings, tmp_path):
    """The run is alive (here: another open file holds the connector's flock, as a run in
    another process does): its report is left alone, and ended once the lock is free."""
    configure(settings, {"name": "busy", "type": "claude_code", "path": str(tmp_path)})
    alive = RunReport.objects.create(connector="busy", outcome="running")
    with locks.connector_lock("busy"):
        assert pipeline.reap_runs() == 0
        assert outcome(alive) == "running" and alive.errors == []
    assert pipeline.reap_runs() == 1 and outcome(alive) == "failed"


def test_a_run_killed_in_another_process_is_reaped_once_the_process_is_gone(settings, tmp_path):
    """A process holds the lock (a run in the worker); kill -9 frees it, and only then is its
    report marked failed."""
    configure(settings, {"name": "killed", "type": "claude_code", "path": str(tmp_path)})
    report = RunReport.objects.create(connector="killed", outcome="running")
    lock = django_settings.DATA_DIR / "locks" / "connector-killed.lock"
    lock.parent.mkdir(exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", f"import fcntl, sys, time; f = open({str(lock)!r}, 'w'); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert pipeline.reap_runs() == 0 and outcome(report) == "running"
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()

    def free():
        with open(lock, "w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            return True

    wait_until(free, timeout=5, what="the killed process's lock to be released")
    assert pipeline.reap_runs() == 1 and outcome(report) == "failed"


def test_the_next_run_of_the_connector_ends_the_interrupted_report_at_once(laptop):
    dead = RunReport.objects.create(connector=laptop, outcome="running")
    pipeline.run(laptop, summarizer=Counting())
    assert outcome(dead) == "failed" and "interrupted" in dead.errors[0]["error"]
    assert RunReport.objects.exclude(pk=dead.pk).get().outcome == "ok"
