import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from library import records
from library.cli import Verb
from library.models import Item

DEMO = Path(__file__).resolve().parents[2] / "demo" / "demo.jsonl"


class Command(Verb):
    help = ("Set up the data folder: config, secret key (both written before this runs), migrations, "
            "an admin user, and optionally the bundled demo library. Idempotent: says 'skipped' for what exists.")
    json_output = False
    system_checks = "all"

    def add_arguments(self, parser):
        parser.add_argument("--demo", action="store_true", help="import the bundled demo library into an empty library")
        parser.add_argument("--admin", default="admin", help="the admin user's name (default admin)")

    def handle(self, *args, **opts):
        """1. migrations  2. static files  3. admin user  4. demo library (each skipped when done)."""
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if pending:
            call_command("migrate", interactive=False, verbosity=0)
            self.stdout.write(f"migrations: applied {len(pending)}")
        else:
            self.stdout.write("migrations: skipped (up to date)")

        if settings.JEZERO_STATIC_ROOT_FROM_ENV:
            self.stdout.write("static files: skipped (collected at build time into JEZERO_STATIC_ROOT)")
        else:
            call_command("collectstatic", interactive=False, verbosity=0)
            self.stdout.write("static files: collected")

        users = get_user_model()
        if users.objects.filter(is_superuser=True).exists():
            self.stdout.write("admin user: skipped (one exists)")
        else:
            given = settings.JEZERO_ADMIN_PASSWORD
            password = given or secrets.token_urlsafe(12)
            users.objects.create_superuser(opts["admin"], email="", password=password)
            shown = "from JEZERO_ADMIN_PASSWORD" if given else f"{password} (shown once)"
            self.stdout.write(f"admin user: created {opts['admin']!r}, password {shown}")

        if opts["demo"]:
            if Item.objects.exists():
                self.stdout.write("demo library: skipped (the library is not empty)")
            else:
                with DEMO.open(encoding="utf-8") as fh:
                    report = records.import_jsonl(fh, source="demo")
                self.stdout.write(f"demo library: imported {report.imported} item(s) into source 'demo'")
