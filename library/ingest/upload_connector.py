"""The `upload` connector type: the sessions devices uploaded to one source, as units, read
from the inbox rows that `library.ingest.inbox.receive` wrote (entries already redacted,
`[role, text, ISO time or None]`; the row's version is the unit's fingerprint).

Kept apart from the inbox so that the pipeline, which reads these units, does not import the
receiving side, which has the worker run the pipeline soon after an upload (through
`library.tasks`).
"""

from datetime import datetime

from connectors.base import Entry, Reading, Unit
from library.models import InboxSession


class InboxConnector:
    """The `upload` connector type: the inbox rows of one source, as units."""

    type_name = "upload"

    def __init__(self, source, **options):
        self.source = source

    def discover(self):
        rows = InboxSession.objects.filter(source=self.source).only("session_id", "version", "received_at", "ended")
        for row in rows.iterator():
            yield Unit(id=row.session_id, ref=row.session_id, fingerprint=str(row.version), modified=row.received_at,
                       path=None, finished=row.ended)

    def read(self, unit):
        row = InboxSession.objects.get(source=self.source, session_id=unit.id)
        entries = [Entry(role=role, text=text, time=datetime.fromisoformat(time) if time else None)
                   for role, text, time in row.entries]
        return Reading(entries=entries, hints=dict(row.hints))
