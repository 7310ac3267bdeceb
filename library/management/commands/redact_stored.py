from library.cli import Progress, Verb
from library.ingest import maintenance, redact


class Command(Verb):
    help = ("Apply the current redaction rules to every stored item (title, summary, questions, atoms, "
            "original, hints) and re-index them.")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="only count the items that would change")

    def handle(self, *args, **opts):
        with Progress("redact-stored") as progress:
            report = maintenance.redact_stored(dry_run=opts["dry_run"], progress=progress)
        if opts["json"]:
            self.emit_json({**report.as_dict(), "rules_version": redact.VERSION})
        else:
            verb = "would change" if opts["dry_run"] else "changed"
            self.stdout.write(f"redaction rules v{redact.VERSION}: checked {report.checked} item(s), {verb} {report.changed}")
