from pathlib import Path

from django.core.management.base import CommandError

from library.cli import Progress, Verb
from library.ingest import maintenance
from library.ingest.summarize import NotConfigured, configuration


def _ids(text, where):
    try:
        return [int(part) for part in text.replace(",", " ").split()]
    except ValueError:
        raise CommandError(f"{where}: ids must be whole numbers separated by commas or spaces") from None


class Command(Verb):
    help = "Summarise chosen items again from their stored original text with the current settings."

    def add_arguments(self, parser):
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--ids", help="comma-separated item ids")
        group.add_argument("--ids-file", help="a file of item ids")
        group.add_argument("--where", help=maintenance.SELECT_HELP)
        group.add_argument("--project", help="every item of this project")

    def handle(self, *args, **opts):
        ids = None
        if opts["ids"]:
            ids = _ids(opts["ids"], "--ids")
        elif opts["ids_file"]:
            try:
                ids = _ids(Path(opts["ids_file"]).read_text(encoding="utf-8"), opts["ids_file"])
            except OSError as exc:
                raise CommandError(f"{opts['ids_file']}: {exc.strerror}") from None
        queryset = maintenance.select(ids=ids, where=opts["where"], project=opts["project"])
        try:
            summarizer = configuration.build()
        except NotConfigured as exc:
            raise CommandError(str(exc)) from None
        with summarizer, Progress("resummarize") as progress:
            report = maintenance.resummarize(queryset, summarizer, progress=progress)
        if opts["json"]:
            self.emit_json(report.as_dict())
        else:
            self.stdout.write(f"selected {report.selected}, summarised {report.summarised}, failed {report.failed}; "
                              f"tokens {report.input_tokens} in / {report.output_tokens} out")
            for error in report.errors[:20]:
                self.stdout.write(f"  item {error['id']}: {error['error']}")
        if report.failed:
            raise CommandError(f"{report.failed} item(s) failed and kept their old record")
