import secrets
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import connection, connections
from django.db.migrations.executor import MigrationExecutor
from django.dispatch import Signal
from huey.contrib.djhuey import HUEY

from library import records, store
from library.access import first_admin
from library.cli import Verb
from library.errors import BadInput
from library.models import Item

DEMO = Path(__file__).resolve().parents[2] / "demo" / "demo.jsonl"

# Sent when init refuses, its database connections closed: the `jezero` entry point then
# removes what this run made before Django started, and the databases since (jezero_site.cli,
# bootstrap.take_back), so that a refused init leaves nothing behind.
refused = Signal()


class Command(Verb):
    help = ("Set up the data folder: config, secret key (both written before this runs), migrations, "
            "an admin user (or, with --setup-page, a one-time code for /setup/), and optionally the bundled "
            "demo library. Idempotent: says 'skipped' for what exists.")
    json_output = False
    system_checks = "all"

    def add_arguments(self, parser):
        parser.add_argument("--demo", action="store_true", help="import the bundled demo library into an empty library")
        parser.add_argument("--admin", default="admin", help="the admin user's name (default admin)")
        parser.add_argument("--setup-page", action="store_true",
                            help="with no admin and no JEZERO_ADMIN_PASSWORD, create no admin: print a one-time "
                                 "setup code for the /setup/ page instead of a password (the container does this)")

    def handle(self, *args, **opts):
        """0. check what can refuse — the admin's name and JEZERO_ADMIN_PASSWORD, when an admin
        is to be made — before anything is written; a refusal removes what this run made
        (the data folder, config, secret key and databases it created: the `refused` signal)
        1. migrations  2. the search postings of a large library that has none (an upgrade)
        3. static files  4. admin user, or a setup code  5. demo library (each skipped when
        done)."""
        given = settings.JEZERO_ADMIN_PASSWORD
        refusal = self._refusal(opts["admin"], given, opts["setup_page"])
        if refusal:
            if refused.has_listeners(Command):   # `jezero init`; not call_command in a test
                connections.close_all()
                HUEY.storage.close()
                refused.send(Command)
            raise BadInput(f"{refusal} Nothing was kept (what this run made is removed again); "
                           "fix it and run init again.")

        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if pending:
            call_command("migrate", interactive=False, verbosity=0)
            self.stdout.write(f"migrations: applied {len(pending)}")
        else:
            self.stdout.write("migrations: skipped (up to date)")

        if store.postings_due():
            started = time.monotonic()
            report = store.optimize()
            self.stdout.write(f"search postings: made for {report['terms']} common term(s) "
                              f"({time.monotonic() - started:.0f} s)")
        else:
            self.stdout.write("search postings: skipped (up to date)")

        if settings.JEZERO_STATIC_ROOT_FROM_ENV:
            self.stdout.write("static files: skipped (collected at build time into JEZERO_STATIC_ROOT)")
        else:
            call_command("collectstatic", interactive=False, verbosity=0)
            self.stdout.write("static files: collected")

        if first_admin.admin_exists():
            first_admin.forget_codes()
            self.stdout.write("admin user: skipped (one exists)")
        elif given is not None:
            first_admin.create_admin(opts["admin"], given)
            self.stdout.write(f"admin user: created {opts['admin']!r}, password from JEZERO_ADMIN_PASSWORD")
        elif opts["setup_page"]:
            code = first_admin.issue_code()
            self.stdout.write(f"admin user: none yet: open {self._setup_url()} and enter the setup code {code} "
                              "(it works until an admin exists, then never again)")
        else:
            password = secrets.token_urlsafe(12)
            first_admin.create_admin(opts["admin"], password)
            self.stdout.write(f"admin user: created {opts['admin']!r}, password {password} (shown once)")

        if opts["demo"]:
            if Item.objects.exists():
                self.stdout.write("demo library: skipped (the library is not empty)")
            else:
                with DEMO.open(encoding="utf-8") as fh:
                    report = records.import_jsonl(fh, source="demo")
                self.stdout.write(f"demo library: imported {report.imported} item(s) into source 'demo'")

    @staticmethod
    def _refusal(name, password, setup_page):
        """Why init refuses to make the admin `name` with `password` (None: generated, or a
        setup code): one line, or "" when it will not refuse (an admin exists already, or
        none is to be made). Reads the database only when its file exists, so that a refusal
        creates none."""
        database = connection.settings_dict["NAME"]
        exists = connection.is_in_memory_db() or Path(database).exists()
        tables = connection.introspection.table_names() if exists else []
        users = get_user_model()
        if users._meta.db_table in tables and first_admin.admin_exists():
            return ""
        if password is None and setup_page:
            return ""
        if users._meta.db_table in tables:
            problems = first_admin.username_problems(name)
        else:   # a new library: nobody has the name yet, only the field's rules apply
            try:
                users._meta.get_field(users.USERNAME_FIELD).clean(name, None)
                problems = []
            except ValidationError as exc:
                problems = list(exc.messages)
        if problems:
            return f"--admin {name!r} is refused: {' '.join(problems)}"
        if password is not None:
            problems = first_admin.password_problems(password, name)
            if problems:
                return f"JEZERO_ADMIN_PASSWORD is refused: {' '.join(problems)}"
        return ""

    @staticmethod
    def _setup_url():
        """Where a person opens the setup page: the first allowed host name, with the port
        `jezero serve` listens on (none behind a TLS proxy, JEZERO_HTTPS)."""
        host = next((h for h in settings.ALLOWED_HOSTS if h != "*" and not h.startswith(".")), "localhost")
        if settings.HTTPS:
            return f"https://{host}/setup/"
        port = settings.JEZERO_BIND.rpartition(":")[2]
        return f"http://{host}:{port}/setup/"
