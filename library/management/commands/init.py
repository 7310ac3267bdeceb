import secrets
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from library import records, store
from library.access import first_admin
from library.cli import Verb
from library.errors import BadInput
from library.models import Item

DEMO = Path(__file__).resolve().parents[2] / "demo" / "demo.jsonl"


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
        """0. check JEZERO_ADMIN_PASSWORD (a refused one stops here, before the database is
        touched)  1. migrations  2. the search postings of a large library that has none (an
        upgrade)  3. static files  4. admin user, or a setup code  5. demo library (each
        skipped when done)."""
        users = get_user_model()
        given = settings.JEZERO_ADMIN_PASSWORD
        if given is not None and not self._admin_exists_before_migrating(users):
            problems = first_admin.password_problems(given, opts["admin"])
            if problems:
                raise BadInput(f"JEZERO_ADMIN_PASSWORD is refused: {' '.join(problems)} "
                               "Nothing was created; set a better one and run init again.")

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
    def _admin_exists_before_migrating(users):
        """Whether a superuser exists, asked before migrating (a new database has no user table)."""
        if users._meta.db_table not in connection.introspection.table_names():
            return False
        return first_admin.admin_exists()

    @staticmethod
    def _setup_url():
        """Where a person opens the setup page: the first allowed host name, with the port
        `jezero serve` listens on (none behind a TLS proxy, JEZERO_HTTPS)."""
        host = next((h for h in settings.ALLOWED_HOSTS if h != "*" and not h.startswith(".")), "localhost")
        if settings.HTTPS:
            return f"https://{host}/setup/"
        port = settings.JEZERO_BIND.rpartition(":")[2]
        return f"http://{host}:{port}/setup/"
