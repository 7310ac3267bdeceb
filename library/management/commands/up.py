import signal
import subprocess
import sys
import time

from django.conf import settings

from library.cli import Verb
from library.management.commands.serve import gunicorn_argv, refuse_if_in_use

WORKER = [sys.executable, "-c", "import sys; from jezero_site.cli import main; sys.exit(main(['worker']))"]


class Command(Verb):
    help = ("Run the whole appliance in the foreground: the web server (pages, API, MCP) and the worker "
            "(scheduled connector runs, maintenance, browser-started jobs). Ctrl-C stops both.")
    json_output = False
    system_checks = "all"

    def add_arguments(self, parser):
        parser.add_argument("--bind", default=settings.JEZERO_BIND, help="address:port (default JEZERO_BIND)")
        parser.add_argument("--workers", type=int, default=settings.JEZERO_WORKERS, help="server processes")

    def handle(self, *args, **opts):
        """0. refuse when the address is served already  1. start the worker and the server
        2. wait until either ends or we are told to stop  3. stop the other one too, so nothing
        is left running."""
        refuse_if_in_use(opts["bind"])
        children = [subprocess.Popen(WORKER), subprocess.Popen(gunicorn_argv(opts["bind"], opts["workers"]))]
        self.stdout.write(f"Jezero at http://{opts['bind']}/ with its worker; Ctrl-C stops both")
        self.stdout.flush()
        stopping = []

        def stop(signum, _frame):
            stopping.append(signum)

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping and all(child.poll() is None for child in children):
                time.sleep(0.2)
        finally:
            for child in children:
                if child.poll() is None:
                    child.terminate()
            deadline = time.time() + 30
            for child in children:
                try:
                    child.wait(timeout=max(deadline - time.time(), 0.1))
                except subprocess.TimeoutExpired:
                    child.kill()
        failed = [child.returncode for child in children if child.returncode not in (0, -signal.SIGTERM)]
        if failed and not stopping:
            sys.exit(1)
