from django.core import checks as django_checks
from django.core.management.base import CommandError

from library import forget, store
from library.cli import Verb


class Command(Verb):
    help = ("Verify the library: Django's system checks, items and the three full-text indexes and the item vectors "
            "agree (count and content), FTS5 integrity-check, each index's tokenizer and the vectors' model, no "
            "forgotten unit has items. Exits 1 on any difference.")
    system_checks = "none"  # run below, reported together with the index check

    def handle(self, *args, **opts):
        # Errors, and Jezero's own warnings (a connector that is not used, jezero.W002).
        system = [str(m) for m in django_checks.run_checks()
                  if m.level >= django_checks.ERROR or (m.id or "").startswith("jezero.")]
        report = store.check()
        problems = system + report.problems + forget.problems()
        if opts["json"]:
            self.emit_json({**report.as_dict(), "ok": not problems, "problems": problems})
        else:
            self.stdout.write(f"items: {report.items}  index rows: {report.indexed}  tokenizer: {report.tokenizer!r}")
            for part in (report.words, report.original):
                self.stdout.write(f"{part.label} rows: {part.rows}  tokenizer: {part.tokenizer!r}")
            self.stdout.write(f"{report.meaning.label}: {report.meaning.rows}  model: {report.meaning.tokenizer!r}")
            for problem in problems:
                self.stdout.write(f"PROBLEM: {problem}")
            if not problems:
                self.stdout.write("ok")
        if problems:
            raise CommandError(f"{len(problems)} problem(s) found")
