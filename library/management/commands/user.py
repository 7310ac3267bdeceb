import argparse
import sys

from django.core.management.base import CommandError

from library.access import people
from library.cli import Verb


class Command(Verb):
    help = ("Manage the people who log in to the web app and the sources each may read: add (prints a "
            "generated password once), edit, list. Staff read every source.")

    def add_arguments(self, parser):
        parser.add_argument("action", choices=("add", "edit", "list"))
        parser.add_argument("name", nargs="?", help="the user's name (add, edit)")
        parser.add_argument("--sources", default=None,
                            help="allowed-source globs, comma-separated, e.g. 'agent-*,mail-home' ('*': every source)")
        parser.add_argument("--staff", action=argparse.BooleanOptionalAction, default=None,
                            help="staff read every source and manage the library (edit: --no-staff takes it away)")
        parser.add_argument("--active", action=argparse.BooleanOptionalAction, default=None,
                            help="edit: --no-active deactivates the user (they can no longer log in), --active undoes it")
        parser.add_argument("--password-stdin", action="store_true",
                            help="read the password from the first line of stdin (add: else one is generated and "
                                 "printed once)")

    def handle(self, *args, **opts):
        action, name = opts["action"], opts["name"]
        if action in ("add", "edit") and not name:
            raise CommandError(f"{action} needs the user's name")
        password = self._password() if opts["password_stdin"] else None
        if action == "add":
            if opts["active"] is not None:
                raise CommandError("--active/--no-active is for edit")
            row, generated = people.create(name, sources=opts["sources"] or "", staff=bool(opts["staff"]),
                                           password=password)
            self._show(row, opts["json"], generated=generated)
            return
        if action == "edit":
            if opts["sources"] is None and opts["staff"] is None and opts["active"] is None and password is None:
                raise CommandError("edit: nothing to change; give --sources, --staff/--no-staff, --active/--no-active "
                                   "or --password-stdin")
            row = people.update(name, sources=opts["sources"], staff=opts["staff"], active=opts["active"],
                                password=password)
            self._show(row, opts["json"])
            return
        rows = people.listing()
        if opts["json"]:
            self.emit_json({"users": [row.as_json() for row in rows]})
            return
        for row in rows:
            self.stdout.write(f"{row.name}  {self._reads(row)}{'' if row.active else '  deactivated'}  "
                              f"last login {row.last_login.isoformat() if row.last_login else 'never'}")
        if not rows:
            self.stdout.write("no users yet: jezero user add NAME --sources 'agent-*'")

    def _password(self):
        line = sys.stdin.readline().rstrip("\r\n")
        if not line:
            raise CommandError("--password-stdin: stdin held no password")
        return line

    @staticmethod
    def _reads(row):
        if row.staff:
            return "staff (reads every source)"
        return f"sources {','.join(row.sources)}" if row.sources else "sources - (reads nothing)"

    def _show(self, row, as_json, generated=None):
        if as_json:
            data = row.as_json()
            if generated:
                data["password"] = generated
            self.emit_json(data)
            return
        self.stdout.write(f"user {row.name}: {self._reads(row)}{'' if row.active else '; deactivated'}")
        if generated:
            self.stdout.write(f"password (shown once): {generated}")
