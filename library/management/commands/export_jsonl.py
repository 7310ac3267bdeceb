from library import records
from library.cli import Verb


class Command(Verb):
    help = "Write items as JSONL (the format import-jsonl reads) to stdout or --output."
    json_output = False

    def add_arguments(self, parser):
        parser.add_argument("--source", help="only this source")
        parser.add_argument("--output", "-o", help="write to this file instead of stdout")

    def handle(self, *args, **opts):
        if opts["output"]:
            with open(opts["output"], "w", encoding="utf-8") as fh:
                count = records.export_jsonl(fh, source=opts["source"])
            self.stderr.write(f"exported {count} item(s) to {opts['output']}")
        else:
            records.export_jsonl(self.stdout, source=opts["source"])
