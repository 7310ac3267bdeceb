"""When connectors run (docs/design.md "Jobs and the worker"), and the worker's heartbeat.

`run_due()` runs every enabled connector whose `interval_minutes` have elapsed since its
last run started; the Huey worker calls it every 5 minutes. `beat()` records that the
worker is alive; `/health` reports the heartbeat's age.
"""

import logging
from collections import Counter
from datetime import UTC, datetime, timedelta

from django.utils import timezone

from library.ingest import configured, pipeline
from library.models import RunReport, StoreState

logger = logging.getLogger(__name__)
HEARTBEAT_KEY = "worker_heartbeat"


def due(now=None):
    """The names of the enabled connectors whose interval has elapsed. The connectors are
    read anew at every call, so the worker runs one added or enabled since it started."""
    now = now or timezone.now()
    names = []
    for config in configured.configs():
        if not config["enabled"]:
            continue
        last = RunReport.objects.filter(connector=config["name"], dry_run=False, sample=None).first()
        if last is None or last.started_at <= now - timedelta(minutes=config["interval_minutes"]):
            names.append(config["name"])
    return names


def run_due(now=None):
    """Run what is due; a refused run (no model configured, already running) is logged and
    skipped. Returns {name: "ok" | "refused: …" | "failed: …"}."""
    outcomes = {}
    for name in due(now):
        try:
            pipeline.run(name)
            outcomes[name] = "ok"
        except pipeline.RunRefused as exc:
            logger.warning("scheduled run refused connector=%s reason=%s", name, exc)
            outcomes[name] = f"refused: {exc}"
        except Exception as exc:  # noqa: BLE001 - one broken connector must not stop the others
            logger.exception("scheduled run failed connector=%s", name)
            outcomes[name] = f"failed: {exc.__class__.__name__}"
    return outcomes


def beat(now=None):
    now = now or timezone.now()
    StoreState.objects.update_or_create(key=HEARTBEAT_KEY, defaults={"value": now.isoformat()})


def heartbeat_age(now=None):
    """Seconds since the worker's last heartbeat, or None when it never beat."""
    row = StoreState.objects.filter(key=HEARTBEAT_KEY).first()
    if row is None:
        return None
    return ((now or timezone.now()) - datetime.fromisoformat(row.value)).total_seconds()


WORKER_TICK = timedelta(minutes=5)   # run_due_connectors' crontab
WORKER_STALE = 180                   # seconds without a heartbeat: the worker is not running


def next_run(config, now=None):
    """When the worker runs this connector next (its interval after the last run started, on
    the worker's next 5-minute check), or None when it is disabled."""
    now = now or timezone.now()
    if not config["enabled"]:
        return None
    last = RunReport.objects.filter(connector=config["name"], dry_run=False, sample=None).first()
    due = now if last is None else max(now, last.started_at + timedelta(minutes=config["interval_minutes"]))
    tick = WORKER_TICK.total_seconds()
    return datetime.fromtimestamp(-(-due.timestamp() // tick) * tick, tz=UTC)


def waiting(allowed_sources, now=None):
    """Why a read finds nothing although something is on its way (one sentence, or None): the
    sessions devices uploaded to the caller's sources that are not items yet, and when their
    connector runs next — or that no worker is running to run it."""
    from library.filters import is_visible
    from library.models import InboxSession, UnitCursor

    now = now or timezone.now()
    rows = [row for row in InboxSession.objects.exclude(entries=[]).values_list("source", "session_id", "version")
            if is_visible(row[0], allowed_sources)]
    if not rows:
        return None
    done = set(UnitCursor.objects.filter(connector__in={source for source, *_ in rows})
               .values_list("connector", "unit_id", "fingerprint"))
    pending = Counter(source for source, session, version in rows if (source, session, str(version)) not in done)
    if not pending:
        return None
    age = heartbeat_age(now)
    parts = []
    for source, count in sorted(pending.items()):
        config = configured.find(source)
        sessions = f"{count} uploaded session{'s' if count > 1 else ''} of {source}"
        when = next_run(config, now) if config else None
        if config is None:
            parts.append(f"{sessions} wait for an upload connector named {source} (`jezero connector add upload "
                         f"{source}`)")
        elif when is None:
            parts.append(f"{sessions} wait: its connector is disabled")
        elif age is None or age > WORKER_STALE:
            parts.append(f"{sessions} wait for a run: no worker is running (`jezero worker`, or `jezero run "
                         f"--connector {source}` now)")
        else:
            parts.append(f"{sessions} become searchable at its next run, about {when:%H:%M} UTC")
    return "nothing searchable yet from what is on its way: " + "; ".join(parts)
