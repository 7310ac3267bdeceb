import os
import sys

from library.cli import Verb


class Command(Verb):
    help = "Serve the web app (gunicorn, ASGI workers)."
    json_output = False

    def add_arguments(self, parser):
        parser.add_argument("--bind", default="127.0.0.1:8000", help="address:port (default 127.0.0.1:8000)")
        parser.add_argument("--workers", type=int, default=2, help="server processes (default 2)")

    def handle(self, *args, **opts):
        argv = [sys.executable, "-m", "gunicorn", "jezero_site.asgi:application", "--worker-class", "asgi",
                "--bind", opts["bind"], "--workers", str(opts["workers"]), "--no-control-socket",
                "--access-logfile", "-"]
        self.stdout.write(f"Jezero at http://{opts['bind']}/")
        self.stdout.flush()
        os.execv(sys.executable, argv)
