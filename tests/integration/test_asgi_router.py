"""The ASGI router in front of MCP (in process, no server): the bearer check, the scope
check and the rate limit answer before a request reaches the MCP SDK; and a bearer header is
read by the same function there as on the JSON API and its document."""

import asyncio
import json
import threading
import warnings

import httpx2 as httpx
import pytest

from library.access import clients, ratelimit
from library.access import mcp as library_mcp

pytestmark = pytest.mark.django_db(transaction=True)  # the router reads clients from another thread

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def post_mcp(token, times=1):  # refused requests never reach the SDK, so no lifespan is needed
    from jezero_site.asgi import application

    async def go():
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            headers = {**HEADERS, **({"Authorization": f"Bearer {token}"} if token else {})}
            return [await client.post("/mcp", headers=headers, json=INIT) for _ in range(times)]

    return asyncio.run(go())


def test_mcp_refuses_before_the_sdk_and_limits_the_rate(settings):
    reader = clients.create("reader", sources="*", scopes="read")[1]
    uploader = clients.create("uploader", sources="*", scopes="upload", upload_source="up")[1]
    assert post_mcp(None)[0].status_code == 401
    assert post_mcp("jz_nope_nope")[0].status_code == 401
    assert post_mcp(uploader)[0].status_code == 403
    settings.JEZERO_API_RATE_PER_MINUTE = 2
    ratelimit.reset()
    ratelimit.check("client:reader")          # two requests already this minute (served requests
    ratelimit.check("client:reader")          # are covered end to end in tests/e2e/test_mcp.py)
    (limited,) = post_mcp(reader)
    assert limited.status_code == 429 and 1 <= int(limited.headers["retry-after"]) <= 60
    assert limited.json()["detail"].startswith("too many requests")
    ratelimit.reset()


# --- one way to read a token, on every route ------------------------------------------------

# Header values (`{t}` is a valid token): the scheme in any case, then the token, with any
# spaces or tabs between and around; anything else is refused the same way everywhere.
ACCEPTED = ["Bearer {t}", "bearer {t}", "BEARER {t}", "Bearer  {t} ", "  Bearer {t}", "Bearer\t{t}", "Bearer {t}\t "]
REFUSED = [None, "", "{t}", "Basic {t}", "Token {t}", "Bearer", "Bearer ", "Bearer{t}", "Bearer: {t}",
           "Bearer {t} {t}", "Bearer {t}x"]


async def _mcp_stand_in(scope, receive, send):
    """Answers in place of the MCP SDK with the caller the router put in the scope."""
    caller = scope[library_mcp.SCOPE_KEY]
    body = json.dumps({"caller": caller.name, "sources": list(caller.sources)}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


@pytest.mark.parametrize("form", ACCEPTED + REFUSED)
def test_a_token_is_read_the_same_way_by_the_api_and_mcp_and_the_document_answers_anyone(form, monkeypatch):
    from jezero_site import asgi

    secret = clients.create("reader", sources="*", scopes="read")[1]
    header = None if form is None else form.replace("{t}", secret)
    accepted = form in ACCEPTED
    assert (clients.bearer(header) == secret) == accepted
    monkeypatch.setattr(asgi, "mcp_app", _mcp_stand_in)

    async def go():
        transport = httpx.ASGITransport(app=asgi.application)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            headers = {} if header is None else {"Authorization": header}
            return {"search": await client.get("/api/v1/search", params={"q": "stripe"}, headers=headers),
                    "document": await client.get("/api/v1/openapi.json", headers=headers),
                    "mcp": await client.post("/mcp", headers={**HEADERS, **headers}, json=INIT)}

    answers = asyncio.run(go())
    assert answers.pop("document").status_code == 200   # it holds no data (docs/design.md "Access")
    assert {route: answer.status_code for route, answer in answers.items()} == dict.fromkeys(
        answers, 200 if accepted else 401)
    if accepted:
        assert answers["mcp"].json() == {"caller": "reader", "sources": ["*"]}
    else:
        assert {answer.json()["detail"] for answer in answers.values()} == {"missing or invalid token"}
        assert {answer.headers["www-authenticate"] for answer in answers.values()} == {"Bearer"}


def test_api_requests_reuse_their_database_connections():
    """Each request's synchronous code runs on a kept thread, which keeps its SQLite
    connection (docs/design.md "Serving"): a request does not open a connection of its own."""
    from django.db.backends.signals import connection_created

    from jezero_site.asgi import application

    secret = clients.create("reader", sources="*", scopes="read")[1]
    opened = []

    def record(sender, connection, **kwargs):
        opened.append(threading.current_thread().name)

    async def go(burst):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            headers = {"Authorization": f"Bearer {secret}"}
            answers = []
            for n in range(20):   # one after another
                answers.append(await client.get("/api/v1/search", params={"q": f"stripe {n}"}, headers=headers))
            for _wave in range(3):   # a few at once
                answers += await asyncio.gather(*(client.get("/api/v1/search", params={"q": f"stripe {n}"},
                                                             headers=headers) for n in range(burst)))
            return answers

    connection_created.connect(record)
    try:
        answers = asyncio.run(go(burst=3))
    finally:
        connection_created.disconnect(record)
    assert [answer.status_code for answer in answers] == [200] * 29
    # One per thread the widest wave needed (3), not one per request (29).
    assert len([name for name in opened if name.startswith("jezero-request")]) <= 3
    assert len([name for name in opened if not name.startswith("jezero-request")]) == 0


# --- the request's synchronous part in one step ---------------------------------------------

REQUESTS = [("GET", "/login/", {}), ("GET", "/", {}), ("POST", "/login/", {"data": {"username": "x", "password": "y"}}),
            ("GET", "/api/v1/search", {"params": {"q": "stripe"}, "token": True}),
            ("GET", "/api/v1/nowhere", {"token": True}), ("GET", "/static/jezero.css", {}),
            ("HEAD", "/static/jezero.css", {})]


def _answers(app, secret, hops):
    """What a browser and an agent see of a page, a redirect, a refused form post, a JSON
    search, a JSON 404 and a static file (a streaming response) through `app`, and how many
    times each request moved to a thread (`hops` counts them)."""
    async def go():
        transport = httpx.ASGITransport(app=app)
        out = []
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            for method, path, options in REQUESTS:
                options = dict(options)
                headers = {"Authorization": f"Bearer {secret}"} if options.pop("token", False) else {}
                hops.clear()
                answer = await client.request(method, path, headers=headers, **options)
                out.append((answer, len(hops)))
        return out

    return [((a.status_code, a.headers.get("content-type"), a.headers.get("location"),
              a.headers.get("content-security-policy"), a.headers.get("content-length"),
              len(a.content) if b"csrfmiddlewaretoken" in a.content else a.content), moved)
            for a, moved in asyncio.run(go())]


def test_the_django_app_answers_as_djangos_handler_in_one_step_on_its_thread(settings, monkeypatch):
    """The router's Django app (one step on a kept thread: signal, middleware, view, closing)
    answers every kind of request exactly as Django's own ASGI handler does, and moves a
    request to its thread once where Django's moves it five or six times (docs/design.md "Serving": about 1.3 ms of
    server CPU a search at 100,000 items, bench/RESULTS-serve.md)."""
    from asgiref import sync
    from django.core.handlers.asgi import ASGIHandler

    from jezero_site.asgi import DjangoApp

    settings.WHITENOISE_USE_FINDERS = True      # the static file without collectstatic
    settings.WHITENOISE_AUTOREFRESH = True
    secret = clients.create("reader", sources="*", scopes="read")[1]
    hops = []
    original = sync.SyncToAsync.__call__

    async def counted(self, *args, **kwargs):
        hops.append(self.func)
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(sync.SyncToAsync, "__call__", counted)
    ours = _answers(DjangoApp(), secret, hops)
    with warnings.catch_warnings():   # Django's handler reads a static file into a list, and warns
        warnings.simplefilter("ignore")
        djangos = _answers(ASGIHandler(), secret, hops)
    assert [answer[0] for answer, _ in ours] == [200, 302, 403, 200, 404, 200, 200]
    assert [answer for answer, _ in ours] == [answer for answer, _ in djangos]
    assert "default-src" in ours[0][0][3]                 # the CSP header, from our middleware
    assert b"{" in ours[5][0][5] and ours[6][0][5] == b""  # the style sheet; HEAD has no body
    # A request that does not stream moves once, against five; a static file also reads its
    # blocks and closes on its thread.
    assert [moved for _, moved in ours[:5]] == [1] * 5
    assert all(moved >= 5 for _, moved in djangos[:5])
    assert all(moved <= 5 for _, moved in ours[5:])


def test_a_static_file_is_closed_when_the_client_goes_away_mid_answer(settings):
    """A client that disconnects while a static file is sent: the error reaches the server
    (which logs it), and the file is still closed and the request finished."""
    from django.core.signals import request_finished

    from jezero_site.asgi import DjangoApp

    settings.WHITENOISE_USE_FINDERS = True
    settings.WHITENOISE_AUTOREFRESH = True
    finished = []

    def record(sender, **kwargs):
        finished.append(sender)

    async def go():
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
                 "scheme": "http", "path": "/static/jezero.css", "raw_path": b"/static/jezero.css",
                 "query_string": b"", "root_path": "", "headers": [(b"host", b"localhost")],
                 "client": ("127.0.0.1", 5000), "server": ("localhost", 80)}

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            if message["type"] == "http.response.body":
                raise OSError("the client went away")

        await DjangoApp()(scope, receive, send)

    request_finished.connect(record)
    try:
        with pytest.raises(OSError, match="went away"):
            asyncio.run(go())
    finally:
        request_finished.disconnect(record)
    assert finished == [DjangoApp]


# --- callers kept between MCP calls ------------------------------------------------------------

def test_a_kept_caller_costs_no_query_and_any_change_to_a_client_is_seen_by_the_next_call(monkeypatch):
    """The router keeps the callers it authenticated: an agent's next MCP call is checked
    without a database query; yet a client's new sources, and its revocation, apply from the
    next call on."""
    from jezero_site import asgi

    monkeypatch.setattr(asgi, "mcp_app", _mcp_stand_in)
    checked = []
    authenticate = clients.authenticate
    monkeypatch.setattr(clients, "authenticate", lambda token: checked.append(token) or authenticate(token))
    secret = clients.create("agent", sources="agent-*", scopes="read")[1]
    clients.create("other", sources="*", scopes="read")

    def call():
        async def go():
            transport = httpx.ASGITransport(app=asgi.application)
            async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
                return await client.post("/mcp", headers={**HEADERS, "Authorization": f"Bearer {secret}"},
                                         json=INIT)
        return asyncio.run(go())

    assert call().json() == {"caller": "agent", "sources": ["agent-*"]}
    assert call().json() == {"caller": "agent", "sources": ["agent-*"]}
    assert len(checked) == 1                     # the second call: no look-up in the database
    clients.update("agent", sources="agent-*,mail-*")
    assert call().json() == {"caller": "agent", "sources": ["agent-*", "mail-*"]}
    clients.revoke("other")                      # a change to any client forgets every kept one
    assert call().status_code == 200
    clients.revoke("agent")
    answer = call()
    assert answer.status_code == 401 and answer.json() == {"detail": "missing or invalid token"}
