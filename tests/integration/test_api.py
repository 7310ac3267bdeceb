"""docs/design.md "Access", "HTTP API": the JSON API with client tokens — auth, scopes, source isolation, errors,
and device uploads (bad input changes nothing)."""

import gzip
import json
from pathlib import Path

import pytest
from django.test import Client as Browser

from library.access import clients
from library.models import InboxSession
from tests.conftest import days_ago, make_item

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / "tests" / "fixtures" / "real"   # real public transcripts (SOURCES.md there)


@pytest.fixture
def library():
    return {
        "agent": make_item(title="Stripe webhook signature failure", source="agent-laptop", key="agent-laptop:1",
                           project="shop-site", occurred_at=days_ago(10)),
        "agent_newer": make_item(title="Stripe webhook secret rotated", source="agent-laptop", key="agent-laptop:2",
                                 project="shop-site", occurred_at=days_ago(2)),
        "mail": make_item(title="Stripe invoice from the accountant", source="mail-home", key="mail-home:1",
                          project="shop-site", trust="external", occurred_at=days_ago(1)),
    }


def token_for(name="agent", sources="agent-*", scopes="read", upload_source="", **options):
    return clients.create(name, sources=sources, scopes=scopes, upload_source=upload_source, **options)[1]


def get(path, token=None, **params):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return Browser().get(path, params, **headers)


def post(path, token, body=b"", content_type="application/json", **headers):
    extra = {"HTTP_AUTHORIZATION": f"Bearer {token}", **headers}
    return Browser().generic("POST", path, body, content_type=content_type, **extra)


@pytest.mark.parametrize("header", [None, "Bearer nope", "Bearer jz_123456789012_wrong", "Basic abc"])
def test_no_or_a_bad_token_is_401_with_detail(library, header):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    response = Browser().get("/api/v1/search", {"q": "stripe"}, **extra)
    assert response.status_code == 401
    assert response.json() == {"detail": "missing or invalid token"}


def test_a_revoked_token_stops_working(library):
    token = token_for()
    assert get("/api/v1/search", token, q="stripe").status_code == 200
    clients.revoke("agent")
    assert get("/api/v1/search", token, q="stripe").status_code == 401


def test_a_token_is_stored_only_as_a_hash_and_last_use_is_recorded(library):
    from library.models import Client

    token = token_for()
    row = Client.objects.get(name="agent")
    assert token not in json.dumps([row.token_id, row.token_hash, row.sources, row.scopes])
    assert row.last_used_at is None
    get("/api/v1/search", token, q="stripe")
    row.refresh_from_db()
    assert row.last_used_at is not None


def test_a_client_sees_only_its_sources_on_every_route(library):
    token = token_for(sources="agent-*")
    found = get("/api/v1/search", token, q="stripe", limit=50).json()["results"]
    assert {r["source"] for r in found} == {"agent-laptop"}
    assert get(f"/api/v1/items/{library['mail'].id}", token).status_code == 404
    assert get(f"/api/v1/items/{library['mail'].id}/later", token).status_code == 404
    assert get("/api/v1/timeline", token, source="mail-home").json()["results"] == []
    later = get(f"/api/v1/items/{library['agent'].id}/later", token).json()
    assert library["mail"].id not in [r["id"] for r in later["results"]]
    start = post("/api/v1/hooks/session-start", token, json.dumps({"cwd": "/home/ana/src/shop-site"})).json()
    assert "accountant" not in start["context"] and "Stripe webhook secret rotated" in start["context"]
    prompt = post("/api/v1/hooks/first-prompt", token, json.dumps({"prompt": "stripe invoice accountant"})).json()
    assert "accountant" not in prompt["context"]


def test_search_reports_matched_in_and_a_snippet_and_takes_records_only(library):
    make_item(title="Webhook retries", source="agent-laptop", key="agent-laptop:3",
              original="user: stripe retries the webhook with exponential backoff for three days")
    token = token_for(sources="agent-*")
    found = get("/api/v1/search", token, q="backoff").json()
    assert [(r["key"], r["matched_in"]) for r in found["results"]] == [("agent-laptop:3", ["original"])]
    assert "exponential backoff for three days" in found["results"][0]["snippet"]
    assert get("/api/v1/search", token, q="backoff", records_only="true").json()["results"] == []
    spec = Browser().get("/api/v1/openapi.json", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    params = [p["name"] for p in spec["paths"]["/api/v1/search"]["get"]["parameters"]]
    assert "records_only" in params


def test_a_client_with_no_sources_sees_nothing(library):
    token = token_for(sources="", no_sources=True)   # made so on purpose: refused otherwise
    assert get("/api/v1/search", token, q="stripe").json()["results"] == []
    assert get(f"/api/v1/items/{library['agent'].id}", token).status_code == 404


def test_read_routes_answer_like_the_cli(library):
    token = token_for(sources="*")
    item = get(f"/api/v1/items/{library['mail'].id}", token).json()
    assert item["trust"] == "external" and "original" not in item
    assert "original" in get(f"/api/v1/items/{library['mail'].id}", token, include_original="true").json()
    later = get(f"/api/v1/items/{library['agent'].id}/later", token).json()
    assert later["matched_by"] in ("subject", "project_timeline") and later["heading"].startswith("NEWER")
    assert [r["id"] for r in get("/api/v1/timeline", token, project="shop-site").json()["results"]] == [
        library["mail"].id, library["agent_newer"].id, library["agent"].id]


def test_bad_query_parameters_are_a_400_or_422_whose_detail_names_them(library, settings):
    """Outside the declared shape (a pattern, a bound): 422; in it but not a real date: 400."""
    token = token_for()
    response = get("/api/v1/search", token, q="stripe", since="yesterday")
    assert response.status_code == 422 and response.json()["detail"].startswith("since: String should match pattern")
    response = get("/api/v1/search", token, q="stripe", since="2026-02-30")
    assert response.status_code == 400 and "since" in response.json()["detail"]
    top = settings.JEZERO["search"]["max_limit"]
    for limit in (0, -5, top + 1, 1000):   # refused with what is allowed, never silently changed
        response = get("/api/v1/search", token, q="stripe", limit=limit)
        assert response.status_code == 422, limit
        assert response.json()["detail"] in (f"limit: Input should be less than or equal to {top}",
                                             "limit: Input should be greater than or equal to 1")
    assert len(get("/api/v1/search", token, q="stripe", limit=top).json()["results"]) == 2
    assert get("/api/v1/items/424242", token).json() == {"detail": "item 424242 not found"}


def test_a_read_only_client_cannot_upload_and_an_upload_client_needs_read_to_search(library):
    reader = token_for("reader", scopes="read")
    response = post("/api/v1/sessions?agent=claude_code&session_id=s1", reader, b"{}", "application/x-ndjson")
    assert response.status_code == 403 and "upload scope" in response.json()["detail"]
    uploader = token_for("uploader", scopes="upload", upload_source="uploads-laptop")
    assert get("/api/v1/search", uploader, q="stripe").status_code == 403


def test_the_openapi_document_lists_the_routes():
    spec = Browser().get("/api/v1/openapi.json", HTTP_AUTHORIZATION=f"Bearer {token_for()}").json()
    assert {"/api/v1/search", "/api/v1/items/{item_id}", "/api/v1/items/{item_id}/later", "/api/v1/timeline",
            "/api/v1/sessions", "/api/v1/hooks/session-start", "/api/v1/hooks/first-prompt"} <= set(spec["paths"])


# --- uploads ---------------------------------------------------------------------------------

@pytest.fixture
def uploader():
    return token_for("laptop", sources="*", scopes="read,upload", upload_source="uploads-laptop")


def transcript():
    return (SHARED / "claude_7.jsonl").read_bytes()


def upload(token, body, gzipped=False, **params):
    params = {"agent": "claude_code", "session_id": "2b4ed4c0", **params}
    query = "&".join(f"{k}={v}" for k, v in params.items())
    headers = {"HTTP_CONTENT_ENCODING": "gzip"} if gzipped else {}
    return post(f"/api/v1/sessions?{query}", token, body, "application/x-ndjson", **headers)


def test_an_upload_is_parsed_redacted_and_stored_without_the_raw_text(uploader):
    secret = "ghp_" + "Zq3LkP9vRt6XwY2mNb8cJd5HfG1sAe7UiO4T"
    body = transcript() + json.dumps({"type": "user", "uuid": "x1", "parentUuid": None, "sessionId": "2b4ed4c0",
                                      "timestamp": "2026-01-23T18:00:00Z",
                                      "message": {"role": "user", "content": f"use token {secret} now"}}).encode()
    response = upload(uploader, gzip.compress(body), gzipped=True, cwd="/home/ana/src/claude-p", ended="true")
    assert response.status_code == 201, response.content
    assert response.json()["version"] == 1 and response.json()["entries"] > 3
    row = InboxSession.objects.get()
    assert (row.source, row.session_id, row.agent, row.ended) == ("uploads-laptop", "2b4ed4c0", "claude_code", True)
    stored = json.dumps([row.entries, row.hints])
    assert secret not in stored and "[REDACTED:github-token]" in stored
    assert "tool_use_id" not in stored and '"type": "user"' not in stored  # dialogue only, never the raw lines
    assert row.hints["cwd"] == "/home/ana/src/claude-p"
    again = upload(uploader, body)                                  # the same transcript again: kept as it is
    assert again.status_code == 200 and not again.json()["stored"] and again.json()["version"] == 1
    grown = body + b"\n" + json.dumps({"type": "user", "uuid": "x2", "parentUuid": "x1", "sessionId": "2b4ed4c0",
                                        "timestamp": "2026-01-23T18:05:00Z",
                                        "message": {"role": "user", "content": "one more thing"}}).encode()
    later = upload(uploader, grown)                                 # the session grew: it replaces the copy
    assert later.status_code == 200 and later.json()["replaced"] and later.json()["version"] == 2
    assert InboxSession.objects.count() == 1 and InboxSession.objects.get().ended  # an ended session stays ended


@pytest.mark.parametrize(("case", "status", "detail"), [
    ("oversize", 413, "larger than"),
    ("truncated gzip", 422, "gzip"),
    ("not gzip", 422, "gzip"),
    ("invalid utf-8", 422, "not UTF-8"),
    ("not a transcript", 422, "no claude_code transcript"),
    ("empty", 422, "empty"),
    ("bad agent", 422, "agent"),
    ("bad session id", 422, "session_id"),
])
def test_bad_uploads_get_a_clear_status_and_store_nothing(settings, uploader, case, status, detail):
    body, gzipped, params = transcript(), False, {}
    if case == "oversize":
        settings.JEZERO_MAX_UPLOAD_BYTES = 10_000
        body, gzipped = gzip.compress(body), True       # small on the wire, too big once inflated
    elif case == "truncated gzip":
        body, gzipped = gzip.compress(body)[:-40], True
    elif case == "not gzip":
        gzipped = True
    elif case == "invalid utf-8":
        body = body[:500] + b"\xff\xfe" + body[500:]
    elif case == "not a transcript":
        body = b"hello, this is a letter\nnot json at all\n"
    elif case == "empty":
        body = b""
    elif case == "bad agent":
        params = {"agent": "notepad"}
    elif case == "bad session id":
        params = {"session_id": "../../etc"}
    response = upload(uploader, body, gzipped=gzipped, **params)
    assert response.status_code == status, response.content
    assert detail in response.json()["detail"]
    assert InboxSession.objects.count() == 0


def test_a_failed_re_upload_keeps_the_earlier_version(uploader):
    assert upload(uploader, transcript()).status_code == 201
    assert upload(uploader, b"garbage\n").status_code == 422
    assert InboxSession.objects.get().version == 1


def test_uploads_become_items_through_the_upload_connector(settings, uploader):
    from jezero_site.config import validate
    from library.ingest import pipeline
    from library.models import Item

    settings.JEZERO = {**settings.JEZERO, "connectors": validate({"connectors": [
        {"name": "uploads-laptop", "type": "upload", "settle_minutes": 0}]})["connectors"]}
    upload(uploader, transcript(), cwd="/home/ana/src/claude-p", project="Claude P")
    report = pipeline.run("uploads-laptop")
    assert report.units_stored == 1
    item = Item.objects.get()
    assert item.source == "uploads-laptop" and item.key.startswith("uploads-laptop:2b4ed4c0#")
    assert item.project == "claude-p"
    assert pipeline.run("uploads-laptop").units_changed == 0      # cursor = inbox version
    upload(uploader, transcript())                                 # the same transcript again: not stored
    assert pipeline.run("uploads-laptop").units_changed == 0
    upload(uploader, transcript() + b"\n" + json.dumps({           # the session grew: a new version
        "type": "user", "uuid": "x9", "parentUuid": None, "sessionId": "2b4ed4c0", "timestamp": "2026-01-23T19:00:00Z",
        "message": {"role": "user", "content": "thanks, that settles it"}}).encode())
    assert pipeline.run("uploads-laptop").units_changed == 1


def test_an_upload_is_read_at_once_unless_its_connector_settles_running_sessions(uploader):
    """The upload connector made for the client reads a session as soon as it arrives
    (settle_minutes 0 for uploads: a device sends once a turn at most, and Codex never says a
    session ended); a connector given settle_minutes leaves a running session (the Stop hook's
    upload) for a later run, and reads it once the agent said it ended (SessionEnd)."""
    from library.ingest import configured, pipeline
    from library.models import Item

    assert configured.find("uploads-laptop")["settle_minutes"] == 0
    upload(uploader, transcript(), ended="false")
    assert pipeline.run("uploads-laptop").units_stored == 1
    Item.objects.all().delete()

    configured.edit("uploads-laptop", {"settle_minutes": 30})
    upload(uploader, transcript() + b"\n", ended="false")
    assert pipeline.run("uploads-laptop").units_settling == 1 and not Item.objects.exists()
    upload(uploader, transcript() + b"\n", ended="true")       # the same transcript, now final
    report = pipeline.run("uploads-laptop")
    assert report.units_stored == 1 and Item.objects.filter(source="uploads-laptop").exists()


@pytest.mark.parametrize("path", ["/api/v1/hooks/session-start", "/api/v1/hooks/first-prompt",
                                  "/api/v1/sessions?agent=claude_code&session_id=s1"])
@pytest.mark.parametrize("header", [None, "Bearer wrong"])
def test_a_post_without_a_valid_token_is_401_not_a_csrf_403(path, header):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    response = Browser(enforce_csrf_checks=True).generic("POST", path, b"{}", content_type="application/json", **extra)
    assert response.status_code == 401
    assert response.json() == {"detail": "missing or invalid token"}


def test_a_logged_in_person_can_read_through_the_api(library, people):
    browser = Browser()
    browser.force_login(people["plain"])   # reads every source
    assert browser.get("/api/v1/search", {"q": "stripe", "limit": 50}).json()["results"].__len__() == 3


def test_a_client_over_its_rate_limit_gets_429_with_retry_after(library, settings):
    from library.access import ratelimit

    settings.JEZERO_API_RATE_PER_MINUTE = 3
    ratelimit.reset()
    busy, calm = token_for("busy"), token_for("calm")
    assert [get("/api/v1/search", busy, q="stripe").status_code for _ in range(3)] == [200, 200, 200]
    limited = get("/api/v1/search", busy, q="stripe")
    assert limited.status_code == 429
    assert limited.json()["detail"].startswith("too many requests")
    assert 1 <= int(limited["Retry-After"]) <= 60
    assert get("/api/v1/search", calm, q="stripe").status_code == 200  # counted per client
    ratelimit.reset()


def test_the_sliding_window_forgets_old_requests():
    from library.access.ratelimit import RateLimited, SlidingWindow

    window = SlidingWindow()
    for second in (0, 10, 20):
        window.check("a", 3, now=second)
    with pytest.raises(RateLimited) as caught:
        window.check("a", 3, now=30)
    assert caught.value.retry_after == 30
    window.check("a", 3, now=61)  # the request at 0 s has left the window
    window.check("b", 0, now=61)  # 0 means no limit
