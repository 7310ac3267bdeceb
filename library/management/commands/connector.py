from django.conf import settings
from django.core.management.base import CommandError

from library.cli import Verb
from library.ingest import pipeline
from library.models import RunReport, UnitCursor


class Command(Verb):
    help = "List connectors with their state, or reset one's cursor (the next run reads its source again)."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=("list", "reset"))
        parser.add_argument("name", nargs="?", help="the connector (for reset)")

    def handle(self, *args, **opts):
        if opts["action"] == "reset":
            if not opts["name"]:
                raise CommandError("reset needs the connector's name")
            pipeline.connector_config(opts["name"])
            deleted, _ = UnitCursor.objects.filter(connector=opts["name"]).delete()
            if opts["json"]:
                self.emit_json({"connector": opts["name"], "forgotten_units": deleted})
            else:
                self.stdout.write(f"{opts['name']}: forgot {deleted} unit cursor(s); the next run reads the source "
                                  "again (unchanged segments cost no model call)")
            return
        rows = []
        for config in settings.JEZERO["connectors"]:
            last = RunReport.objects.filter(connector=config["name"]).first()
            rows.append({
                "name": config["name"], "type": config["type"], "trust": config["trust"],
                "enabled": config["enabled"], "interval_minutes": config["interval_minutes"],
                "units_known": UnitCursor.objects.filter(connector=config["name"]).count(),
                "last_run": last.started_at.isoformat() if last else None,
                "last_outcome": last.outcome if last else None,
            })
        if opts["json"]:
            self.emit_json({"connectors": rows})
            return
        if not rows:
            self.stdout.write("no connectors configured")
        for row in rows:
            self.stdout.write(f"{row['name']}  {row['type']}  trust {row['trust']}  every {row['interval_minutes']} min"
                              f"{'' if row['enabled'] else '  (disabled)'}  units {row['units_known']}  "
                              f"last run {row['last_run'] or 'never'} {row['last_outcome'] or ''}")
