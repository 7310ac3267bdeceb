"""Choosing a model from the browser alone (docs/design.md "Configuration as data"), against a real `jezero serve` and
`jezero worker` and the fake model server on loopback spoken to by the real `anthropic` SDK:
a person switches the summariser to anthropic with a key typed into the Settings page, tests
it (one call, its record shown), runs a connector, and finds an item that model wrote. The
key is never shown again and the worker was not restarted.

The screenshot docs/img/settings-summarizer.png (docs/operations.md, "Choose a model") is
taken here.
"""

import os
import re
import time

import pytest

from tests.e2e.browser import Site, chromium_missing, doc_screenshot, staff_page
from tests.fakes.model_server import ModelServer, anthropic_tool_reply

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install -e '.[test]'")
expect = sync_api.expect
expect.set_options(timeout=15_000)

_NO_BROWSER = chromium_missing()
pytestmark = pytest.mark.skipif(_NO_BROWSER is not None, reason=_NO_BROWSER or "")

ADMIN_PASSWORD = "e2e-settings-password-7h2k"
KEY = "sk-ant-e2e-typed-in-the-page-0000-abcdwxyz"
NOTE = """# Renew the car insurance

The insurer's letter says the policy ends on 31 January. Compared three offers; the
cheapest keeps the same excess. Decided to switch and cancel the old policy by post.
"""
SAMPLE_RECORD = {
    "title": "Month-end date test fixed",
    "summary": "A calendar test failed at a month's end. It now adds a timedelta. The tests pass.",
    "questions": ["Why did the date test fail?", "How is tomorrow computed?", "Which command runs the test?"],
    "atoms": [{"kind": "command", "text": "pytest tests/test_calendar.py"}],
    "project": None,
}
NOTE_RECORD = {
    "title": "Car insurance switched to the cheaper offer",
    "summary": "The car insurance ends on 31 January. Three offers were compared. The cheapest was chosen.",
    "questions": ["When does the car insurance end?", "Which insurance offer was chosen?",
                  "How is the old policy cancelled?"],
    "atoms": [{"kind": "decision", "text": "Switch to the cheapest offer with the same excess."}],
    "project": None,
}


@pytest.fixture(scope="module")
def model():
    server = ModelServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("settings")
    notes = tmp / "notes"
    notes.mkdir()
    site = Site(tmp, JEZERO_ADMIN_PASSWORD=ADMIN_PASSWORD)
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY_FILE"):
        site.env.pop(name, None)
    site.jezero("init")
    # A week between scheduled runs, and its last run before the note existed: the worker's
    # five-minute tick (library.tasks) must not store the note before the test's "Run now"
    # does (it did, in CI, whenever the tick fell inside the test).
    site.jezero("connector", "add", "markdown", "notes-home", "--path", str(notes), "--interval-minutes", "10080")
    site.jezero("run", "--connector", "notes-home")
    note = notes / "insurance.md"
    note.write_text(NOTE)
    old = time.time() - 2 * 86_400
    os.utime(note, (old, old))
    site.start()
    yield site
    site.stop()


@pytest.fixture(scope="module")
def page(site):
    with staff_page(site.url, ADMIN_PASSWORD, viewport={"width": 1100, "height": 900}) as page:
        yield page


def test_a_person_chooses_a_model_with_a_key_tests_it_and_finds_an_item_it_wrote(page, site, model):
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Settings")
    expect(page.locator("#f-provider-from")).to_contain_text("extractive — from default")

    # A mistake first: a provider without a model is named beside the field, and nothing is saved.
    page.get_by_label("Provider").select_option("anthropic")
    page.get_by_label("API key").fill(KEY)
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#f-model-error")).to_have_text("required for provider anthropic")
    expect(page.get_by_label("API key")).to_have_value("")          # a typed key is never sent back

    page.get_by_label("Model").fill("claude-fake")
    page.get_by_label("Base url").fill(model.url)
    page.get_by_label("API key").fill(KEY)
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status").filter(has_text="Saved. The summariser is anthropic (claude-fake)")).to_be_visible()
    expect(page.locator("#f-provider-from")).to_contain_text("anthropic — from set here")
    expect(page.get_by_text("set — ends in …wxyz")).to_be_visible()
    assert KEY not in page.content()
    doc_screenshot(page, "settings-summarizer")

    model.script(anthropic_tool_reply(SAMPLE_RECORD, input_tokens=180, output_tokens=60))
    page.get_by_role("button", name="Test the summariser").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Summariser test")
    expect(page.get_by_role("heading", name=SAMPLE_RECORD["title"])).to_be_visible(timeout=60_000)
    expect(page.get_by_text("anthropic:claude-fake wrote this record of the test sample")).to_be_visible()
    doc_screenshot(page, "settings-summarizer-test")
    request = model.requests[-1]
    assert (request.headers.get("x-api-key") or request.headers["authorization"].removeprefix("Bearer ")) == KEY

    # The worker, started before the change, uses the model at its next run.
    model.script(anthropic_tool_reply(NOTE_RECORD))
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Sources", exact=True).click()
    page.get_by_role("region", name="notes-home").get_by_role("button", name="Run now").click()
    expect(page.get_by_text(re.compile(r"^Stored 1 unit"))).to_be_visible(timeout=60_000)
    page.goto("/")
    page.get_by_role("searchbox", name=re.compile("Words")).fill("insurance")
    page.get_by_role("button", name="Search", exact=True).click()
    page.get_by_role("link", name=NOTE_RECORD["title"]).click()
    expect(page.get_by_text("anthropic:claude-fake")).to_be_visible()
    assert len(model.requests) == 2
    assert KEY not in site.log("serve") + site.log("worker")
