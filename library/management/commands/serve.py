import errno
import os
import socket
import sys

from django.conf import settings
from django.core.management.base import CommandError
from gunicorn.util import parse_address

from library.cli import Verb


def gunicorn_argv(bind, workers):
    """The server command: gunicorn with its native ASGI worker (MCP needs ASGI; its own errors
    as JSON: jezero_site.worker), logging each request in one escaped line without its query
    string, user name or referrer (jezero_site.accesslog). Each worker listens on its own
    socket (`--reuse-port`, SO_REUSEPORT) so that the kernel spreads keep-alive connections
    over the workers: on one shared socket the first worker to wake accepted every pending
    connection and served them all (bench/serve.py, tests/e2e/test_serve_workers.py)."""
    return [sys.executable, "-m", "gunicorn", "jezero_site.asgi:application",
            "--worker-class", "jezero_site.worker.Worker", "--bind", bind, "--workers", str(workers),
            "--no-control-socket", "--access-logfile", "-", "--logger-class", "jezero_site.accesslog.AccessLogger",
            "--graceful-timeout", "20", "--reuse-port"]


def in_use(bind):
    """Whether something already serves `bind` (gunicorn's "host:port", "[v6]:port",
    "unix:path"): a socket listening there that one without SO_REUSEPORT cannot bind beside,
    or one that accepts a connection. With `--reuse-port` a second gunicorn would otherwise
    bind beside the first, and the kernel would share the traffic between two libraries.
    An address this cannot check (`fd://…`, port 0, a name that does not resolve) is not
    in use: gunicorn says what is wrong with it."""
    address = parse_address(bind)
    if isinstance(address, int):
        return False
    if isinstance(address, str):
        return _answers(socket.AF_UNIX, address)
    host, port = address
    if not port:
        return False
    try:
        found = socket.getaddrinfo(host or "0.0.0.0", port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError):
        return False
    return any(_held(family, sockaddr) or _answers(family, _reachable(sockaddr))
               for family, _type, _proto, _name, sockaddr in found)


def _held(family, sockaddr):
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # SO_REUSEADDR as gunicorn sets it: a connection of a stopped server left in TIME_WAIT
        # does not hold the port; a listening socket still does.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(sockaddr)
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def _reachable(sockaddr):
    """Where to connect to reach a server bound to `sockaddr` (the wildcard: loopback)."""
    wildcard = {"0.0.0.0": "127.0.0.1", "::": "::1"}
    return (wildcard.get(sockaddr[0], sockaddr[0]), *sockaddr[1:])


def _answers(family, sockaddr):
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.settimeout(1)
        try:
            probe.connect(sockaddr)
        except OSError:
            return False
    return True


def refuse_if_in_use(bind):
    """Raise CommandError (one line: what to do) when something already serves `bind`."""
    if in_use(bind):
        raise CommandError(f"{bind} is already in use (another Jezero or another server); stop it or set "
                           "JEZERO_BIND (or --bind) to a free address")


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
        refuse_if_in_use(opts["bind"])
        self.stdout.write(f"Jezero at http://{opts['bind']}/")
        self.stdout.flush()
        argv = gunicorn_argv(opts["bind"], opts["workers"])
        os.execv(argv[0], argv)
