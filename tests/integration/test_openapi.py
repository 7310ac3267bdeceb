"""docs/design.md "HTTP API": the OpenAPI document at /api/v1/openapi.json is exact. It is valid OpenAPI 3.1;
every route declares each error it can answer (400, 401, 403, 404, 413, 422, 429) with the
one error schema, and the bodies the server sends match it (validation errors included);
every parameter is described, with its bounds; the upload body is declared. A client
generated from the document by openapi-python-client uploads a real transcript and searches
with nothing written by hand but the transport."""

import gzip
import importlib
import io
import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest
from django.test import Client as Browser
from openapi_spec_validator import validate

from library.access import clients, ratelimit
from library.ingest import inbox
from library.models import InboxSession
from library.terms import MAX_QUERY_CHARS, MAX_TERMS
from tests.conftest import days_ago, make_item, real_fixture

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
ERROR_REF = {"$ref": "#/components/schemas/ErrorOut"}
EVERY_ROUTE_ERRORS = {"401", "403", "422", "429"}   # each route checks a token and its scope, validates, counts


def token(name="reader", scopes="read", **options):
    return clients.create(name, sources="*", scopes=scopes, **options)[1]


def bearer(secret):
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


@pytest.fixture
def document(db):
    return Browser().get("/api/v1/openapi.json", **bearer(token("doc-reader"))).json()


def operations(document):
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield f"{method.upper()} {path}", operation


def test_the_document_is_valid_openapi_3_1(document):
    validate(document)   # raises on the first violation of the OpenAPI 3.1 schema
    assert document["openapi"] == "3.1.0"


def test_every_route_declares_the_errors_it_can_answer_with_the_one_error_schema(document):
    declared = {name: set(operation["responses"]) for name, operation in operations(document)}
    for name, statuses in declared.items():
        assert EVERY_ROUTE_ERRORS <= statuses, name
    assert "400" in declared["GET /api/v1/search"] and "400" in declared["GET /api/v1/timeline"]
    assert "404" in declared["GET /api/v1/items/{item_id}"] and "404" in declared["GET /api/v1/items/{item_id}/later"]
    assert "413" in declared["POST /api/v1/sessions"] and {"200", "201"} <= declared["POST /api/v1/sessions"]
    for name, operation in operations(document):
        for status, response in operation["responses"].items():
            if status.startswith("4"):
                assert response["content"] == {"application/json": {"schema": ERROR_REF}}, (name, status)
                assert response["description"] not in ("", "Unknown Status Code"), (name, status)
        assert "Retry-After" in operation["responses"]["429"]["headers"], name
    error = document["components"]["schemas"]["ErrorOut"]
    assert error["required"] == ["detail"] and error["properties"]["detail"]["type"] == "string"


def test_every_parameter_is_described_and_bounded(document, settings):
    top = settings.JEZERO["search"]["max_limit"]
    for name, operation in operations(document):
        for parameter in operation["parameters"]:
            assert parameter.get("description"), (name, parameter["name"])
            schema = parameter["schema"]
            if parameter["name"] == "limit":
                (bounded,) = [branch for branch in schema["anyOf"] if branch["type"] == "integer"]
                assert (bounded["minimum"], bounded["maximum"]) == (1, top), name
            if parameter["name"] == "item_id":
                assert schema["minimum"] == 1
            if parameter["name"] in ("since", "until"):
                assert schema["anyOf"][0]["pattern"].startswith(r"^\d{4}-\d{2}-\d{2}"), name
    search = dict(operations(document))["GET /api/v1/search"]
    q = next(p for p in search["parameters"] if p["name"] == "q")
    assert q["required"] and (q["schema"]["minLength"], q["schema"]["maxLength"]) == (1, MAX_QUERY_CHARS)
    for schema in ("SessionStartIn", "FirstPromptIn"):
        for field, spec in document["components"]["schemas"][schema]["properties"].items():
            assert spec.get("description"), (schema, field)


def test_the_upload_declares_its_body_encoding_and_parameters_as_the_inbox_checks_them(document):
    upload = dict(operations(document))["POST /api/v1/sessions"]
    body = upload["requestBody"]
    assert body["required"] and body["content"] == {
        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
    parameters = {p["name"]: p for p in upload["parameters"]}
    assert parameters["Content-Encoding"]["in"] == "header" and "gzip" in parameters["Content-Encoding"]["schema"]["enum"]
    assert parameters["agent"]["schema"]["enum"] == list(inbox.AGENTS)
    assert parameters["session_id"]["schema"]["pattern"] == inbox._SESSION_ID.pattern
    assert {"cwd", "git_remote", "git_branch", "project", "ended"} <= set(parameters)


# --- who may read the document and the docs page (docs/security.md) --------------------------

class _Assets(HTMLParser):
    """The scripts (src, type, inline text) and stylesheets of a page."""

    def __init__(self):
        super().__init__()
        self.scripts, self.styles, self._open = [], [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script":
            self._open = {"src": attrs.get("src"), "type": attrs.get("type"), "text": ""}
            self.scripts.append(self._open)
        elif tag == "link" and attrs.get("rel") == "stylesheet":
            self.styles.append(attrs["href"])
        elif tag == "style" or "style" in attrs:
            self.styles.append("inline")

    def handle_data(self, data):
        if self._open is not None:
            self._open["text"] += data.strip()

    def handle_endtag(self, tag):
        if tag == "script":
            self._open = None


def test_the_document_answers_anyone_and_the_docs_page_a_logged_in_person_or_a_client_token(db, django_user_model):
    anonymous = Browser()
    document = anonymous.get("/api/v1/openapi.json")   # a tool generates its client before it has a token
    assert document.status_code == 200 and document.json()["info"]["title"] == "Jezero"
    assert "jz_" not in document.content.decode()
    assert anonymous.get("/api/v1/docs")["Location"] == "/login/?next=/api/v1/docs"   # a person's page: log in
    for header in ("Bearer jz_123456789012_wrong", "Basic abc"):
        assert anonymous.get("/api/v1/docs", HTTP_AUTHORIZATION=header).status_code == 401, header
    uploader = token("laptop", scopes="upload", upload_source="uploads-laptop")   # its client is generated too
    assert anonymous.get("/api/v1/docs", **bearer(uploader)).status_code == 200
    person = Browser()
    person.force_login(django_user_model.objects.create_user("ana", password="pw-123456789"))
    assert person.get("/api/v1/openapi.json").json()["info"]["title"] == "Jezero"
    assert person.get("/api/v1/docs").status_code == 200


def test_the_docs_page_loads_swagger_ui_from_this_site_with_no_inline_script(db, django_user_model):
    """What the site's CSP (script-src 'self', style-src 'self') lets a browser run: files from
    /static/, a JSON data block, nothing inline and nothing from another host."""
    person = Browser()
    person.force_login(django_user_model.objects.create_user("ana", password="pw-123456789"))
    page = person.get("/api/v1/docs")
    assert "script-src 'self'" in page["Content-Security-Policy"]
    assets = _Assets()
    assets.feed(page.content.decode())
    sources = [script["src"] for script in assets.scripts if script["src"]]
    assert sources == ["/static/ninja/swagger-ui-bundle.js", "/static/ninja/swagger-ui-init.js"]
    assert assets.styles == ["/static/ninja/swagger-ui.css"]
    (data,) = [script for script in assets.scripts if not script["src"]]
    assert data["type"] == "application/json"          # data, never run
    config = json.loads(data["text"])
    assert config["url"] == "/api/v1/openapi.json" and config["validatorUrl"] is None   # no call to another host


# --- the bodies the server sends match the declared schema -----------------------------------

def _answers(settings):
    """(route as the document names it, response) for each kind of 4xx the API answers."""
    reader, uploader = token(), token("laptop", scopes="upload", upload_source="uploads-laptop")
    browser = Browser()

    def get(path, secret=reader, **params):
        return browser.get(path, params, **(bearer(secret) if secret else {}))

    def post(path, body, secret=reader, content_type="application/json", **headers):
        return browser.generic("POST", path, body, content_type=content_type, **bearer(secret), **headers)

    top = settings.JEZERO["search"]["max_limit"]
    search = "GET /api/v1/search"
    yield search, 400, "since", get("/api/v1/search", q="stripe", since="2026-02-30")
    yield search, 401, "token", get("/api/v1/search", None, q="stripe")
    yield search, 403, "read scope", get("/api/v1/search", uploader, q="stripe")
    yield search, 422, "limit", get("/api/v1/search", q="stripe", limit=0)
    yield search, 422, "limit", get("/api/v1/search", q="stripe", limit=top + 1)
    yield search, 422, "limit", get("/api/v1/search", q="stripe", limit="many")
    yield search, 422, "q", get("/api/v1/search")
    yield search, 400, f"at most {MAX_QUERY_CHARS:,} characters", get("/api/v1/search", q="x" * (MAX_QUERY_CHARS + 1))
    yield search, 422, "since", get("/api/v1/search", q="stripe", since="yesterday")
    yield "GET /api/v1/items/{item_id}", 404, "not found", get("/api/v1/items/424242")
    yield "GET /api/v1/items/{item_id}", 422, "item_id", get("/api/v1/items/0")
    yield "GET /api/v1/items/{item_id}/later", 400, "query", get(f"/api/v1/items/{make_item().id}/later",
                                                                 query=" ".join(f"w{n}" for n in range(MAX_TERMS + 1)))
    yield "GET /api/v1/timeline", 422, "until", get("/api/v1/timeline", until="soon")
    yield "POST /api/v1/hooks/first-prompt", 400, "body", post("/api/v1/hooks/first-prompt", b"{not json")
    yield "POST /api/v1/hooks/first-prompt", 422, "prompt", post("/api/v1/hooks/first-prompt", b"{}")
    settings.JEZERO_MAX_UPLOAD_BYTES = 1_000
    yield "POST /api/v1/sessions", 413, "larger than", post(
        "/api/v1/sessions?agent=claude_code&session_id=s1", gzip.compress(real_fixture("claude_7.jsonl").read_bytes()),
        uploader, "application/x-ndjson", HTTP_CONTENT_ENCODING="gzip")
    yield "POST /api/v1/sessions", 422, "agent", post("/api/v1/sessions?session_id=s1", b"", uploader)
    settings.JEZERO_API_RATE_PER_MINUTE = 1
    ratelimit.reset()
    get("/api/v1/timeline")
    yield "GET /api/v1/timeline", 429, "too many requests", get("/api/v1/timeline")
    ratelimit.reset()
    # Routes and methods that do not exist are JSON errors in the same shape.
    yield None, 404, "/api/v1/nope", get("/api/v1/nope")
    yield None, 404, "/api/v2/search", get("/api/v2/search", q="stripe")
    yield None, 405, "GET", post("/api/v1/search", b"{}")


@pytest.mark.django_db
def test_every_error_body_matches_the_one_declared_schema(document, settings):
    declared = dict(operations(document))
    schema = document["components"]["schemas"]["ErrorOut"]
    seen = set()
    for route, status, named, response in _answers(settings):
        where = f"{route or 'no route'} {status}"
        assert response.status_code == status, (where, response.content)
        assert response["Content-Type"].startswith("application/json"), where
        body = response.json()
        jsonschema.validate(body, schema)          # {"detail": "<a string>"} and nothing else required
        assert named.lower() in body["detail"].lower(), (where, body)
        if route:
            assert str(status) in declared[route]["responses"], f"{where} is answered but not declared"
        seen.add(status)
        if status == 405:
            assert response["Allow"] == "GET"
        if status == 429:
            assert 1 <= int(response["Retry-After"]) <= 60
        if status == 401:
            assert response["WWW-Authenticate"] == "Bearer"
    assert seen == {400, 401, 403, 404, 405, 413, 422, 429}


# --- a client generated from the document ---------------------------------------------------

GENERATOR_CONFIG = """\
post_hooks: []
"""


@pytest.fixture
def generated(tmp_path, document):
    """The package openapi-python-client generates from the served document, imported."""
    pytest.importorskip("openapi_python_client", reason="openapi-python-client is not installed: pip install -e '.[test]'")
    (tmp_path / "openapi.json").write_text(json.dumps(document))
    (tmp_path / "generator.yaml").write_text(GENERATOR_CONFIG)
    run = subprocess.run([str(GENERATOR), "generate", "--path", str(tmp_path / "openapi.json"), "--meta", "none",
                          "--output-path", str(tmp_path / "generated_jezero_api"), "--config", str(tmp_path / "generator.yaml")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Warning" not in run.stdout + run.stderr, run.stdout + run.stderr   # nothing of the document skipped
    sys.path.insert(0, str(tmp_path))
    try:
        yield lambda name: importlib.import_module(f"generated_jezero_api.{name}")
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name.split(".")[0] == "generated_jezero_api"]:
            del sys.modules[name]


@pytest.mark.django_db(transaction=True)   # the client calls Django as a WSGI server would, outside the test's transaction
def test_a_client_generated_from_the_document_uploads_a_real_transcript_and_searches(generated):
    import httpx
    from django.core.handlers.wsgi import WSGIHandler

    secret = token("laptop", scopes="read,upload", upload_source="uploads-laptop")
    client = generated("client").AuthenticatedClient(
        base_url="http://testserver", token=secret, httpx_args={"transport": httpx.WSGITransport(app=WSGIHandler())})
    models, types = generated("models"), generated("types")
    upload = generated("api.devices.upload_session")
    transcript = real_fixture("claude_7.jsonl").read_bytes()

    answer = upload.sync_detailed(
        client=client, body=types.File(payload=io.BytesIO(gzip.compress(transcript)), file_name="session.jsonl.gz"),
        agent=models.UploadSessionAgent("claude_code"), session_id="2b4ed4c0",
        cwd="/home/ana/src/claude-p", ended=True,
        content_encoding=models.UploadSessionContentEncoding("gzip"))
    assert answer.status_code == 201, answer.content
    receipt = answer.parsed
    assert isinstance(receipt, models.UploadReceipt)
    assert (receipt.source, receipt.session_id, receipt.agent, receipt.version) == (
        "uploads-laptop", "2b4ed4c0", "claude_code", 1)
    assert receipt.entries > 3
    row = InboxSession.objects.get()
    assert (row.source, row.session_id, row.ended, row.hints["cwd"]) == (
        "uploads-laptop", "2b4ed4c0", True, "/home/ana/src/claude-p")

    make_item(title="Stripe webhook signature failure", source="agent-laptop", key="agent-laptop:1",
              occurred_at=days_ago(1))
    search = generated("api.read.search_items")
    found = search.sync(client=client, q="stripe webhook", limit=5)
    assert isinstance(found, models.SearchOut)
    assert [row.title for row in found.results] == ["Stripe webhook signature failure"]
    refused = search.sync(client=client, q="stripe", limit=0)   # the generated client sends it; the server says why
    assert isinstance(refused, models.ErrorOut) and refused.detail.startswith("limit:")
