"""Huey tasks (thin: ids and primitives in, one service call). Periodic tasks are locked so
that two consumers — or a slow run overlapping the next tick — never run one twice at once."""

import logging

from huey import crontab
from huey.contrib.djhuey import db_periodic_task, db_task, lock_task

from library import store

logger = logging.getLogger(__name__)


@db_periodic_task(crontab(hour="4", minute="17"))
@lock_task("fts-optimize")
def optimize_index():
    """Daily maintenance: merge the FTS5 index into one b-tree (see bench/RESULTS.md for
    what it buys). Idempotent."""
    store.optimize()
    logger.info("fts optimized")


@db_periodic_task(crontab(minute="*/10"))
@lock_task("fts-optimize")
def refresh_postings_if_due():
    """Every 10 minutes: refresh the search postings when a large library has none (an
    upgrade) or 2 % of its items changed since (`store.postings_due`), so that searching is
    as fast as it can be within minutes, not at the next daily run."""
    if store.postings_due():
        store.optimize()
        logger.info("fts optimized postings_were_due=1")


@db_periodic_task(crontab(minute="*/5"))
@lock_task("run-due-connectors")
def run_due_connectors():
    """Every 5 minutes: run each enabled connector whose interval has elapsed since its last
    run. A connector already running (from the CLI, say) is skipped until the next tick."""
    from library.ingest import scheduling

    scheduling.run_due()


@db_periodic_task(crontab(minute="*"))
def heartbeat():
    """The worker is alive: /health reports how long ago this last ran."""
    from library.ingest import scheduling

    scheduling.beat()


@db_task()
def run_job(job_id):
    """Run one job started from the browser (`library.jobs`): an id in, the row refetched;
    a job that is gone or already claimed is skipped quietly."""
    from library import jobs

    jobs.execute(job_id)


@db_periodic_task(crontab(minute="*/5"))
@lock_task("reap-jobs")
def reap_jobs():
    """Every 5 minutes: end the browser jobs whose worker died while running them, and the run
    reports of connector runs whose process died (`pipeline.reap_runs`)."""
    from library import jobs
    from library.ingest import pipeline

    jobs.reap()
    pipeline.reap_runs()


@db_periodic_task(crontab(hour="3", minute="41"))
@lock_task("daily-backup")
def daily_backup():
    """A consistent copy of the library in JEZERO_BACKUP_DIR every night (off when unset)."""
    from library import backup

    target = backup.daily()
    if target:
        logger.info("daily backup path=%s", target)


UPLOAD_RETRY_SECONDS = 30


@db_task()
def ingest_uploads(source):
    """Read the sessions just uploaded to `source` (its upload connector's run), so that a
    device's session is searchable within seconds of its upload rather than at the next
    scheduled run. A run of it already going may have listed its units before this upload
    arrived: try again shortly."""
    from library.ingest import pipeline

    try:
        pipeline.run(source)
    except pipeline.RunRefused as exc:
        if "already running" in str(exc):
            ingest_uploads.schedule((source,), delay=UPLOAD_RETRY_SECONDS)
        else:
            logger.info("upload run refused connector=%s reason=%s", source, exc)
