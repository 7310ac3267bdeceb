"""Long work started from the browser (docs/design.md "The web app", "Jobs and the worker"): a connector run or dry run, retag,
redact-stored (and its preview), re-summarise, the summariser's test call. Each is one `Job` row and one Huey task.

- `start(kind, params, user)` checks at once what can be checked (the connector exists, the
  summariser has its model, the selection is not empty), creates the row and enqueues
  `tasks.run_job(job_id)` only after the transaction commits, so the worker always finds it.
- `execute(job_id)` is the task's body: it refetches the row, returns quietly when it is
  gone or already claimed, runs the one service call with a progress callback (written to
  the row at most every half second, with the time as a sign of life) and stores the
  service's report, or the error.
- `reap()` (a periodic task) ends a running job that has shown no sign of life for
  REAP_AFTER: its worker died with it (Huey does not run a lost task again), and without
  this it would say "running" forever.

`params` hold primitives only (a connector name, item ids, a filter), never model instances.
"""

import logging
import time
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from library.errors import BadInput, LibraryError, NotFound
from library.ingest import maintenance, pipeline
from library.ingest.summarize import configuration as summarizer_configuration
from library.models import Job

logger = logging.getLogger(__name__)

Kind, Status = Job.Kind, Job.Status
PROGRESS_EVERY = 0.5          # seconds between progress writes
# A running job with no progress for this long lost its worker. Generous: one unit's model
# calls may take minutes (5 attempts of up to `timeout_seconds` each) between two progress calls.
REAP_AFTER = timedelta(minutes=30)
REAPED = ("the worker stopped while this job was running (no progress for {minutes} minutes); "
          "nothing it had not finished was stored — start it again")
RECENT = 10
_SELECTIONS = ("ids", "where", "project")   # how re-summarise chooses its items (maintenance.select)


# --- starting ---------------------------------------------------------------------------------

def check_summarizer():
    """Raise NotConfigured (its message says what to set) when the configured summariser
    cannot be built; builds it and closes it again, with no model call."""
    summarizer_configuration.check()


def _selection(params):
    chosen = {name: params[name] for name in _SELECTIONS if params.get(name) not in (None, "", [])}
    if len(chosen) != 1:
        raise BadInput(f"choose the items: by ids, or by one filter ({maintenance.SELECT_HELP})")
    return chosen


def _check(kind, params):
    if kind in (Kind.RUN, Kind.DRY_RUN):
        pipeline.connector_config(params.get("connector") or "")
        if kind == Kind.RUN:
            check_summarizer()
    elif kind == Kind.RESUMMARIZE:
        if not maintenance.select(**_selection(params)).exists():
            raise BadInput("no items match that choice")
        check_summarizer()
    elif kind == Kind.SUMMARIZER_TEST:
        check_summarizer()
    elif kind not in Kind.values:
        raise BadInput(f"unknown job kind {kind!r}")


def start(kind, params=None, user=None):
    """Create a job and enqueue it after commit; returns the Job (status queued).

    Raises, before anything is stored: RunRefused (unknown connector), NotConfigured (the
    summariser lacks its model, key or command), BadInput (no or an empty selection).
    """
    params = dict(params or {})
    _check(kind, params)
    with transaction.atomic():
        job = Job.objects.create(kind=kind, params=params,
                                 created_by=user if user is not None and user.is_authenticated else None)
        transaction.on_commit(lambda: _enqueue(job.pk))
    logger.info("job queued id=%s kind=%s", job.pk, kind)
    return job


def _enqueue(job_id):
    from library import tasks

    tasks.run_job(job_id)


# --- reading ----------------------------------------------------------------------------------

def get(job_id):
    """The Job with that id; raises NotFound."""
    job = Job.objects.select_related("created_by").filter(pk=job_id).first()
    if job is None:
        raise NotFound(f"no job {job_id}")
    return job


def recent(limit=RECENT):
    """The newest jobs, newest first."""
    return list(Job.objects.select_related("created_by")[:limit])


def active_runs():
    """{connector name: its newest unfinished run or dry-run job}."""
    active = {}
    for job in Job.objects.filter(kind__in=(Kind.RUN, Kind.DRY_RUN), status__in=(Status.QUEUED, Status.RUNNING)):
        active.setdefault(job.params.get("connector"), job)
    return active


# --- running ----------------------------------------------------------------------------------

class Progress:
    """A `(done, total)` callback that writes to the job's row at most every `every` seconds
    (the first call at once); the last values are kept for the final write."""

    def __init__(self, job_id, *, every=PROGRESS_EVERY, clock=time.monotonic):
        self.job_id, self.every, self.clock = job_id, every, clock
        self.done = self.total = 0
        self.last_write = None
        self.writes = 0

    def __call__(self, done, total):
        self.done, self.total = done, total
        now = self.clock()
        if self.last_write is not None and now - self.last_write < self.every:
            return
        self.last_write = now
        self.writes += 1
        Job.objects.filter(pk=self.job_id).update(done=done, total=total, alive_at=timezone.now())


def _run(params, progress):
    return pipeline.run(params["connector"], progress=progress)


def _dry_run(params, progress):
    return pipeline.run(params["connector"], dry_run=True, progress=progress)


def _retag(params, progress):
    return maintenance.retag(progress=progress)


def _redact_preview(params, progress):
    return maintenance.redact_stored(dry_run=True, progress=progress)


def _redact_stored(params, progress):
    return maintenance.redact_stored(progress=progress)


def _resummarize(params, progress):
    queryset = maintenance.select(**_selection(params))
    with summarizer_configuration.build() as summarizer:
        return maintenance.resummarize(queryset, summarizer, progress=progress)


def _summarizer_test(params, progress):
    return summarizer_configuration.test()


RUNNERS = {
    Kind.RUN: _run, Kind.DRY_RUN: _dry_run, Kind.RETAG: _retag, Kind.REDACT_PREVIEW: _redact_preview,
    Kind.REDACT_STORED: _redact_stored, Kind.RESUMMARIZE: _resummarize, Kind.SUMMARIZER_TEST: _summarizer_test,
}


def execute(job_id, *, clock=time.monotonic):
    """Run a queued job to its end; returns the finished Job, or None when the row is gone or
    another worker has claimed it (so a task delivered twice runs the work once)."""
    started = timezone.now()
    claimed = Job.objects.filter(pk=job_id, status=Status.QUEUED).update(status=Status.RUNNING, started_at=started,
                                                                           alive_at=started)
    if not claimed:
        return None
    job = Job.objects.get(pk=job_id)
    progress = Progress(job_id, clock=clock)
    status, result, error = Status.FAILED, None, ""
    try:
        report = RUNNERS[job.kind](job.params, progress)
        status, result = Status.DONE, report.as_dict()
    except LibraryError as exc:
        error = str(exc)
    except Exception as exc:  # noqa: BLE001 - whatever broke, the job must end visibly failed
        logger.exception("job failed id=%s kind=%s", job_id, job.kind)
        error = f"unexpected error ({exc.__class__.__name__}); the worker's log has the details"
    total = max(progress.total, progress.done)
    Job.objects.filter(pk=job_id).update(status=status, result=result, error=error, finished_at=timezone.now(),
                                         done=total if status == Status.DONE else progress.done, total=total)
    logger.info("job finished id=%s kind=%s status=%s", job_id, job.kind, status)
    return Job.objects.get(pk=job_id)


def reap(*, now=None, after=REAP_AFTER):
    """Mark failed every running job with no sign of life for `after` (its worker died), with
    an error that says so. Returns how many it ended. Idempotent."""
    now = now or timezone.now()
    minutes = int(after.total_seconds() // 60)
    silent_since = now - after
    stale = Job.objects.filter(Q(alive_at__lt=silent_since) | Q(alive_at__isnull=True, started_at__lt=silent_since),
                               status=Status.RUNNING)
    ended = stale.update(status=Status.FAILED, finished_at=now, error=REAPED.format(minutes=minutes))
    if ended:
        logger.warning("jobs reaped count=%d", ended)
    return ended
