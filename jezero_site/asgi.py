"""The ASGI application (gunicorn `-k asgi`): one router in front of Django and MCP.

- `lifespan` events go to the MCP app (Django's ASGI handler does not speak lifespan; the
  MCP SDK needs it to run its session manager);
- `/mcp` goes to MCP after the bearer check (the header read by `clients.bearer`, as on the
  JSON API; 401 without a valid token, 403 without the read scope, 429 over the rate limit);
  the caller rides in the scope for the tools;
- everything else goes to Django.
"""

import json
import os

import jezero_site  # noqa: F401  (puts the bundled SQLite in place first)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jezero_site.settings")

import threading  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

import django  # noqa: E402
from asgiref.sync import ThreadSensitiveContext, sync_to_async  # noqa: E402
from django.core import signals  # noqa: E402
from django.core.exceptions import RequestAborted  # noqa: E402
from django.core.handlers import base  # noqa: E402
from django.core.handlers.asgi import ASGIHandler, get_script_prefix  # noqa: E402
from django.urls import set_script_prefix  # noqa: E402


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


class DjangoApp(ASGIHandler):
    """Django's ASGI handler with the request's synchronous part in one step on a thread of
    `RequestThreads` (issue 15, bench/RESULTS-serve.md). Django's own handler, with these
    synchronous views and middleware, moves between the event loop and a thread five times
    a request (the request_started signal, the middleware above and below the one that can
    run async, the view, closing the response), each a wake-up of both; here the request is
    read on the loop, then the signal, the middleware chain, the view and, unless the
    response streams, its closing run in one call on the thread, as under WSGI, and the
    response is sent from the loop. A streaming response (a static file) is read on the
    thread a block at a time, and closed there once sent."""

    threads = RequestThreads()

    def __init__(self):
        base.BaseHandler.__init__(self)
        self.load_middleware(is_async=False)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self.threads.take()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            self.threads.give(executor)

    async def handle(self, scope, receive, send):
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            response = await sync_to_async(self.respond, thread_sensitive=True)(scope, body_file)
            try:
                await self.send_response(response, send)
            finally:
                if response.streaming:   # its file is closed even when sending failed
                    await sync_to_async(response.close, thread_sensitive=True)()
        finally:
            body_file.close()

    def respond(self, scope, body_file):
        """The response to one request, on the request's thread: WSGIHandler.__call__'s steps
        for an ASGI request; a response that does not stream is closed here (the
        request_finished signal), its content already in hand."""
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)
        response._handler_class = self.__class__
        if not response.streaming:
            response.close()
        elif not response.is_async:   # a static file: read on this thread a block at a time
            response.streaming_content = _on_this_thread(response.streaming_content)
        return response


async def _on_this_thread(chunks):
    """A synchronous iterator's items, each read on the request's thread (Django would read
    them all into a list first, with a warning)."""
    read = sync_to_async(next, thread_sensitive=True)
    while (chunk := await read(chunks, None)) is not None:
        yield chunk


django.setup(set_prefix=False)
django_app = DjangoApp()

from library.access import clients, ratelimit  # noqa: E402
from library.access import mcp as library_mcp  # noqa: E402
from library.errors import RateLimited  # noqa: E402

mcp_app = library_mcp.asgi_app()


async def _refuse(send, status, detail, retry_after=None):
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _header(scope, name):
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


async def application(scope, receive, send):
    if scope["type"] == "lifespan":
        return await mcp_app(scope, receive, send)
    path = scope.get("path", "")
    if scope["type"] == "http" and (path == "/mcp" or path.startswith("/mcp/")):
        token = clients.bearer(_header(scope, b"authorization"))
        caller = clients.recall(token)   # kept from this client's last call, unless a client changed
        if caller is None and token:
            caller = await sync_to_async(clients.authenticate_kept)(token)
        if caller is None:
            return await _refuse(send, 401, "missing or invalid token")
        if not caller.can("read"):
            return await _refuse(send, 403, "this token lacks the read scope")
        try:
            ratelimit.check(f"client:{caller.name}")
        except RateLimited as exc:
            return await _refuse(send, 429, str(exc), retry_after=exc.retry_after)
        return await mcp_app({**scope, library_mcp.SCOPE_KEY: caller}, receive, send)
    return await django_app(scope, receive, send)
