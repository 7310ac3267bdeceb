"""The ASGI router in front of MCP (in process, no server): the bearer check, the scope
check and the rate limit answer before a request reaches the MCP SDK; and a bearer header is
read by the same function there as on the JSON API and its document."""

import asyncio
import json
import threading

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
    connection (docs/design.md "Serving"): a request does not open a connection of its own. Also the guard of
    what the router relies on: Django's handler deferring to the router's thread context."""
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
