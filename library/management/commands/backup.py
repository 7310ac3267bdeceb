from library import backup
from library.cli import Verb


class Command(Verb):
    help = ("Write a consistent copy of the library to PATH while Jezero keeps running (SQLite's online backup). "
            "Restore: stop Jezero, put the copy in place as <data>/jezero.sqlite3, start, run `jezero check`.")

    def add_arguments(self, parser):
        parser.add_argument("path", help="the new file, e.g. /backups/jezero-2026-11-29.sqlite3")
        parser.add_argument("--force", action="store_true", help="overwrite PATH if it exists")

    def handle(self, *args, **opts):
        size = backup.make_backup(opts["path"], overwrite=opts["force"])
        if opts["json"]:
            self.emit_json({"path": opts["path"], "bytes": size})
        else:
            self.stdout.write(f"backup written to {opts['path']} ({size:,} bytes)")
