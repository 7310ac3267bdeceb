import os
import sys

from django.conf import settings

from library.cli import Verb


def gunicorn_argv(bind, workers):
    """The server command: gunicorn with its native ASGI worker (MCP needs ASGI)."""
    return [sys.executable, "-m", "gunicorn", "jezero_site.asgi:application", "--worker-class", "asgi",
            "--bind", bind, "--workers", str(workers), "--no-control-socket", "--access-logfile", "-",
            "--graceful-timeout", "20"]


class Command(Verb):
    help = "Serve the web app, the JSON API and MCP (gunicorn with ASGI workers)."
    json_output = False
    system_checks = "all"

    def add_arguments(self, parser):
        parser.add_argument("--bind", default=settings.JEZERO_BIND,
                            help=f"address:port (default JEZERO_BIND, now {settings.JEZERO_BIND})")
        parser.add_argument("--workers", type=int, default=settings.JEZERO_WORKERS,
                            help=f"server processes (default JEZERO_WORKERS, now {settings.JEZERO_WORKERS})")

    def handle(self, *args, **opts):
        self.stdout.write(f"Jezero at http://{opts['bind']}/")
        self.stdout.flush()
        argv = gunicorn_argv(opts["bind"], opts["workers"])
        os.execv(argv[0], argv)
