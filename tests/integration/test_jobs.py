"""docs/design.md "The web app", "Jobs and the worker": long work started from the browser runs as a Huey task (immediate in tests)
on a `Job` row — enqueued after commit, with throttled progress, ending done with the
service's report or failed with the error."""

import pytest

from library import jobs, search
from library.errors import BadInput
from library.ingest.pipeline import RunRefused
from library.ingest.summarize import NotConfigured
from library.models import Item, Job, RunReport, UnitCursor
from tests.conftest import make_item
from tests.integration.conftest import SECRET, configure, summarizer

pytestmark = pytest.mark.django_db


@pytest.fixture
def started(django_capture_on_commit_callbacks):
    """Start a job as the browser does and let the transaction commit (the task runs immediately)."""

    def start(kind, params=None, user=None):
        with django_capture_on_commit_callbacks(execute=True):
            job = jobs.start(kind, params, user)
        return Job.objects.get(pk=job.pk)

    return start


def test_a_run_job_stores_items_and_ends_done_with_the_report(laptop, started):
    job = started("run", {"connector": laptop})
    assert job.status == "done" and job.error == ""
    assert job.result["connector"] == "agent-laptop" and job.result["units_stored"] == 2
    assert job.result["units_too_small"] == 1
    assert job.done == job.total == 3
    assert job.started_at <= job.finished_at
    assert Item.objects.filter(source="agent-laptop").count() == job.result["segments_summarised"] > 0
    assert UnitCursor.objects.filter(connector="agent-laptop").count() == 3
    assert RunReport.objects.get().outcome == "ok"


def test_a_dry_run_job_counts_documents_characters_and_tokens_and_spends_nothing(laptop, started):
    job = started("dry_run", {"connector": laptop})
    assert job.status == "done" and job.result["dry_run"] is True
    assert job.result["documents"] >= 2
    assert job.result["characters"] > 1_000
    assert job.result["estimated_tokens"] == pytest.approx(job.result["characters"] / 4, abs=job.result["documents"])
    assert job.result["model_calls"] == 0
    assert not Item.objects.exists() and not UnitCursor.objects.exists()


def test_a_job_is_enqueued_only_when_the_transaction_commits(laptop, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = jobs.start("dry_run", {"connector": laptop})
    assert len(callbacks) == 1
    assert Job.objects.get(pk=job.pk).status == "queued"  # nothing ran before the commit
    callbacks[0]()
    assert Job.objects.get(pk=job.pk).status == "done"


def test_a_job_that_is_gone_or_already_claimed_is_skipped_quietly(laptop):
    assert jobs.execute(123_456) is None
    job = Job.objects.create(kind="dry_run", params={"connector": laptop}, status="running")
    assert jobs.execute(job.pk) is None
    job.refresh_from_db()
    assert job.status == "running" and job.result is None
    assert not RunReport.objects.exists()  # the work did not run twice


def test_a_refused_run_ends_failed_with_the_reason(settings, tmp_path, started):
    configure(settings, {"name": "off", "type": "claude_code", "path": str(tmp_path), "enabled": False})
    job = started("run", {"connector": "off"})
    assert job.status == "failed"
    assert "disabled" in job.error and job.result is None


def test_an_unexpected_error_ends_failed_without_leaking_its_message(monkeypatch, started):
    def broken(params, progress):
        raise RuntimeError(f"token {SECRET} in a traceback")

    monkeypatch.setitem(jobs.RUNNERS, "retag", broken)
    job = started("retag")
    assert job.status == "failed" and job.finished_at is not None
    assert "RuntimeError" in job.error and SECRET not in job.error


def test_start_refuses_bad_requests_before_storing_anything(settings, laptop):
    with pytest.raises(RunRefused, match="no connector named 'nope'"):
        jobs.start("run", {"connector": "nope"})
    with pytest.raises(BadInput, match="choose the items"):
        jobs.start("resummarize", {})
    with pytest.raises(BadInput, match="no items match"):
        jobs.start("resummarize", {"ids": [999]})
    with pytest.raises(BadInput, match="summarizer="):
        jobs.start("resummarize", {"where": "title=x"})
    make_item()
    summarizer(settings, provider="anthropic", model=None)
    with pytest.raises(NotConfigured, match="summarizer.model must be set"):
        jobs.start("resummarize", {"where": "source=agent-test"})
    with pytest.raises(NotConfigured, match="summarizer.model must be set"):
        jobs.start("run", {"connector": laptop})
    assert not Job.objects.exists()


def test_progress_is_written_at_most_every_half_second_and_completed_at_the_end():
    job = Job.objects.create(kind="retag")
    now = [100.0]
    progress = jobs.Progress(job.pk, clock=lambda: now[0])
    for done, at in ((1, 100.0), (2, 100.1), (3, 100.4), (4, 100.6), (5, 100.7)):
        now[0] = at
        progress(done, 10)
    job.refresh_from_db()
    assert progress.writes == 2
    assert (job.done, job.total) == (4, 10)  # the call at 100.6; the one at 100.7 waits for the next write


def test_a_job_whose_worker_died_ends_failed_and_its_page_says_why(client, django_user_model):
    """Huey does not run a lost task again: without the reaper the job would say "running"
    forever. A job still showing signs of life, and finished jobs, are left alone."""
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    dead = Job.objects.create(kind="run", params={"connector": "x"}, status="running", started_at=now - timedelta(hours=2),
                              alive_at=now - timedelta(minutes=31))
    busy = Job.objects.create(kind="retag", status="running", started_at=now - timedelta(hours=2),
                              alive_at=now - timedelta(minutes=2))
    old = Job.objects.create(kind="retag", status="running", started_at=now - timedelta(hours=1))  # from before alive_at
    done = Job.objects.create(kind="retag", status="done", started_at=now - timedelta(days=1),
                              alive_at=now - timedelta(days=1), finished_at=now - timedelta(days=1))
    assert jobs.reap(now=now) == 2
    assert jobs.reap(now=now) == 0
    statuses = {job.pk: (job.status, job.error) for job in Job.objects.all()}
    assert statuses[busy.pk] == ("running", "") and statuses[done.pk] == ("done", "")
    for job in (dead, old):
        status, error = statuses[job.pk]
        assert status == "failed" and "the worker stopped while this job was running" in error
    staff = django_user_model.objects.create_user("ana", password="a-long-password-1", is_staff=True)
    client.force_login(staff)
    page = client.get(f"/admin-tools/jobs/{dead.pk}/").content.decode()
    assert "<strong>Failed</strong>: the worker stopped while this job was running" in page


def test_progress_is_a_sign_of_life(laptop, started):
    job = started("dry_run", {"connector": "agent-laptop"})
    assert job.status == "done" and job.alive_at is not None and job.alive_at >= job.started_at


def test_a_finished_job_shows_all_its_work_done(started):
    for n in range(3):
        make_item(hints={"git_remote": f"git@github.com:ana/repo-{n}.git"})
    job = started("retag")
    assert (job.done, job.total) == (3, 3)


def test_a_retag_job_reports_the_changed_items(started):
    tagged = make_item(hints={"git_remote": "git@github.com:ana/shop-site.git"}, project=None)
    same = make_item(hints={}, project=None)
    job = started("retag")
    assert job.status == "done" and job.result["changed"] == 1 and job.result["ids"] == [tagged.pk]
    assert Item.objects.get(pk=tagged.pk).project == "shop-site"
    assert search.timeline(allowed_sources=search.ALL_SOURCES, project="shop-site")[0].id == tagged.pk
    assert Item.objects.get(pk=same.pk).project is None


def test_redact_preview_counts_and_changes_nothing_then_apply_redacts(started):
    leaky = make_item(title="Rotated the deploy token", summary=f"The old token {SECRET} was in the env file.")
    make_item(summary="Nothing secret here.")
    preview = started("redact_preview")
    assert preview.status == "done" and (preview.result["checked"], preview.result["changed"]) == (2, 1)
    assert SECRET in Item.objects.get(pk=leaky.pk).summary

    applied = started("redact_stored")
    assert applied.status == "done" and applied.result["changed"] == 1
    assert "[REDACTED:github-token]" in Item.objects.get(pk=leaky.pk).summary
    assert search.search("aB3dE5gH7jK9", allowed_sources=search.ALL_SOURCES).hits == []


def test_a_resummarize_job_rewrites_items_in_place(started):
    item = make_item(title="Old title", summarizer="anthropic:old", original=(
        "user: The nightly backup to the NAS fails with rsync error 23, please find out why.\n\n"
        "assistant: The exclude file lists a folder that no longer exists; removed it and the backup passes."))
    job = started("resummarize", {"ids": [item.pk]})
    assert job.status == "done"
    assert (job.result["selected"], job.result["summarised"], job.result["failed"]) == (1, 1, 0)
    item.refresh_from_db()
    assert item.summarizer == "extractive" and item.title != "Old title"
    assert "backup" in item.title.lower()
