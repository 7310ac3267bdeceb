"""The container's health check (Dockerfile HEALTHCHECK): exit 0 when /health answers 200.

Standard library only and no Jezero import, so it costs a bare interpreter start. It asks the
server in this container on the port of JEZERO_BIND, with a Host header taken from
JEZERO_ALLOWED_HOSTS: a deployment that allows only its public name still passes Django's host
check. Redirects are not followed, so the probe never leaves the container. Any failure
prints one line ("unhealthy: …") for `docker inspect` and exits 1.
"""

import http.client
import os
import sys


def probe_target(environ):
    """(port, host header) for the server described by this environment."""
    bind = environ.get("JEZERO_BIND") or "127.0.0.1:8000"
    port = int(bind.rpartition(":")[2])
    hosts = [h.strip() for h in (environ.get("JEZERO_ALLOWED_HOSTS") or "").split(",") if h.strip()]
    named = [h.lstrip(".") for h in hosts if h != "*"]
    return port, (named[0] if named else "localhost")


def main(environ=os.environ):
    try:
        port, host = probe_target(environ)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=4)
        connection.request("GET", "/health", headers={"Host": host})
        status = connection.getresponse().status
    except (OSError, ValueError, http.client.HTTPException) as exc:
        return f"unhealthy: {exc}"
    return 0 if status == 200 else f"unhealthy: /health answered HTTP {status}"


if __name__ == "__main__":
    sys.exit(main())
