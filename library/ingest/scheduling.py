"""When connectors run (SPEC §16), and the worker's heartbeat.

`run_due()` runs every enabled connector whose `interval_minutes` have elapsed since its
last run started; the Huey worker calls it every 5 minutes. `beat()` records that the
worker is alive; `/health` reports the heartbeat's age.
"""

import logging
from datetime import timedelta

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
    from datetime import datetime

    row = StoreState.objects.filter(key=HEARTBEAT_KEY).first()
    if row is None:
        return None
    return ((now or timezone.now()) - datetime.fromisoformat(row.value)).total_seconds()
