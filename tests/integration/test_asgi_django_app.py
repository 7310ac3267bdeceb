"""The router's Django app (Django's own ASGI handler on a kept thread) against Django's
handler alone, behind the same router: every kind of answer (pages, redirects, the API's
answers and error shapes, a view that raises, streaming and file responses, the router's own
413/414/401) and every kind of client disconnect (before the body, while it is read, while a
view runs, while a response streams) give the same messages, finish the request
(`request_finished`) and give its thread back.

Driven with raw ASGI messages, so that a disconnect can be placed exactly. A few test-only
views are mounted beside the site's own URLs (`urlpatterns` below)."""

import asyncio
import json
import threading
import warnings

import pytest
from django.core.signals import request_finished
from django.http import FileResponse, HttpResponse, StreamingHttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from jezero_site import urls as site_urls
from library.access import clients

pytestmark = pytest.mark.django_db(transaction=True)  # the app reads clients from its own threads

# --- test-only views ---------------------------------------------------------------------------

CHUNKS = [f"chunk {n:02d} ".encode() * 400 for n in range(20)]   # 20 × 4 kB
VIEW_GATE = {}                       # the slow view's two events, set per test
STREAMS = []                         # each streaming generator's fate: "done" or "closed"


def raising(request):
    raise RuntimeError("a view that fails")


def _chunks():
    try:
        yield from CHUNKS
        STREAMS.append("done")
    except GeneratorExit:
        STREAMS.append("closed")
        raise


def streaming(request):
    return StreamingHttpResponse(_chunks(), content_type="text/plain")


async def _achunks():
    try:
        for chunk in CHUNKS:
            await asyncio.sleep(0)
            yield chunk
        STREAMS.append("done")
    except (GeneratorExit, asyncio.CancelledError):
        STREAMS.append("closed")
        raise


def astreaming(request):
    return StreamingHttpResponse(_achunks(), content_type="text/plain")


def a_file(request):   # any file of a few blocks: the standard library's json package
    return FileResponse(open(json.__file__, "rb"), as_attachment=True, filename="json.py")  # noqa: SIM115


def slow(request):
    VIEW_GATE["running"].set()
    VIEW_GATE["go_on"].wait(10)
    return HttpResponse("slow answer")


@csrf_exempt
def echo(request):
    return HttpResponse(b"%d bytes: " % len(request.body) + request.body[:20])


urlpatterns = [path("t/raise/", raising), path("t/stream/", streaming), path("t/astream/", astreaming),
               path("t/file/", a_file), path("t/slow/", slow), path("t/echo/", echo), *site_urls.urlpatterns]


# --- driving an ASGI app with raw messages ----------------------------------------------------

def _scope(method, target, headers=()):
    path, _, query = target.partition("?")
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
            "path": path, "raw_path": path.encode(), "query_string": query.encode(), "root_path": "",
            "headers": [(b"host", b"localhost"), *[(k.encode(), v.encode()) for k, v in headers]],
            "client": ("127.0.0.1", 5000), "server": ("localhost", 80)}


async def _drive(app, method, target, *, headers=(), body=(b"",), gone=None):
    """The messages `app` sends for one request. `body`: the request's chunks (the last one
    ends it), or ending with None: the client goes away instead. `gone`: a function of the
    messages sent so far that says the client went away (later sends are still recorded, as
    a server would drop them)."""
    chunks = list(body)
    disconnected = asyncio.Event()
    sent = []

    async def receive():
        if chunks:
            chunk = chunks.pop(0)
            if chunk is None:
                return {"type": "http.disconnect"}
            return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}
        await disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)
        if gone is not None and gone(sent):
            disconnected.set()
            await asyncio.sleep(0)   # the app may notice now, as it would on a real socket

    try:
        await asyncio.wait_for(app(_scope(method, target, headers), receive, send), 10)
    finally:
        disconnected.set()
    return sent


def _seen(sent):
    """What a client sees of the messages: status, headers (a CSRF cookie's value, the form's
    token and an Expires date vary per request), and the body."""
    start = next((m for m in sent if m["type"] == "http.response.start"), None)
    if start is None:
        return None
    varying = {b"set-cookie": b"csrftoken", b"expires": b"GMT"}
    headers = sorted((k.lower(), b"<varies>" if varying.get(k.lower(), b"\0") in v else v) for k, v in start["headers"])
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    if b"csrfmiddlewaretoken" in body:
        body = len(body)
    return start["status"], headers, body


@pytest.fixture
def apps(settings, monkeypatch):
    """(the router with its own Django app, the router with Django's bare ASGI handler in its
    place, a client token); the test-only views mounted."""
    from django.core.handlers.asgi import ASGIHandler

    from jezero_site import asgi

    settings.ROOT_URLCONF = __name__
    settings.WHITENOISE_USE_FINDERS = True      # the static files without collectstatic
    settings.WHITENOISE_AUTOREFRESH = True
    settings.DEBUG_PROPAGATE_EXCEPTIONS = False
    monkeypatch.setattr(asgi, "django_handler", ASGIHandler())   # its middleware sees the settings above
    ours = asgi.django_app
    djangos = ASGIHandler()

    def through(django_app):
        async def app(scope, receive, send):
            monkeypatch.setattr(asgi, "django_app", django_app)
            return await asgi.application(scope, receive, send)
        return app

    STREAMS.clear()
    return through(ours), through(djangos), clients.create("reader", sources="*", scopes="read")[1]


def _both(apps, *request, **options):
    """The messages of one request through our app and through Django's, each run on its own
    event loop (as two servers would)."""
    ours, djangos, _ = apps
    with warnings.catch_warnings():   # Django's handler reads a synchronous stream into a list, and warns
        warnings.simplefilter("ignore")
        return asyncio.run(_drive(ours, *request, **options)), asyncio.run(_drive(djangos, *request, **options))


def _finished():
    """A list that collects the sender of every request_finished signal until disconnected."""
    finished = []

    def record(sender, **kwargs):
        finished.append(sender)

    request_finished.connect(record, weak=False)
    return finished, lambda: request_finished.disconnect(record)


# --- every kind of answer -----------------------------------------------------------------------

def test_every_kind_of_answer_is_the_same_as_djangos(apps, caplog):
    """Pages, redirects, a refused form, the API's answers and error shapes, a failing view,
    streamed and file responses and the router's own refusals reach the client the same way
    through our Django app as through Django's handler."""
    token = apps[2]
    auth = [("authorization", f"Bearer {token}")]
    cases = {
        "page": ("GET", "/login/"),
        "redirect": ("GET", "/"),
        "html 404": ("GET", "/nowhere/"),
        "refused form": ("POST", "/login/", {"headers": [("content-type", "application/x-www-form-urlencoded"),
                                                         ("content-length", "20")],
                                             "body": [b"username=x&password=y"]}),
        "search": ("GET", "/api/v1/search?q=stripe", {"headers": auth}),
        "api 404": ("GET", "/api/v1/nowhere", {"headers": auth}),
        "api 401": ("GET", "/api/v1/search?q=stripe"),
        "api 422": ("GET", "/api/v1/search?q=stripe&colour=red", {"headers": auth}),
        "api 400": ("GET", "/api/v1/search?q=stripe&since=1066-01-01", {"headers": auth}),
        "api 405": ("DELETE", "/api/v1/search", {"headers": auth}),
        "view raising": ("GET", "/t/raise/"),
        "streaming": ("GET", "/t/stream/"),
        "async streaming": ("GET", "/t/astream/"),
        "file": ("GET", "/t/file/"),
        "static": ("GET", "/static/jezero.css"),
        "static HEAD": ("HEAD", "/static/jezero.css"),
        "body read": ("POST", "/t/echo/", {"headers": [("content-length", "9")], "body": [b"abc", b"def", b"ghi"]}),
        "router 414": ("GET", "/api/v1/search?q=" + "x" * 5000, {"headers": auth}),
        "router 413": ("POST", "/api/v1/hooks/claude-code", {"headers": [*auth, ("content-length", str(2 << 20))]}),
        "router 413 chunked": ("POST", "/t/echo/", {"headers": [("transfer-encoding", "chunked")],
                                                    "body": [b"x" * (600 << 10), b"x" * (600 << 10), b""]}),
        "router 401": ("POST", "/api/v1/hooks/claude-code", {"headers": [("content-length", "2")], "body": [b"{}"]}),
    }
    statuses = {}
    for name, (method, target, *options) in cases.items():
        ours, djangos = _both(apps, method, target, **(options[0] if options else {}))
        assert _seen(ours) == _seen(djangos), name
        statuses[name] = _seen(ours)[0]
    assert statuses == {
        "page": 200, "redirect": 302, "html 404": 404, "refused form": 403, "search": 200, "api 404": 404,
        "api 401": 401, "api 422": 422, "api 400": 400, "api 405": 405, "view raising": 500, "streaming": 200,
        "async streaming": 200, "file": 200, "static": 200, "static HEAD": 200, "body read": 200,
        "router 414": 414, "router 413": 413, "router 413 chunked": 413, "router 401": 401}
    assert STREAMS == ["done"] * 4   # both generators, through both apps, read to the end
    assert "a view that fails" in caplog.text   # the failure is logged, as Django logs it


def test_the_api_error_shapes_and_a_raising_service_are_the_same_as_djangos(apps, monkeypatch):
    """An API call whose service raises is a 500 the same way through both; every API error is
    the one `{"detail": …}` shape."""
    from library import search as search_module

    def failing(*args, **kwargs):
        raise RuntimeError("the search failed")

    monkeypatch.setattr(search_module, "search", failing)
    ours, djangos = _both(apps, "GET", "/api/v1/search?q=stripe", headers=[("authorization", f"Bearer {apps[2]}")])
    assert _seen(ours) == _seen(djangos)
    assert _seen(ours)[0] == 500
    for target in ("/api/v1/nowhere", "/api/v1/search?q=stripe&colour=red"):
        answer = _seen(asyncio.run(_drive(apps[0], "GET", target, headers=[("authorization", f"Bearer {apps[2]}")])))
        assert set(json.loads(answer[2])) == {"detail"}


# --- client disconnects -------------------------------------------------------------------------

def test_a_client_gone_before_or_while_its_body_is_read_gets_nothing_and_costs_no_view(apps):
    """A client that goes away before its body arrives, or half-way through it, is answered
    nothing by either app, and no view runs."""
    finished, stop = _finished()
    try:
        for body in ([None], [b"abc", None], [b"abc", b"def", None]):
            ours, djangos = _both(apps, "POST", "/t/echo/", headers=[("content-length", "9")], body=body)
            assert ours == djangos == []
    finally:
        stop()
    assert finished == []   # the request never started (Django's handler sends no signal either)


def _started_body(sent):
    return any(m["type"] == "http.response.body" for m in sent)


@pytest.mark.parametrize("target", ["/t/stream/", "/t/astream/", "/t/file/", "/static/jezero.css"])
def test_a_client_gone_while_a_response_streams_ends_the_request_as_djangos(apps, target):
    """A client that goes away after the first block of a streamed answer: both apps sent the
    same status and headers, bodies that are a beginning of the whole, finish the request,
    close the stream, and give the request's thread back."""
    from jezero_site import asgi

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = _seen(asyncio.run(_drive(apps[0], "GET", target)))
    STREAMS.clear()
    finished, stop = _finished()
    idle_before = len(asgi.request_threads.idle)
    try:
        ours, djangos = _both(apps, "GET", target, gone=_started_body)
    finally:
        stop()
    for sent in (ours, djangos):
        status, headers, body = _seen(sent)
        assert (status, headers) == whole[:2]
        assert whole[2].startswith(body)
    assert len(finished) == 2                     # one request_finished each
    if target.startswith("/t/stream") or target.startswith("/t/astream"):
        assert len(STREAMS) == 2                  # each generator ended: read out or closed
    assert len(asgi.request_threads.idle) == idle_before   # the thread is back in the pool


def test_a_client_gone_while_a_view_runs_ends_the_request_as_djangos(apps):
    """A client that goes away while the view is working: the view finishes on its thread,
    the request is finished once, and the thread takes the next request."""
    finished, stop = _finished()
    results = []
    try:
        for app in apps[:2]:
            VIEW_GATE.update(running=threading.Event(), go_on=threading.Event())

            async def run(app=app):
                disconnect = asyncio.Event()
                chunks = [b""]

                async def receive():
                    if chunks:
                        return {"type": "http.request", "body": chunks.pop(), "more_body": False}
                    await disconnect.wait()
                    return {"type": "http.disconnect"}

                sent = []

                async def send(message):
                    sent.append(message)

                task = asyncio.create_task(app(_scope("GET", "/t/slow/"), receive, send))
                await asyncio.to_thread(VIEW_GATE["running"].wait, 5)
                disconnect.set()                       # the client goes away mid-view ...
                await asyncio.sleep(0.05)
                VIEW_GATE["go_on"].set()               # ... and the view then finishes
                await asyncio.wait_for(task, 10)
                # the same app answers the next request
                return sent, _seen(await _drive(app, "GET", "/health"))

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results.append(asyncio.run(run()))
    finally:
        stop()
    (ours, ours_next), (djangos, djangos_next) = results
    assert _seen(ours) == _seen(djangos)
    assert ours_next[0] == djangos_next[0] == 200
    assert len(finished) == 4    # the abandoned request and the next one, through each app
