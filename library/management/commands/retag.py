from library.cli import Progress, Verb
from library.ingest import maintenance


class Command(Verb):
    help = "Apply the project rules again to every stored item, from its stored hints (no model)."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="only count what would change")

    def handle(self, *args, **opts):
        with Progress("retag") as progress:
            report = maintenance.retag(dry_run=opts["dry_run"], progress=progress)
        if opts["json"]:
            self.emit_json(report.as_dict())
        else:
            verb = "would change" if opts["dry_run"] else "changed"
            self.stdout.write(f"checked {report.checked} item(s), {verb} the project of {report.changed}")
