"""Forgetting for good (docs/design.md "Kept out"; docs/security.md "Forget").

A forget works on units — the session, mail thread or note an item came from — because a
connector reads units: forgetting one segment of a session and leaving the rest would bring
it back the next time the session grows. In one transaction it

- deletes every item of each unit (through the model, so both indexes, the item vectors and
  the change log follow: `library.store.forget`; snippets are made from items, exports and
  backups read them);
- leaves a tombstone per unit: its key and the hashes of the segments it had, no text. Every
  connector (`library.ingest.pipeline`), the upload inbox and `jezero import-jsonl` skip a unit
  whose key is tombstoned, or any of whose segments has a tombstoned hash (the same session
  read by another connector), for as long as the tombstone stays — a unit that grows later
  stays forgotten until a person undoes it (`undo`);
- empties what the upload inbox held of the unit (the row stays, without entries or hints,
  so that the device's next upload of the session is refused as already held);
- logs who, when, how and how many (`ForgetLog`, one log line), never what.

The database runs with `PRAGMA secure_delete` and every FTS5 table with its `secure-delete`
option, so deleted text is overwritten, not left in free pages; afterwards the write-ahead log
is checkpointed and truncated (`checkpoint`). The search postings keep only item ids and counts
of common words; a forget makes their refresh due (`store.postings_due`), which drops the ids.
"""

import logging
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.db.models import Q

from library import store
from library.errors import BadInput, NotFound
from library.models import ForgetLog, ForgottenSegment, InboxSession, Item, Tombstone, UnitCursor

logger = logging.getLogger("jezero.forget")

HOWS = ("ids", "source", "project", "unit")


def unit_of(key, source):
    """The unit id of an item's key (`<source>:<unit id>#<first block>` for a segment of a
    session, `<source>:<unit id>` for a one-document unit or an imported record)."""
    rest = key[len(source) + 1:] if key.startswith(f"{source}:") else key
    head, sep, block = rest.rpartition("#")
    return head if sep and block.isdigit() and head else rest


def unit_items(source, unit_id):
    """The items of one unit: its segments' keys lie between `<key>#` and `<key>$` ("$" sorts
    right after "#"), a one-document unit's key is the unit's own."""
    key = f"{source}:{unit_id}"
    return Item.objects.filter(Q(key=key) | Q(key__gte=f"{key}#", key__lt=f"{key}$"), source=source)


def parse_unit(text):
    """`SOURCE:UNIT` → (source, unit id); BadInput when either part is missing."""
    source, sep, unit_id = (text or "").strip().partition(":")
    if not sep or not source or not unit_id:
        raise BadInput(f"unit: {text!r} is not SOURCE:UNIT (the part of an item's key before '#', "
                       "as `jezero show ID --json` prints it)")
    return source, unit_id


@dataclass
class Plan:
    """What a forget would do: the units, and how many items and uploaded sessions they hold."""

    how: str
    units: dict = field(default_factory=dict)    # (source, unit id) → [item ids]
    uploads: int = 0                             # inbox rows that hold text of these units

    @property
    def items(self):
        return sum(len(ids) for ids in self.units.values())

    def as_dict(self):
        return {"how": self.how, "units": len(self.units), "items": self.items, "uploads": self.uploads,
                "sources": sorted({source for source, _unit in self.units})}


def plan(*, ids=None, source=None, project=None, unit=None):
    """What `forget` would remove for exactly one of: item ids, a source, a project, a unit
    (`SOURCE:UNIT`). NotFound when nothing matches."""
    given = {"ids": ids, "source": source, "project": project, "unit": unit}
    chosen = [how for how, value in given.items() if value not in (None, "", [])]
    if len(chosen) != 1:
        raise BadInput("say what to forget: exactly one of ids, source, project, unit")
    how = chosen[0]
    out = Plan(how)
    if how == "unit":
        wanted = [parse_unit(unit)]
    else:
        if how == "ids":
            found = Item.objects.filter(pk__in=ids)
        elif how == "source":
            found = Item.objects.filter(source=source)
        else:
            found = Item.objects.filter(project=project)
        wanted = sorted({(s, unit_of(k, s)) for s, k in found.values_list("source", "key")})
        if how == "ids":
            missing = sorted(set(ids) - set(found.values_list("pk", flat=True)))
            if missing:
                raise NotFound(f"no item {', '.join(map(str, missing))}")
    for pair in wanted:
        out.units[pair] = list(unit_items(*pair).values_list("pk", flat=True))
    if how == "source":   # sessions uploaded to the source that made no item (too small, kept out) hold text too
        for session_id in InboxSession.objects.filter(source=source).exclude(entries=[]).values_list("session_id",
                                                                                                      flat=True):
            out.units.setdefault((source, session_id), [])
    out.uploads = _uploads(out.units).exclude(entries=[]).count()
    if not out.items and not out.uploads:
        raise NotFound(f"nothing to forget: no item or uploaded session matches {how} {given[how]!r}")
    return out


def _uploads(units):
    """The inbox rows of these units: looked up per source in chunks (one OR term per unit would
    pass SQLite's expression depth for a source of a thousand sessions)."""
    by_source = {}
    for source, unit_id in units:
        by_source.setdefault(source, []).append(unit_id)
    pks = []
    for source, ids in by_source.items():
        for start in range(0, len(ids), 500):
            pks += InboxSession.objects.filter(source=source, session_id__in=ids[start:start + 500]) \
                .values_list("pk", flat=True)
    return InboxSession.objects.filter(pk__in=pks)


@dataclass(frozen=True)
class Forgotten:
    units: int
    items: int
    uploads: int
    checkpointed: bool   # the write-ahead log was emptied (False: a reader held it; the next checkpoint does)

    def as_dict(self):
        return {"units": self.units, "items": self.items, "uploads": self.uploads, "checkpointed": self.checkpointed}


def forget(the_plan, *, by, hashes=()):
    """Carry out a Plan (see the module docstring). `by` names who asked (a user name, "cli");
    `hashes` are more segment hashes for the tombstone of a plan of one unit."""
    with transaction.atomic():
        held = dict(Item.objects.filter(pk__in=[i for ids in the_plan.units.values() for i in ids])
                    .values_list("pk", "text_hash"))
        for (source, unit_id), ids in the_plan.units.items():
            tombstone, _ = Tombstone.objects.get_or_create(source=source, unit_id=unit_id)
            known = set(tombstone.segments.values_list("text_hash", flat=True))
            new = sorted(({held[i] for i in ids if held.get(i)} | set(hashes)) - known)
            ForgottenSegment.objects.bulk_create([ForgottenSegment(tombstone=tombstone, text_hash=h) for h in new])
        ids = list(held)
        for start in range(0, len(ids), 500):
            Item.objects.filter(pk__in=ids[start:start + 500]).delete()
        uploads = _uploads(the_plan.units).exclude(entries=[]).update(entries=[], hints={})
        ForgetLog.objects.create(by=by, how=the_plan.how, units=len(the_plan.units), items=len(ids))
        store.note_forgotten()
    logger.info("forget by=%s how=%s units=%d items=%d uploads=%d", by, the_plan.how, len(the_plan.units),
                len(ids), uploads)
    return Forgotten(units=len(the_plan.units), items=len(ids), uploads=uploads, checkpointed=checkpoint())


def remove_unit(source, unit_id):
    """Delete a unit's items without a tombstone (its author kept it out with `jezero: skip`
    after it was stored). Returns how many."""
    ids = list(unit_items(source, unit_id).values_list("pk", flat=True))
    if ids:
        with transaction.atomic():
            Item.objects.filter(pk__in=ids).delete()
            store.note_forgotten()
    return len(ids)


def extend(source, unit_id, hashes):
    """Forget a unit found to hold a forgotten unit's text (the same session under another
    key): its own tombstone, its items and what the inbox held of it go too."""
    the_plan = Plan("unit", units={(source, unit_id): list(unit_items(source, unit_id).values_list("pk", flat=True))})
    return forget(the_plan, by="pipeline", hashes=hashes)


def undo(unit, *, by):
    """Lift a unit's tombstone: the next run (and the next upload) may bring it back. Its
    cursor is dropped, so that the connector reads it again; an emptied upload row is removed
    so that the device's next upload is taken. NotFound when it has none."""
    source, unit_id = parse_unit(unit)
    with transaction.atomic():
        deleted, _ = Tombstone.objects.filter(source=source, unit_id=unit_id).delete()
        if not deleted:
            raise NotFound(f"{source}:{unit_id} is not forgotten")
        UnitCursor.objects.filter(connector=source, unit_id=unit_id).delete()
        InboxSession.objects.filter(source=source, session_id=unit_id, entries=[]).delete()
        ForgetLog.objects.create(by=by, how="undo", units=1, items=0)
    logger.info("forget undone by=%s units=1", by)


def checkpoint():
    """Copy the write-ahead log into the database file and truncate it, so that the text a
    forget overwrote is not left in the log. True when it completed (a long reader, or a
    transaction still open around the forget, holds it back: then a later checkpoint does it)."""
    if connection.in_atomic_block:
        return False
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        busy, _log, _done = cursor.fetchone()
    return not busy


# --- what every reader of units asks --------------------------------------------------------

def is_forgotten(source, unit_id):
    return Tombstone.objects.filter(source=source, unit_id=unit_id).exists()


def forgotten_hashes(hashes):
    """Which of these segment hashes belong to a forgotten unit."""
    hashes = list(hashes)
    return set(ForgottenSegment.objects.filter(text_hash__in=hashes).values_list("text_hash", flat=True)) \
        if hashes else set()


def problems():
    """Tombstoned units that have items again (`jezero check`): one line each."""
    out = []
    for tombstone in Tombstone.objects.iterator():
        count = unit_items(tombstone.source, tombstone.unit_id).count()
        if count:
            out.append(f"forgotten unit {tombstone.key} has {count} item(s): run "
                       f"`jezero forget --unit '{tombstone.key}'` again")
    hashes = ForgottenSegment.objects.values_list("text_hash", flat=True)
    back = list(Item.objects.filter(text_hash__in=hashes).values_list("pk", flat=True)[:21])
    if back:
        shown = ", ".join(map(str, back[:20])) + (", …" if len(back) > 20 else "")
        out.append(f"item(s) {shown} hold a forgotten segment's text: `jezero forget --ids` them")
    return out


def log(limit=50):
    return list(ForgetLog.objects.all()[:limit])
