"""The ASGI application (gunicorn `-k asgi`): one router in front of Django and MCP.

- `lifespan` events go to the MCP app (Django's ASGI handler does not speak lifespan; the
  MCP SDK needs it to run its session manager);
- `/mcp` goes to MCP after the bearer check (the header read by `clients.bearer`, as on the
  JSON API; 401 without a valid token, 403 without the read scope, 429 over the rate limit);
  the caller rides in the scope for the tools;
- everything else goes to Django's own ASGI handler, its synchronous work on a kept thread
  (`django_app`).

Before either reads a byte of a request's body, the router checks what the request line and
headers say (`_gate`): a path and query over 4,094 bytes is a 414; an upload or an MCP call
without a valid token with its scope a 401/403, any other API call with a body and neither a
valid token nor a session cookie a 401; a declared length over the route's limit a 413 — all in
the API's one error shape — so a large body from someone unknown is never read, let alone
written to a temporary file. A streamed (chunked) body is counted as it arrives and cut off at
the limit with a 413 (`_guarded`). The limits: the upload route takes JEZERO_MAX_UPLOAD_MB;
any other route 1 MB, less than Django keeps in memory, so only an authenticated upload can
ever be spooled to disk.
"""

import json
import os

import jezero_site  # noqa: F401  (puts the bundled SQLite in place first)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jezero_site.settings")

import threading  # noqa: E402
import warnings  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

from asgiref.sync import ThreadSensitiveContext, sync_to_async  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402


class RequestThreads:
    """Long-lived threads for the synchronous part of requests, one request at a time each.
    Django's ASGI handler starts a thread per request, whose SQLite connection is opened for
    that request and left to the garbage collector; a thread from here keeps its connection
    from request to request (`CONN_MAX_AGE`). Up to `keep` idle threads are kept; more
    concurrent requests get a thread of their own that ends with them."""

    def __init__(self, keep=8):
        self.keep = keep
        self.idle = []
        self.lock = threading.Lock()

    def take(self):
        with self.lock:
            if self.idle:
                return self.idle.pop()
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix="jezero-request")

    def give(self, executor):
        with self.lock:
            if len(self.idle) < self.keep:
                self.idle.append(executor)
                return
        executor.shutdown(wait=False)


# Django's own ASGI handler, nothing of it overridden (`get_asgi_application` also runs
# django.setup()). A hand-made handler that ran Django's request cycle in one step on the
# thread saved 1.0-1.6 ms of server CPU an API request, 9 % at 100,000 items with 10 clients and
# no gain in requests/s, for a copy of Django's internals: dropped (bench/RESULTS-serve.md,
# "Django's handler or our own").
django_handler = get_asgi_application()
request_threads = RequestThreads()

# WhiteNoise's static files are synchronous iterators: Django's handler reads such a file into
# a list on the request's thread (the largest, Swagger UI's bundle, is 1.5 MB) and warns each
# time. That is expected here, so the warning is not repeated into the server's log.
warnings.filterwarnings("ignore", message="StreamingHttpResponse must consume synchronous iterators")


async def django_app(scope, receive, send):
    """Django's ASGI handler with its synchronous work (the request signals, the middleware,
    the view, closing the response) on a thread of `request_threads`, so the thread's database
    connection serves request after request. Relies on two things: asgiref's
    ThreadSensitiveContext taking an executor (documented in asgiref's README), and Django's
    handler opening its own context without one, which then defers to this outer one. If
    either changes, requests still work but each opens a connection again, and
    tests/integration/test_asgi_router.py fails."""
    executor = request_threads.take()
    try:
        async with ThreadSensitiveContext(executor=executor):
            await django_handler(scope, receive, send)
    finally:
        request_threads.give(executor)


from django.conf import settings  # noqa: E402

from library.access import clients, ratelimit  # noqa: E402
from library.access import mcp as library_mcp  # noqa: E402
from library.errors import RateLimited  # noqa: E402

mcp_app = library_mcp.asgi_app()


async def _refuse(send, status, detail, retry_after=None):
    """Answer with the API's one error shape, `{"detail": …}`. Returns True."""
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
    return True


def _header(scope, name):
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


async def _client(scope):
    """The client of the request's bearer token (None without a valid one)."""
    token = clients.bearer(_header(scope, b"authorization"))
    caller = clients.recall(token)   # kept from this client's last call, unless a client changed
    if caller is None and token:
        caller = await sync_to_async(clients.authenticate_kept)(token)
    return caller


# --- request bodies: decided from the request line and headers, before a byte is read ----------

UPLOAD_PATH = "/api/v1/sessions"
API_BODY = 1 << 20            # a hook's JSON, an MCP call
PAGE_BODY = 1 << 20           # a form; under Django's 2.5 MB, so no page body ever goes to a temporary file
TARGET_LIMIT = 4094           # path and query, as gunicorn's limit_request_line (beyond it gunicorn answers)


def _body_limit(path):
    if path == UPLOAD_PATH:
        return settings.JEZERO_MAX_UPLOAD_BYTES
    return API_BODY if path.startswith(("/api/", "/mcp")) else PAGE_BODY


def _declared_length(scope):
    """Content-Length as a number; None when absent; -1 when it is not a number."""
    value = _header(scope, b"content-length")
    if value is None:
        return None
    value = value.strip()
    return int(value) if value.isdigit() else -1


def _signed_in_maybe(scope):
    """Whether the request carries a session cookie and no Authorization header (a browser
    that may be signed in: Django checks the session; the body is small enough to read)."""
    cookie = _header(scope, b"cookie") or ""
    return _header(scope, b"authorization") is None and f"{settings.SESSION_COOKIE_NAME}=" in cookie


def _has_body(scope):
    declared = _declared_length(scope)
    return bool(declared) or "chunked" in (_header(scope, b"transfer-encoding") or "").lower()


async def _gate(scope, send):
    """The refusal a request gets before its body is read, or None to go on: a request line too
    long (414), an upload without a valid token with the upload scope (MCP's token is checked
    before the gate, in `application`), or an API call with
    neither a valid token nor a session cookie (401/403: the API's own answers, given before the
    body), a declared length over the route's limit (413)."""
    path = scope.get("path", "")
    if len(scope.get("raw_path") or path.encode()) + len(scope.get("query_string", b"")) > TARGET_LIMIT:
        return await _refuse(send, 414, f"the request's path and query are longer than {TARGET_LIMIT:,} bytes")
    if not _has_body(scope):
        return None
    declared = _declared_length(scope)
    if declared == -1:
        return await _refuse(send, 400, "Content-Length is not a number")
    if path == UPLOAD_PATH:   # only a client may upload: who it is is known before the body is read
        caller = await _client(scope)
        if caller is None:
            return await _refuse(send, 401, "missing or invalid token")
        if not caller.can("upload"):
            return await _refuse(send, 403, "this token lacks the upload scope")
    elif path.startswith("/api/") and not _signed_in_maybe(scope):
        # The other API routes with a body (the hooks) take a client token or a browser's
        # session: a wrong token, or neither, is refused before the body is read.
        if await _client(scope) is None:
            return await _refuse(send, 401, "missing or invalid token")
    limit = _body_limit(path)
    if declared is not None and declared > limit:
        return await _refuse(send, 413, f"the body is larger than {limit:,} bytes")
    return None


def _capped(receive, limit, state):
    """`receive` that counts a streamed (chunked) body and, past `limit` bytes, reads no more
    and tells the app the client went away (the router then answers 413)."""
    async def capped():
        message = await receive()
        if message["type"] == "http.request":
            state["read"] += len(message.get("body", b""))
            if state["read"] > limit:
                state["over"] = True
                return {"type": "http.disconnect"}
        return message
    return capped


async def _guarded(app, scope, receive, send):
    """Run `app` with the request's body capped at its route's limit; 413 when it ran over
    (and the app answered nothing)."""
    if scope["type"] != "http" or not _has_body(scope):
        return await app(scope, receive, send)
    limit, state = _body_limit(scope.get("path", "")), {"read": 0, "over": False, "started": False}

    async def sending(message):
        if message["type"] == "http.response.start":
            state["started"] = True
        await send(message)

    await app(scope, _capped(receive, limit, state), sending)
    if state["over"] and not state["started"]:
        await _refuse(send, 413, f"the body is larger than {limit:,} bytes")


async def application(scope, receive, send):
    if scope["type"] == "lifespan":
        return await mcp_app(scope, receive, send)
    path = scope.get("path", "")
    if scope["type"] == "http" and (path == "/mcp" or path.startswith("/mcp/")):
        # The token, its scope and the rate limit first, before the gate reads the body's size.
        caller = await _client(scope)
        if caller is None:
            return await _refuse(send, 401, "missing or invalid token")
        if not caller.can("read"):
            return await _refuse(send, 403, "this token lacks the read scope")
        try:
            ratelimit.check(f"client:{caller.name}")
        except RateLimited as exc:
            return await _refuse(send, 429, str(exc), retry_after=exc.retry_after)
        if await _gate(scope, send) is None:
            await _guarded(mcp_app, {**scope, library_mcp.SCOPE_KEY: caller}, receive, send)
        return
    if scope["type"] == "http" and await _gate(scope, send) is not None:
        return
    return await _guarded(django_app, scope, receive, send)
