"""Connecting agents' folders and devices from the browser alone (docs/design.md "Configuration as data"), against a real
`jezero serve` and `jezero worker`: a person adds a Claude Code connector from the folders
mounted under JEZERO_SOURCES_DIR and a Markdown one by choosing its type, tests each (a dry
run lists what a run would read), runs them and finds their items in search; then makes a
client that uploads, a device uploads a real transcript with its token, and after the next
run the upload is an item. Nothing is typed into a file or a shell.

The screenshots these tests take are the ones docs/operations.md shows (docs/img/).
"""

import json
import os
import re
import shutil
import time
import urllib.request

import pytest

from tests.e2e.browser import REPO, Site, chromium_missing, doc_screenshot, staff_page

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install -e '.[test]'")
expect = sync_api.expect
expect.set_options(timeout=15_000)

_NO_BROWSER = chromium_missing()
pytestmark = pytest.mark.skipif(_NO_BROWSER is not None, reason=_NO_BROWSER or "")

ADMIN_PASSWORD = "e2e-connectors-password-4q9z"
REAL = REPO / "tests" / "fixtures" / "real"
NOTES = REPO / "tests" / "fixtures" / "markdown" / "board" / "notes"
UPLOAD_SESSION = "03eb5929-52b3-4b13-ada3-b93ae35806b8"   # claude_6.jsonl
VIEWPORT = {"width": 1100, "height": 760}


def _aged(folder):
    """Every file under `folder` last modified two days ago: settled, as old sessions are."""
    old = time.time() - 2 * 86_400
    for path in folder.rglob("*"):
        os.utime(path, (old, old))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("connectors")
    mounted = tmp / "sources"   # what the compose file mounts read-only at /sources
    project = mounted / "claude-code" / "-home-ana-src-jezero"
    project.mkdir(parents=True)
    shutil.copyfile(REAL / "claude_7.jsonl", project / "2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl")
    shutil.copytree(NOTES, mounted / "notes", ignore=shutil.ignore_patterns(".*"))
    _aged(mounted)
    site = Site(tmp, JEZERO_ADMIN_PASSWORD=ADMIN_PASSWORD, JEZERO_SOURCES_DIR=str(mounted))
    site.mounted = mounted
    site.jezero("init")
    site.start()
    yield site
    site.stop()


@pytest.fixture(scope="module")
def page(site):
    with staff_page(site.url, ADMIN_PASSWORD, viewport=VIEWPORT) as page:
        yield page


def sources(page):
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Sources", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Sources")


def run_now(page, name):
    """Run now on the Sources page, then wait on the job page until the worker is done."""
    sources(page)
    page.get_by_role("region", name=name).get_by_role("button", name="Run now").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Run of {name}")
    done = page.get_by_text(re.compile(r"^Stored \d+ units?"))
    expect(done).to_be_visible(timeout=60_000)
    return int(re.match(r"Stored (\d+)", done.inner_text()).group(1))


def search(page, words, source):
    page.goto("/")
    page.get_by_role("searchbox", name=re.compile("Words")).fill(words)
    page.get_by_label("Source", exact=True).select_option(source)
    page.get_by_role("button", name="Search", exact=True).click()
    return page.locator(".results li")


def test_a_person_connects_agent_folders_tests_and_runs_them_and_finds_their_items(page, site):
    """Claude Code from a mounted folder (offered with its probable type), Markdown by type."""
    sources(page)
    expect(page.get_by_text("No connectors yet.")).to_be_visible()
    page.get_by_role("link", name="Add connector").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Add a connector")
    claude = f"{site.mounted}/claude-code"
    found = page.get_by_role("row").filter(has_text=claude)
    expect(found.get_by_role("cell").nth(1)).to_have_text("claude_code")
    expect(page.get_by_role("row").filter(has_text=f"{site.mounted}/notes").get_by_role("cell").nth(1)).to_have_text(
        "markdown")
    doc_screenshot(page, "connectors-add")

    found.get_by_role("link", name=f"Add {claude} as claude_code").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Add a claude_code connector")
    expect(page.get_by_label("Name")).to_have_value("agent-claude-code")
    expect(page.get_by_label("Path", exact=True)).to_have_value(claude)
    page.get_by_label("Interval minutes").fill("0")
    page.get_by_role("button", name="Add connector").click()
    expect(page.locator("#f-interval_minutes-error")).to_have_text("0 is out of range (allowed 1–10,080)")
    expect(page.get_by_label("Interval minutes")).to_have_attribute("aria-invalid", "true")
    doc_screenshot(page, "connectors-form-error")
    page.get_by_label("Interval minutes").fill("60")
    page.get_by_role("button", name="Add connector").click()

    expect(page.get_by_role("status").filter(has_text="Added agent-claude-code.")).to_be_visible()
    connector = page.get_by_role("region", name="agent-claude-code")
    expect(connector).to_contain_text("Added in the web app or the CLI")
    expect(connector).to_contain_text("every 60 min")
    connector.get_by_role("button", name="Test (dry run)").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Dry run of agent-claude-code")
    expect(page.get_by_text(re.compile(r"^A run would send 1 document"))).to_be_visible(timeout=60_000)
    expect(page.get_by_role("list").filter(has_text="2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl")).to_be_visible()
    doc_screenshot(page, "connectors-test")

    assert run_now(page, "agent-claude-code") == 1
    results = search(page, "WebSearch Haiku", "agent-claude-code")
    expect(results).to_have_count(1)
    doc_screenshot(page, "connectors-search")

    # A Markdown folder, by choosing the type: the path is typed (with the mounted folders offered).
    sources(page)
    page.get_by_role("link", name="Add connector").click()
    page.get_by_role("link", name="markdown", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Add a markdown connector")
    page.get_by_label("Name").fill("notes-home")
    page.get_by_label("Path", exact=True).fill(f"{site.mounted}/notes")
    page.get_by_role("button", name="Add connector").click()
    expect(page.get_by_role("region", name="notes-home")).to_contain_text("markdown")
    assert run_now(page, "notes-home") == 2
    results = search(page, "payouts bank", "notes-home")
    expect(results.first).to_contain_text("Meeting with the bank")

    # Disable, then remove it: its items stay.
    sources(page)
    page.get_by_role("region", name="notes-home").get_by_role("button", name="Disable").click()
    expect(page.get_by_role("region", name="notes-home")).to_contain_text("disabled")
    page.get_by_role("region", name="notes-home").scroll_into_view_if_needed()
    doc_screenshot(page, "connectors-sources")
    page.get_by_role("region", name="notes-home").get_by_role("link", name="Remove…").click()
    expect(page.get_by_text("2 items stay")).to_be_visible()
    page.get_by_role("button", name="Remove notes-home").click()
    expect(page.get_by_role("status").filter(has_text="Removed notes-home. Its 2 items stay")).to_be_visible()
    expect(page.get_by_role("region", name="notes-home")).to_have_count(0)
    expect(search(page, "payouts bank", "").first).to_contain_text("Meeting with the bank")

    listing = json.loads(site.jezero("connector", "list", "--json"))["connectors"]
    assert [(c["name"], c["origin"]) for c in listing] == [("agent-claude-code", "database")]


def test_a_device_uploads_with_its_token_and_the_upload_becomes_an_item(page, site):
    """A client with the upload scope gets its upload connector at once; an upload lands in
    its inbox and, after the next run, is an item."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Clients", exact=True).click()
    page.get_by_label(re.compile(r"^Name")).fill("phone")
    page.get_by_role("checkbox", name="read", exact=True).uncheck()
    page.get_by_role("checkbox", name="upload", exact=True).check()
    doc_screenshot(page, "devices-client")
    page.get_by_role("button", name=re.compile(r"^Create")).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Client phone created")
    expect(page.get_by_text("uploads land in uploads-phone")).to_be_visible()
    token = page.locator("#token").inner_text().strip()

    body = (REAL / "claude_6.jsonl").read_bytes()
    request = urllib.request.Request(
        f"{site.url}/api/v1/sessions?agent=claude_code&session_id={UPLOAD_SESSION}&ended=true", data=body,
        method="POST", headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201
        assert json.loads(response.read())["source"] == "uploads-phone"

    sources(page)
    uploads = page.get_by_role("region", name="uploads-phone")
    expect(uploads).to_contain_text("upload")
    expect(uploads).to_contain_text("1 uploaded session")
    # Uploads settle for 30 minutes by default (a session may still grow); this device's don't.
    uploads.get_by_role("link", name="Edit").click()
    page.get_by_text("More options").click()
    page.get_by_label("Settle minutes").fill("0")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("region", name="uploads-phone")).to_contain_text("units settle for 0 min")
    page.get_by_role("region", name="uploads-phone").scroll_into_view_if_needed()
    doc_screenshot(page, "devices-inbox")

    assert run_now(page, "uploads-phone") == 1
    page.goto("/?q=&source=uploads-phone")
    expect(page.locator(".results li")).to_have_count(1)
    doc_screenshot(page, "devices-item")
