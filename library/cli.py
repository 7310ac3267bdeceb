"""What every `jezero` verb shares: `--json`, one-line errors, and the text renderings.

Verbs parse their arguments, call one service (search, later, import…) and render the
result; domain errors become one line on stderr and exit code 1 (usage errors stay with
argparse: exit 2).
"""

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from library.errors import LibraryError


class Verb(BaseCommand):
    """Base for Jezero's management commands."""

    json_output = True  # whether the verb takes --json
    # Django's generic options stay accepted but out of the verbs' help and usage lines.
    suppressed_base_arguments = {"--version", "--settings", "--pythonpath", "--traceback", "--no-color",
                                 "--force-color", "--skip-checks", "--verbosity"}

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand.replace("_", "-"), **kwargs)
        if self.json_output:
            parser.add_argument("--json", action="store_true", help="print JSON instead of text")
        return parser

    # Verbs check only what Jezero needs (the SQLite and its tokenizer, `jezero.E001`):
    # Django's full system checks import every URL and app module, which costs a read verb
    # more than its query. `serve`, `worker` and `init` ask for all of them.
    requires_system_checks = []
    system_checks = "jezero"  # "jezero", "all", or "none" (a verb that runs them itself)

    def execute(self, *args, **options):
        if not options.get("skip_checks") and self.system_checks != "none":
            self.check(tags=None if self.system_checks == "all" else ["jezero"])
        try:
            return super().execute(*args, **{**options, "skip_checks": True})
        except LibraryError as exc:
            raise CommandError(str(exc)) from None

    def run_from_argv(self, argv):
        self._called_from_command_line = True
        parser = self.create_parser(argv[0], argv[1])
        options = parser.parse_args(argv[2:])
        cmd_options = vars(options)
        args = cmd_options.pop("args", ())
        try:
            self.execute(*args, **cmd_options)
        except CommandError as exc:
            self.stderr.write(f"jezero {argv[1].replace('_', '-')}: {exc}")
            sys.exit(exc.returncode)

    def emit_json(self, data):
        self.stdout.write(json.dumps(data, ensure_ascii=False, indent=2))


def hit_line(hit):
    """`[id] YYYY-MM-DD  project  source  title` (+ score when ranked)."""
    score = f"  ({hit.score:.3f})" if hit.score is not None else ""
    external = "  [external]" if hit.trust == "external" else ""
    return (f"[{hit.id}] {hit.occurred_at:%Y-%m-%d}  {hit.project or '-'}  {hit.source}  "
            f"{hit.title}{external}{score}")


def later_text(result):
    lines = [result.heading]
    lines += [hit_line(hit) for hit in result.hits] or ["(nothing newer)"]
    return "\n".join(lines)


class Progress:
    """A progress callback `(done, total)`: a tqdm bar on a terminal, plain lines (every
    10 %) otherwise. Use as a context manager so the bar is closed."""

    def __init__(self, label, stream=None):
        self.label = label
        self.stream = stream or sys.stderr
        self.bar = None
        self.last_tenth = -1

    def __call__(self, done, total):
        if self.stream.isatty():
            if self.bar is None:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=self.label, file=self.stream, leave=False)
            self.bar.total = total
            self.bar.n = done
            self.bar.refresh()
            return
        tenth = (10 * done // total) if total else 10
        if tenth != self.last_tenth:
            self.last_tenth = tenth
            self.stream.write(f"{self.label}: {done}/{total}\n")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
