from pathlib import Path

from django.core.management.base import CommandError

from library import records
from library.cli import Verb


class Command(Verb):
    help = ("Import already-written records, one JSON object per line (key, title, summary, questions, atoms, "
            "project, occurred_at, original, hints…). All lines are checked first: one bad line imports nothing.")

    def add_arguments(self, parser):
        parser.add_argument("file", help="the JSONL file ('-' for stdin)")
        parser.add_argument("--source", required=True, help="the source the records belong to")
        parser.add_argument("--trust", choices=("own", "external"), help="trust of the records (default own)")

    def handle(self, *args, **opts):
        if opts["file"] == "-":
            import sys

            report = records.import_jsonl(sys.stdin, source=opts["source"], trust=opts["trust"])
        else:
            path = Path(opts["file"])
            try:
                with path.open(encoding="utf-8") as fh:
                    report = records.import_jsonl(fh, source=opts["source"], trust=opts["trust"])
            except OSError as exc:
                raise CommandError(f"{path}: {exc.strerror}") from None
            except UnicodeDecodeError:
                raise CommandError(f"{path}: not UTF-8 text") from None
        if opts["json"]:
            self.emit_json(report.as_dict())
        elif not report.errors:
            self.stdout.write(f"imported {report.imported}, updated {report.updated}"
                              + (f", left out {report.forgotten} of forgotten units" if report.forgotten else ""))
        if report.errors:
            if not opts["json"]:
                for error in report.errors:
                    self.stderr.write(f"line {error['line']}: {error['error']}")
            raise CommandError(f"{len(report.errors)} bad line(s); nothing was imported")
