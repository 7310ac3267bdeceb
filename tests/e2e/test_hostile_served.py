"""Hostile input against a real server (`jezero serve`: gunicorn with its ASGI worker), as an
attacker and a careless user would send it: dates out of range on every read path, bodies
that are too large (declared, streamed, or from nobody), a path too long, unknown parameters,
odd encodings and body shapes, and a Mailgun key in prose. Every answer is a 4xx in the one
JSON error shape — never a 500 — and no request from someone unknown writes a byte to the
server's temporary folder. The probes are counted (`PROBES`) for the record."""

import asyncio
import gzip
import json
import os
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import JEZERO, serving

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "claude_7.jsonl"
MAILGUN = "key-3e7a91c04bd85f2a6c19e0d47b3f8a25"
BAD_DATES = ["0001-01-01T00:00+01:00", "9999-12-31T23:59-01:00", "0001-01-01", "9999-12-31", "1899-12-31",
             "2200-01-01", "2026-02-30", "yesterday"]
PROBES = []   # (what, status) of every probe, for the closing count


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    spool = tmp / "spool"
    spool.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEZERO_")}
    env.update(JEZERO_DATA_DIR=str(tmp / "data"), HOME=str(tmp), JEZERO_ALLOWED_HOSTS="127.0.0.1,localhost",
               JEZERO_ADMIN_PASSWORD="Quiet-Harbour-Lantern-58", JEZERO_MAX_UPLOAD_MB="2", TMPDIR=str(spool),
               JEZERO_API_RATE_PER_MINUTE="0")

    def jezero(*args, ok=True):
        proc = subprocess.run([str(JEZERO), *args], env=env, capture_output=True, text=True, timeout=300)
        if ok:
            assert proc.returncode == 0, proc.stderr
        return proc

    jezero("init")
    reader = json.loads(jezero("client", "add", "reader", "--sources", "*", "--json").stdout)["token"]
    uploader = json.loads(jezero("client", "add", "laptop", "--sources", "*", "--scopes", "read,upload",
                                 "--json").stdout)["token"]
    with serving(env) as url:
        yield {"url": url, "reader": reader, "uploader": uploader, "jezero": jezero, "spool": spool,
               "data": tmp / "data"}
    statuses = sorted({status for _what, status in PROBES})
    print(f"\nhostile probes: {len(PROBES)}, statuses {statuses}")


def probe(what, response):
    """Record a probe; every one must be a 4xx (or the 2xx it should be) with a JSON detail."""
    PROBES.append((what, response.status_code))
    assert response.status_code < 500, (what, response.status_code, response.text[:300])
    if response.status_code >= 400 and "/api/" in str(response.url):
        assert set(response.json()) == {"detail"}, (what, response.text[:300])
    return response


def headers(token):
    return {"Authorization": f"Bearer {token}"}


# --- dates ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("when", BAD_DATES)
def test_a_date_out_of_range_is_a_400_naming_it_on_the_api(served, when):
    for route, name in (("search", "since"), ("timeline", "since"), ("timeline", "until")):
        params = {name: when, **({"q": "gunicorn"} if route == "search" else {})}
        answer = probe(f"api {route} {name}", httpx.get(f"{served['url']}/api/v1/{route}", params=params,
                                                        headers=headers(served["reader"]), timeout=10))
        assert answer.status_code in (400, 422) and name in answer.json()["detail"]


def test_a_date_out_of_range_is_a_tool_error_saying_so_on_mcp(served):
    async def calls():
        async with httpx.AsyncClient(headers=headers(served["reader"]), timeout=30) as http:
            async with streamable_http_client(f"{served['url']}/mcp", http_client=http) as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return [await session.call_tool(tool, {name: when, **extra})
                            for when in BAD_DATES[:4]
                            for tool, name, extra in (("timeline", "since", {}), ("timeline", "until", {}),
                                                      ("search", "since", {"query": "gunicorn"}))]

    for result in asyncio.run(calls()):
        PROBES.append(("mcp date", 400 if result.is_error else 200))
        text = " ".join(getattr(part, "text", "") for part in result.content)
        assert result.is_error and "out of range" in text, text


def test_a_date_out_of_range_is_one_line_from_the_cli(served):
    for args in (["search", "gunicorn", "--since", BAD_DATES[0]], ["timeline", "--since", BAD_DATES[1]],
                 ["timeline", "--until", BAD_DATES[0]]):
        proc = served["jezero"](*args, ok=False)
        PROBES.append(("cli date", proc.returncode))
        assert proc.returncode == 1 and "out of range" in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_a_date_out_of_range_is_a_message_on_the_web_pages(served):
    with httpx.Client(base_url=served["url"], timeout=30, follow_redirects=True) as browser:
        form = browser.get("/login/")
        token = form.text.split('name="csrfmiddlewaretoken" value="')[1].split('"')[0]
        browser.post("/login/", data={"username": "admin", "password": "Quiet-Harbour-Lantern-58",
                                      "csrfmiddlewaretoken": token}, headers={"Referer": f"{served['url']}/login/"})
        for path, params in (("/", {"q": "x", "since": BAD_DATES[0]}), ("/timeline/", {"since": BAD_DATES[1]}),
                             ("/timeline/", {"until": BAD_DATES[0]})):
            page = probe(f"page {path}", browser.get(path, params=params))
            assert page.status_code == 200 and "out of range" in page.text and "Log out" in page.text


# --- bodies -------------------------------------------------------------------------------------------

def raw(url, request, *, body=b"", read_timeout=5):
    """Send `request` (the head, CRLF-joined lines) and `body` over a raw socket; the status
    and the response body, as soon as the server answers (it must not wait for the body)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=read_timeout) as sock:
        sock.sendall(("\r\n".join(request) + "\r\n\r\n").encode() + body)
        started, data = time.monotonic(), b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < _length(data):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        elapsed = time.monotonic() - started
    head, _, content = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), content, elapsed


def _length(data):
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 0


def spooled(spool):
    return sum(p.stat().st_size for p in spool.rglob("*") if p.is_file())


@pytest.mark.parametrize("path, method, token, expected", [
    ("/api/v1/sessions?agent=claude_code&session_id=s1", "POST", None, 401),
    ("/api/v1/sessions?agent=claude_code&session_id=s1", "POST", "reader", 403),
    ("/api/v1/sessions?agent=claude_code&session_id=s1", "POST", "uploader", 413),
    ("/api/v1/hooks/first-prompt", "POST", None, 401),
    ("/api/v1/hooks/session-start", "POST", "wrong", 401),
    ("/api/v1/hooks/first-prompt", "POST", "reader", 413),
    ("/login/", "POST", None, 413),
    ("/no/such/page", "POST", None, 413),
    ("/mcp", "POST", None, 401),
])
def test_a_huge_declared_body_is_refused_at_once_and_nothing_is_spooled(served, path, method, token, expected):
    auth = [f"Authorization: Bearer {served.get(token, 'jz_000000000000_wrong')}"] if token else []
    status, content, elapsed = raw(served["url"], [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1",
                                                   "Content-Length: 1000000000", "Content-Type: application/json",
                                                   *auth], body=b"x" * 65536)
    PROBES.append((f"declared {path}", status))
    assert status == expected and elapsed < 3
    assert json.loads(content).get("detail")
    assert spooled(served["spool"]) == 0


def test_a_streamed_body_is_cut_off_at_the_limit(served):
    def chunks():
        for _ in range(40):   # 40 × 64 KB: past the hooks' 1 MB
            yield b"10000\r\n" + b"y" * 65536 + b"\r\n"
        yield b"0\r\n\r\n"

    status, content, _ = raw(served["url"], ["POST /api/v1/hooks/first-prompt HTTP/1.1", "Host: 127.0.0.1",
                                             "Transfer-Encoding: chunked", "Content-Type: application/json",
                                             f"Authorization: Bearer {served['reader']}"], body=b"".join(chunks()))
    PROBES.append(("chunked", status))
    assert status == 413 and "larger than" in json.loads(content)["detail"]
    assert spooled(served["spool"]) == 0


def test_an_upload_streamed_past_the_limit_is_refused_and_nothing_stays(served):
    body = REAL.read_bytes() * 200   # ~16 MB: past JEZERO_MAX_UPLOAD_MB=2
    answer = probe("upload too large", httpx.post(
        f"{served['url']}/api/v1/sessions", params={"agent": "claude_code", "session_id": "big"},
        content=iter([body[i:i + 65536] for i in range(0, len(body), 65536)]),
        headers={**headers(served["uploader"]), "Content-Type": "application/x-ndjson"}, timeout=30))
    assert answer.status_code == 413
    time.sleep(0.2)
    assert spooled(served["spool"]) == 0   # what was spooled for an authenticated upload is gone


def test_a_path_too_long_and_headers_too_large_are_json_errors(served):
    long = probe("414", httpx.get(f"{served['url']}/api/v1/search", params={"q": "x" * 5000},
                                  headers=headers(served["reader"]), timeout=10))
    assert long.status_code == 414 and long.json()["detail"]
    longer = httpx.get(f"{served['url']}/api/v1/search", params={"q": "x" * 9000},
                       headers=headers(served["reader"]), timeout=10)   # past gunicorn's own limit
    PROBES.append(("414 gunicorn", longer.status_code))
    assert longer.status_code == 414 and longer.headers["content-type"] == "application/json"
    assert json.loads(longer.content)["detail"]


def test_a_hook_body_of_3_mb_is_a_json_413(served):
    answer = probe("hook 3 MB", httpx.post(f"{served['url']}/api/v1/hooks/first-prompt",
                                           json={"prompt": "x" * 3_000_000}, headers=headers(served["reader"]),
                                           timeout=30))
    assert answer.status_code == 413


# --- shapes, parameters, encodings -------------------------------------------------------------------------

@pytest.mark.parametrize("body", [b"[]", b"null", b"5", b'"text"', b"{", b'{"cwd": "/x", "sesion_id": "s"}'])
def test_a_hook_body_of_the_wrong_shape_is_a_422(served, body):
    for hook in ("session-start", "first-prompt"):
        answer = probe(f"hook {hook} {body!r}", httpx.post(
            f"{served['url']}/api/v1/hooks/{hook}", content=body,
            headers={**headers(served["reader"]), "Content-Type": "application/json"}, timeout=10))
        assert answer.status_code in (400, 422)


@pytest.mark.parametrize("route, params", [("search", {"q": "x", "sinse": "2026-01-01"}),
                                           ("timeline", {"limt": "3"}), ("items/1", {"original": "1"})])
def test_an_unknown_parameter_is_a_422_naming_it(served, route, params):
    answer = probe(f"unknown {route}", httpx.get(f"{served['url']}/api/v1/{route}", params=params,
                                                 headers=headers(served["reader"]), timeout=10))
    unknown = [name for name in params if name not in ("q",)][0]
    assert answer.status_code == 422 and f"{unknown}: unknown parameter" in answer.json()["detail"]


def upload(served, session, content, **extra):
    return probe(f"upload {session}", httpx.post(
        f"{served['url']}/api/v1/sessions", params={"agent": "claude_code", "session_id": session, "ended": "true"},
        content=content, headers={**headers(served["uploader"]), "Content-Type": "application/x-ndjson", **extra},
        timeout=30))


def test_a_gzip_of_two_members_is_read_whole_and_trailing_garbage_is_refused(served):
    body = REAL.read_bytes()
    half = body.index(b"\n", len(body) // 2) + 1
    both = upload(served, "two-members", gzip.compress(body[:half]) + gzip.compress(body[half:]),
                  **{"Content-Encoding": "gzip"})
    assert both.status_code == 201 and both.json()["size"] == len(body)
    garbage = upload(served, "garbage", gzip.compress(body) + b"trailing bytes", **{"Content-Encoding": "gzip"})
    assert garbage.status_code == 422 and "after its gzip stream" in garbage.json()["detail"]
    brotli = upload(served, "brotli", body, **{"Content-Encoding": "br"})
    assert brotli.status_code == 415


def test_a_mailgun_key_in_prose_never_lands(served):
    line = json.dumps({"type": "user", "uuid": "m1", "parentUuid": None, "sessionId": "mg",
                       "timestamp": "2026-01-23T18:00:00Z",
                       "message": {"role": "user", "content": f"the mailgun key is {MAILGUN}, rotate it"}})
    answer = upload(served, "mailgun", REAL.read_bytes() + line.encode() + b"\n")
    assert answer.status_code == 201
    served["jezero"]("run", "--connector", "uploads-laptop")
    files = [p for p in served["data"].rglob("*") if p.is_file()]
    assert [p.name for p in files if MAILGUN.encode() in p.read_bytes()] == []
