import os
import sys

from django.conf import settings

from library.cli import Verb

# gunicorn's default access line with the path instead of the request line, and no referrer:
# query strings may carry credentials (an upload's `git_remote=https://user:token@host/…`, a
# search), and a log is no place for them. Method, path, status, size and agent stay.
ACCESS_LOG_FORMAT = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s" %(M)sms'


def gunicorn_argv(bind, workers):
    """The server command: gunicorn with its native ASGI worker (MCP needs ASGI; its own errors
    as JSON: jezero_site.worker), logging each request without its query string (ACCESS_LOG_FORMAT). Each worker listens on its own
    socket (`--reuse-port`, SO_REUSEPORT) so that the kernel spreads keep-alive connections
    over the workers: on one shared socket the first worker to wake accepted every pending
    connection and served them all (bench/serve.py, tests/e2e/test_serve_workers.py)."""
    return [sys.executable, "-m", "gunicorn", "jezero_site.asgi:application",
            "--worker-class", "jezero_site.worker.Worker", "--bind", bind, "--workers", str(workers), "--no-control-socket", "--access-logfile", "-",
            "--access-logformat", ACCESS_LOG_FORMAT, "--graceful-timeout", "20", "--reuse-port"]


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
