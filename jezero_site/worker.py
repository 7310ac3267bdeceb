"""gunicorn's ASGI worker with its own error answers in the API's one shape: a request gunicorn
refuses before the application sees it (a request line over `limit_request_line`: 414; headers
too large: 431; a malformed request: 400) gets `{"detail": "…"}` as JSON, like every error the
application gives, instead of gunicorn's plain text. `jezero serve` runs this worker class."""

import json

from gunicorn.asgi import protocol
from gunicorn.workers import gasgi


class JsonErrorsProtocol(protocol.ASGIProtocol):
    def _send_error_response(self, status, message, extra_headers=()):
        body = json.dumps({"detail": str(message) or f"HTTP {status}"}).encode()
        reason = protocol._REASON_PHRASES.get(status, "Error")
        extra = "".join(f"{name}: {value}\r\n" for name, value in extra_headers)
        head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                f"{extra}Connection: close\r\n\r\n")
        self._safe_write(head.encode("latin-1"))
        self._safe_write(body)


class Worker(gasgi.ASGIWorker):
    """The ASGI worker, its connections served by JsonErrorsProtocol."""


# The worker builds its connections' protocol by this module-level name (gasgi.ASGIWorker.
# _serve); point it at ours. Only processes that load this worker class import this module.
gasgi.ASGIProtocol = JsonErrorsProtocol
