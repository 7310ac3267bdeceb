"""The connectors as people see them (docs/design.md "Connectors", "The summariser", "The web app"): each one's settings, where it is
defined (jezero.toml or the database, see `configured`), cursor state, inbox (for the upload
type) and newest run reports; the uploads waiting in the inbox that no upload connector
reads; and `reset`, which forgets a connector's cursor. `overview()` costs the same few
queries however many connectors, runs and units there are.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, F, Max, Window
from django.db.models.functions import RowNumber

from library import jobs
from library.ingest import configured, locks, pipeline
from library.models import InboxSession, Job, RunReport, UnitCursor

RECENT_RUNS = 5


@dataclass
class SourceState:
    config: dict
    origin: str = configured.FILE                 # configured.FILE (read-only here) or DATABASE
    units_known: int = 0
    cursor_updated_at: datetime | None = None
    inbox_sessions: int | None = None         # upload connectors only
    inbox_latest: datetime | None = None
    runs: list = field(default_factory=list)  # RunReport rows, newest first
    active_job: Job | None = None             # a queued or running run / dry run

    @property
    def name(self):
        return self.config["name"]

    @property
    def location(self):
        """Where it reads (a path or a host), for display; secrets are never in the config."""
        return self.config.get("path") or self.config.get("host") or ""


def page(recent=RECENT_RUNS):
    """What the Sources page shows, from one reading of the connectors: (a SourceState per
    connector in use, [(name, problem)] for those not in use, [Waiting] uploads)."""
    entries = configured.defined()
    uploads = [entry.name for entry in entries if entry.usable and entry.type == "upload"]
    return (overview(recent, entries=entries), [(e.name, e.problem) for e in entries if e.problem],
            waiting_uploads(uploads))


def overview(recent=RECENT_RUNS, only=None, entries=None):
    """A SourceState per connector in use (or only the one named `only`): jezero.toml's in
    file order, then the database's by name. `entries` (`configured.defined()`) saves reading
    them again."""
    entries = configured.defined() if entries is None else entries
    entries = [e for e in entries if e.usable and (only is None or e.name == only)]
    origins = {entry.name: entry.origin for entry in entries}
    configs = [entry.config for entry in entries]
    names = [config["name"] for config in configs]
    cursors = {row["connector"]: row for row in UnitCursor.objects.filter(connector__in=names)
               .values("connector").annotate(units=Count("id"), latest=Max("updated_at"))}
    uploads = [config["name"] for config in configs if config["type"] == "upload"]
    inbox = {}
    if uploads:
        inbox = {row["source"]: row for row in InboxSession.objects.filter(source__in=uploads)
                 .values("source").annotate(sessions=Count("id"), latest=Max("received_at"))}
    runs = defaultdict(list)
    if names:
        ranked = RunReport.objects.filter(connector__in=names).annotate(rank=Window(
            RowNumber(), partition_by=[F("connector")], order_by=[F("started_at").desc(), F("id").desc()]))
        for row in ranked.filter(rank__lte=recent).order_by("connector", "-started_at", "-id"):
            runs[row.connector].append(row)
    active = jobs.active_runs() if names else {}
    states = []
    for config in configs:
        name = config["name"]
        cursor, box = cursors.get(name, {}), inbox.get(name)
        states.append(SourceState(
            config=config, origin=origins[name], units_known=cursor.get("units", 0), cursor_updated_at=cursor.get("latest"),
            inbox_sessions=(box or {}).get("sessions", 0) if name in uploads else None,
            inbox_latest=(box or {}).get("latest"), runs=runs[name], active_job=active.get(name),
        ))
    return states


def state(name):
    """The SourceState of connector `name`, or None when there is no such connector."""
    found = overview(only=name)
    return found[0] if found else None


def upload_names():
    """The names of the upload connectors in use (where devices' uploads become items)."""
    return configured.upload_names()


def names():
    """Every connector's name."""
    return configured.names()


def get(name):
    """The configuration of connector `name`; raises RunRefused when there is none."""
    return pipeline.connector_config(name)


@dataclass(frozen=True)
class Waiting:
    """Uploads in the inbox under a source that no upload connector reads."""

    source: str
    sessions: int
    latest: datetime


def waiting_uploads(upload_names=None):
    """[Waiting] per inbox source that no upload connector reads — uploads that would never
    become items (after their connector left jezero.toml, say; a disabled connector still
    counts as theirs: disabling is a choice). Newest first."""
    names = configured.upload_names() if upload_names is None else upload_names
    rows = (InboxSession.objects.exclude(source__in=names).values("source")
            .annotate(sessions=Count("id"), latest=Max("received_at")).order_by("-latest"))
    return [Waiting(row["source"], row["sessions"], row["latest"]) for row in rows]


def reset(name):
    """Forget connector `name`'s cursor: the next run reads its whole source again, and
    unchanged segments cost no model call. Returns how many unit cursors were forgotten.
    Raises RunRefused for an unknown connector or while it runs. Idempotent."""
    pipeline.connector_config(name)
    with locks.connector_lock(name):
        deleted, _ = UnitCursor.objects.filter(connector=name).delete()
    return deleted
