from django.core.management.base import CommandError

from library import forget
from library.cli import Verb
from library.models import Tombstone


def _ids(text):
    try:
        ids = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise CommandError(f"--ids: {text!r} is not a comma-separated list of item ids") from None
    if not ids:
        raise CommandError("--ids: no item id given")
    return ids


class Command(Verb):
    help = ("Forget for good: delete every item of the units (sessions, threads, notes) the items, source, project or "
            "unit given came from, from both indexes and the item vectors, leave a tombstone (the unit's key and its "
            "segments' hashes, no text) so that no connector or upload brings it back, and overwrite the text in the "
            "database file. --dry-run says what would go. --undo --unit KEY lifts a tombstone; --list lists them.")

    def add_arguments(self, parser):
        what = parser.add_mutually_exclusive_group()
        what.add_argument("--ids", help="item ids, comma-separated: their whole units are forgotten")
        what.add_argument("--source", help="every item of this source (and every session uploaded to it)")
        what.add_argument("--project", help="every item of this project")
        what.add_argument("--unit", help="one unit, SOURCE:UNIT (an item's key without its '#N')")
        what.add_argument("--list", action="store_true", help="list the forgotten units")
        parser.add_argument("--dry-run", action="store_true", help="say what would be forgotten; change nothing")
        parser.add_argument("--undo", action="store_true", help="with --unit: lift its tombstone (the next run of its "
                            "connector, or the device's next upload, brings it back)")

    def handle(self, *args, **opts):
        if opts["list"]:
            return self.list(opts)
        if opts["undo"]:
            if not opts["unit"]:
                raise CommandError("--undo needs --unit SOURCE:UNIT (`jezero forget --list` lists them)")
            if not opts["dry_run"]:
                forget.undo(opts["unit"], by="cli")
            self.say(opts, {"undone": opts["unit"], "dry_run": opts["dry_run"]},
                     f"{opts['unit']}: {'would be ' if opts['dry_run'] else ''}no longer forgotten; the next run of its "
                     "connector (or the device's next upload) brings it back")
            return
        plan = forget.plan(ids=_ids(opts["ids"]) if opts["ids"] else None, source=opts["source"],
                           project=opts["project"], unit=opts["unit"])
        what = (f"{plan.items} item(s) of {len(plan.units)} unit(s)"
                + (f" and {plan.uploads} uploaded session(s)" if plan.uploads else ""))
        if opts["dry_run"]:
            self.say(opts, {**plan.as_dict(), "dry_run": True}, f"would forget {what}")
            return
        done = forget.forget(plan, by="cli")
        self.say(opts, {**plan.as_dict(), **done.as_dict(), "dry_run": False},
                 f"forgot {what}; tombstones keep them from coming back"
                 + ("" if done.checkpointed else " (a reader holds the write-ahead log: the forgotten text leaves it "
                                                 "at the next checkpoint)"))

    def say(self, opts, data, line):
        if opts["json"]:
            self.emit_json(data)
        else:
            self.stdout.write(line)

    def list(self, opts):
        rows = [{"unit": t.key, "forgotten_at": t.forgotten_at.isoformat(), "hashes": t.segments.count()}
                for t in Tombstone.objects.order_by("-forgotten_at", "-id")]
        if opts["json"]:
            self.emit_json({"forgotten": rows})
            return
        for row in rows:
            self.stdout.write(f"{row['forgotten_at'][:16]}  {row['unit']}  ({row['hashes']} segment hash(es))")
        if not rows:
            self.stdout.write("nothing is forgotten")
