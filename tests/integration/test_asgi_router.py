"""The ASGI router in front of MCP (in process, no server): the bearer check, the scope
check and the rate limit answer before a request reaches the MCP SDK."""

import asyncio

import httpx2 as httpx
import pytest

from library.access import clients, ratelimit

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
