"""The API's interactive docs (docs/design.md "HTTP API") in headless Chromium against a real `jezero serve`:
under the site's own content security policy and with no network but loopback, a logged-in
person sees Swagger UI list every operation and runs a search from it; an anonymous visitor
is sent to the login page. Swagger UI's files come from this server (django-ninja ships
them), so nothing is blocked, nothing is fetched from another host and no script errs."""

import json
import re

import pytest

from tests.e2e.browser import Site, chromium_missing, launch, screenshot, write_jsonl

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install -e '.[test]'")
expect = sync_api.expect

_NO_BROWSER = chromium_missing()
pytestmark = pytest.mark.skipif(_NO_BROWSER is not None, reason=_NO_BROWSER or "")

PASSWORD = "e2e-docs-password-4k2m"
OPERATIONS = [("GET", "/api/v1/search"), ("GET", "/api/v1/items/{item_id}"), ("GET", "/api/v1/items/{item_id}/later"),
              ("GET", "/api/v1/timeline"), ("POST", "/api/v1/sessions"), ("POST", "/api/v1/hooks/session-start"),
              ("POST", "/api/v1/hooks/first-prompt")]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("api-docs")
    site = Site(tmp, JEZERO_ADMIN_PASSWORD=PASSWORD)
    site.jezero("init")        # collects the static files, Swagger UI's among them
    records = [{"key": "gunicorn", "title": "Gunicorn worker timeout behind nginx", "project": "shop-site",
                "summary": "Raised the gunicorn timeout to 60 s; nginx proxy_read_timeout matches.",
                "occurred_at": "2026-11-20T10:00:00Z"}]
    site.jezero("import-jsonl", str(write_jsonl(tmp / "records.jsonl", records)), "--source", "agent-desk")
    site.start()
    yield site
    site.stop()


@pytest.fixture
def page(site):
    """A fresh page that records what the browser refused, fetched elsewhere or failed to run."""
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(base_url=site.url, viewport={"width": 1280, "height": 900})
        context.set_default_timeout(15_000)
        page = context.new_page()
        page.problems = []
        page.on("pageerror", lambda error: page.problems.append(f"script error: {error}"))
        # Console errors: CSP violations and failed loads. The login page has no icon, so the
        # browser asks for /favicon.ico (a 404 that has nothing to do with the docs).
        page.on("console", lambda message: page.problems.append(f"console: {message.text} {message.location['url']}")
                if message.type == "error" and not message.location["url"].endswith("/favicon.ico") else None)
        page.on("request", lambda request: None if request.url.startswith(site.url) or request.url.startswith("data:")
                else page.problems.append(f"request to another host: {request.url}"))
        page.on("requestfailed", lambda request: page.problems.append(f"failed: {request.url} {request.failure}"))
        page.on("response", lambda response: page.problems.append(f"{response.status}: {response.url}")
                if response.status >= 400 else None)
        yield page
        context.close()
        browser.close()


def log_in(page, next_path):
    page.goto(next_path)
    expect(page).to_have_url(re.compile(r"/login/\?next="))
    page.get_by_label("User name").fill("admin")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()


def test_a_logged_in_person_sees_every_operation_and_runs_a_search_from_the_docs(page, site):
    log_in(page, "/api/v1/docs")          # anonymous: the login page first, then back to the docs
    expect(page).to_have_url(f"{site.url}/api/v1/docs")
    expect(page.get_by_role("heading", name=re.compile(r"^Jezero"))).to_be_visible()
    for method, path in OPERATIONS:
        operation = page.locator(f".opblock-{method.lower()}").filter(
            has=page.locator(f'.opblock-summary-path[data-path="{path}"]'))
        expect(operation).to_have_count(1)
    screenshot(page, "api-docs")

    search = page.locator(".opblock-get").filter(has=page.locator('[data-path="/api/v1/search"]'))
    search.locator(".opblock-summary").click()
    expect(search.get_by_text("Two to five distinctive words", exact=False)).to_be_visible()
    search.get_by_role("button", name="Try it out").click()
    search.get_by_placeholder("q", exact=True).fill("gunicorn timeout")
    search.get_by_role("button", name="Execute").click()
    live = search.locator(".live-responses-table")
    expect(live.locator("tbody .response-col_status")).to_have_text("200")
    body = json.loads(live.locator("tbody .response-col_description pre").first.inner_text())
    assert [hit["title"] for hit in body["results"]] == ["Gunicorn worker timeout behind nginx"]
    assert page.problems == []


def test_the_docs_page_sends_an_anonymous_visitor_to_log_in(page):
    page.goto("/api/v1/docs")
    expect(page).to_have_url(re.compile(r"/login/\?next=/api/v1/docs$"))
    expect(page.get_by_role("heading", name="Log in to Jezero")).to_be_visible()
    assert page.problems == []
