"""The web app end to end (docs/design.md "The web app"): a real `jezero serve` and `jezero worker` with a small
seeded library and one Claude Code connector, driven through headless Chromium by a person who
logs in, searches, reads, runs a dry run, makes a client and looks at the agent view.

Locators are roles and labels, so every test is also a small accessibility check: a field
without a label or a button without a name cannot be found. Screenshots of the main pages go
to test-artifacts/screenshots/ for a person to look at.
"""

import os
import re
import shutil
import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.e2e.browser import REPO, Site, chromium_missing, launch, screenshot, write_jsonl

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install -e '.[test]'")
expect = sync_api.expect
expect.set_options(timeout=10_000)

_NO_BROWSER = chromium_missing()
pytestmark = pytest.mark.skipif(_NO_BROWSER is not None, reason=_NO_BROWSER or "")

ADMIN_PASSWORD = "e2e-admin-password-7f3k"
SESSION = REPO / "tests" / "fixtures" / "real" / "claude_7.jsonl"
SESSION_ID = "2b4ed4c0-b905-41de-9238-273db3ec737a"
PHONE = {"width": 375, "height": 812}
DESKTOP = {"width": 1280, "height": 900}

KEEP = "Keep analytics behind the consent banner"
REMOVE = "Remove the analytics script; the consent banner stays"
INVOICE = "Invoice for the analytics agency"
EVIL = "Escaping check <script>alert(1)</script> in a title"


def _records():
    """Dates relative to today, so the recency boost ranks them the same on any day."""
    now = datetime.now(UTC).replace(microsecond=0)

    def ago(days):
        return (now - timedelta(days=days)).isoformat().replace("+00:00", "Z")

    own = [
        {"key": "keep", "title": KEEP, "project": "shop-site", "occurred_at": ago(200),
         "summary": "Decided to keep Google Analytics, loaded only after the visitor accepts the consent banner.",
         "questions": ["Do we keep Google Analytics on the shop?"],
         "atoms": [{"kind": "decision", "text": "keep GA behind the consent banner"},
                   {"kind": "risk", "text": "the consent banner may hide the checkout button on phones"},
                   {"kind": "command", "text": "npm run test:consent"}],
         "original": "user: should we keep analytics on the shop?\nassistant: keep it, behind consent."},
        {"key": "remove", "title": REMOVE, "project": "shop-site", "occurred_at": ago(100),
         "summary": "Reversed the earlier decision: Google Analytics is gone, visits are counted server-side.",
         "atoms": [{"kind": "decision", "text": "remove GA and count visits server-side"}]},
        {"key": "backups", "title": "Restic backups to Backblaze at 03:30", "project": "home-server",
         "summary": "Moved the nightly backups off the USB disk.", "occurred_at": ago(80),
         "atoms": [{"kind": "command", "text": "restic -r b2:home backup /srv"}]},
        {"key": "evil", "title": EVIL, "project": "web-lab", "occurred_at": ago(70),
         "summary": "A title with markup <img src=x onerror=alert(2)> must show as text.",
         "atoms": [{"kind": "fact", "text": "<script>alert(3)</script>"}]},
    ]
    # Unrelated work, so that the words above are rare enough for BM25 to rank by.
    for n, title in enumerate(["Rotate the Postgres password on the VPS", "Upgrade Node to 22 on the build box",
                               "Fix the flaky login test", "Move DNS from Gandi to deSEC",
                               "Tune the ZFS ARC size on the NAS", "Write the tenancy agreement summary",
                               "Replace the router firmware with OpenWrt", "Plan the kitchen shelf measurements"]):
        own.append({"key": f"other-{n}", "title": title, "summary": f"{title}: notes.",
                    "project": "home-server" if n % 2 else None, "occurred_at": ago(90 + 7 * n)})
    mail = [{"key": "invoice", "title": INVOICE, "project": "shop-site", "occurred_at": ago(30),
             "summary": "The agency billed the analytics and consent setup for the shop."}]
    return own, mail


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    site = Site(tmp, JEZERO_ADMIN_PASSWORD=ADMIN_PASSWORD)
    site.jezero("init")
    sessions = tmp / "sessions"
    sessions.mkdir()
    with (site.data / "jezero.toml").open("a") as config:
        # A week between scheduled runs: the worker must not ingest the session during the tests.
        config.write(f'\n[[connectors]]\nname = "agent-laptop"\ntype = "claude_code"\npath = "{sessions}"\n'
                     "interval_minutes = 10080\n")
    site.jezero("run", "--connector", "agent-laptop")  # the last scheduled run, before the session existed
    if SESSION.exists():  # a real Claude Code session, settled two days ago
        session = sessions / "-src-x" / f"{SESSION_ID}.jsonl"
        session.parent.mkdir()
        shutil.copyfile(SESSION, session)
        two_days_ago = time.time() - 2 * 86400
        os.utime(session, (two_days_ago, two_days_ago))

    own, mail = _records()
    site.jezero("import-jsonl", str(write_jsonl(tmp / "own.jsonl", own)), "--source", "agent-desk")
    site.jezero("import-jsonl", str(write_jsonl(tmp / "mail.jsonl", mail)), "--source", "mail-home",
                "--trust", "external")
    site.start()
    yield site
    site.stop()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


def log_in(page, password=ADMIN_PASSWORD):
    page.get_by_label("User name").fill("admin")
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()


@pytest.fixture(scope="module")
def staff_session(browser, site):
    """The cookies of a logged-in admin, so that each test starts logged in."""
    context = browser.new_context(base_url=site.url)
    page = context.new_page()
    page.goto("/login/")
    log_in(page)
    expect(page.get_by_role("button", name="Log out admin")).to_be_visible()
    state = context.storage_state()
    context.close()
    return state


class Tab:
    """A page in its own browser context, and what went wrong on it: alert/confirm/prompt
    dialogs and uncaught JavaScript errors."""

    def __init__(self, browser, site, **options):
        self.context = browser.new_context(base_url=site.url, **options)
        self.context.set_default_timeout(10_000)
        self.page = self.context.new_page()
        self.dialogs, self.errors = [], []
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))


@pytest.fixture
def open_tab(browser, site, staff_session):
    """`open_tab(logged_in=True, viewport=DESKTOP, **context_options)` → a Tab; each is closed
    after the test, which fails if a page raised a JavaScript error."""
    tabs = []

    def open_(logged_in=True, viewport=DESKTOP, **options):
        tab = Tab(browser, site, storage_state=staff_session if logged_in else None, viewport=viewport, **options)
        tabs.append(tab)
        return tab

    yield open_
    for tab in tabs:
        tab.context.close()
    errors = [error for tab in tabs for error in tab.errors]
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture
def tab(open_tab):
    """A logged-in admin at a desktop size."""
    return open_tab()


def nav(page, name):
    page.get_by_role("navigation", name="Main").get_by_role("link", name=name, exact=True).click()


def test_a_person_logs_in_and_searches_one_project(open_tab, site):
    """Log in through the form, search with a project filter: ranked results, highlighted
    snippets, the external badge, and a URL that can be shared."""
    tab = open_tab(logged_in=False)
    page = tab.page
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/$"))
    expect(page.get_by_role("heading", name="Log in to Jezero")).to_be_visible()
    log_in(page, password="not-the-password")
    expect(page.get_by_role("alert")).to_contain_text("did not match")
    log_in(page)

    expect(page).to_have_url(f"{site.url}/")
    expect(page.get_by_role("heading", name="Search the library")).to_be_visible()
    page.get_by_role("searchbox", name=re.compile("Words")).fill("consent banner")
    page.get_by_label("Project", exact=True).select_option("shop-site")
    page.get_by_role("button", name="Search", exact=True).click()

    expect(page).to_have_url(re.compile(r"/\?q=consent\+banner&project=shop-site"))
    expect(page.locator(".results .title")).to_have_text([KEEP, REMOVE, INVOICE])
    expect(page.get_by_text("3 results for")).to_be_visible()
    marks = page.locator(".results .snippet mark")
    expect(marks.first).to_be_visible()
    assert {m.lower() for m in marks.all_inner_texts()} <= {"consent", "banner"}
    invoice = page.get_by_role("listitem").filter(has=page.get_by_role("link", name=INVOICE))
    expect(invoice.get_by_text("external", exact=True)).to_be_visible()
    keep = page.get_by_role("listitem").filter(has=page.get_by_role("link", name=KEEP))
    expect(keep.get_by_text("own", exact=True)).to_be_visible()
    # The form shows what was asked, so a reload or a shared link gives the same page.
    expect(page.get_by_role("searchbox")).to_have_value("consent banner")
    expect(page.get_by_label("Project", exact=True)).to_have_value("shop-site")
    screenshot(page, "search-results")
    # Words only said in the session, not in its record: found there, and shown why.
    page.get_by_role("searchbox", name=re.compile("Words")).fill("shop behind")
    page.get_by_label("Project", exact=True).select_option("")
    page.get_by_role("button", name="Search", exact=True).click()
    keep = page.get_by_role("listitem").filter(has=page.get_by_role("link", name=KEEP))
    expect(keep.get_by_text(re.compile("found in .*what was said"))).to_be_visible()
    expect(keep.locator(".snippet.said mark").first).to_be_visible()
    screenshot(page, "search-what-was-said")
    page.get_by_label("Records only").check()
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page).to_have_url(re.compile(r"records_only=1"))
    expect(page.get_by_text("in the records only")).to_be_visible()
    assert not tab.dialogs


def test_an_item_shows_its_atoms_the_newer_work_and_the_original(tab):
    """The item page groups the atoms, marks decisions, points to the later reversal, and shows
    the original text only on request."""
    page = tab.page
    page.goto("/?q=consent+banner&project=shop-site")
    page.get_by_role("link", name=KEEP).click()

    expect(page.get_by_role("heading", level=1)).to_have_text(KEEP)
    expect(page.get_by_text("Decided to keep Google Analytics")).to_be_visible()
    expect(page.get_by_text("Do we keep Google Analytics on the shop?")).to_be_visible()
    for heading in ("Decision", "Risk", "Command"):
        expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()
    decision = page.locator(".atoms li.decision")
    expect(decision).to_have_text("keep GA behind the consent banner")
    plain = page.locator(".atoms li").filter(has_text="npm run test:consent")
    assert _background(decision) != _background(plain), "a decision looks like any other atom"

    later = page.get_by_role("region", name=re.compile(r"NEWER ON THIS SUBJECT|NEWER IN THIS PROJECT"))
    expect(later).to_be_visible()
    expect(later.get_by_role("heading")).to_have_text(
        re.compile(r"^(NEWER ON THIS SUBJECT|NEWER IN THIS PROJECT \(by date, not by subject\))$"))
    expect(later.get_by_role("link", name=REMOVE)).to_be_visible()

    original = "user: should we keep analytics on the shop?"
    expect(page.get_by_text(original)).to_have_count(0)
    page.get_by_role("link", name=re.compile("Show the original")).click()
    expect(page.get_by_text(original)).to_be_visible()
    screenshot(page, "item")

    later.get_by_role("link", name=REMOVE).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(REMOVE)


def _background(locator):
    return locator.first.evaluate("el => getComputedStyle(el).backgroundColor")


def test_a_dry_run_from_the_sources_page_shows_what_a_run_would_send(tab):
    """Staff start a dry run on a connector and, once the worker has done it, see how many
    documents, characters and estimated tokens a real run would send — nothing stored."""
    page = tab.page
    page.goto("/")
    nav(page, "Sources")
    expect(page.get_by_role("heading", level=1)).to_have_text("Sources")
    connector = page.get_by_role("region", name="agent-laptop")
    expect(connector).to_contain_text("claude_code")
    expect(connector.get_by_role("table")).to_contain_text("0 seen")  # the run before the session existed
    connector.get_by_role("button", name="Dry run").click()

    # The job page follows the worker (htmx every second) until the job is done.
    expect(page.get_by_role("heading", level=1)).to_have_text("Dry run of agent-laptop")
    sentence = page.get_by_text(re.compile(r"^A run would send"))
    expect(sentence).to_be_visible(timeout=30_000)
    found = re.search(r"send (\d+) documents?, (\d+) characters, about (\d+) tokens", sentence.inner_text())
    assert found, sentence.inner_text()
    documents, characters, tokens = map(int, found.groups())
    assert documents == 1 and characters > 1000 and 0 < tokens < characters, found.group(0)
    expect(sentence).to_contain_text("Nothing was sent or stored.")
    screenshot(page, "sources-dry-run")

    page.get_by_role("link", name="Back to Sources").click()
    expect(page.get_by_role("region", name="agent-laptop").get_by_role("table")).to_contain_text("dry run")
    expect(page.get_by_role("region", name="agent-laptop")).to_contain_text("0 units known")  # no cursor moved
    page.goto("/timeline/?source=agent-laptop")
    expect(page.locator(".results .title")).to_have_count(0)  # and nothing was stored


def test_a_new_clients_token_is_shown_once(tab, site):
    """Creating a client shows its token and a ready `claude mcp add` line once; reloading,
    the list and going back never show it again."""
    page = tab.page
    page.goto("/")
    nav(page, "Clients")
    expect(page.get_by_role("heading", level=1)).to_have_text("Clients")
    page.get_by_label(re.compile(r"^Name")).fill("laptop-e2e")
    page.get_by_label(re.compile(r"^Allowed sources")).fill("agent-*")
    page.get_by_role("checkbox", name="read", exact=True).check()
    page.get_by_role("button", name=re.compile(r"^Create")).click()

    expect(page.get_by_role("heading", level=1)).to_have_text("Client laptop-e2e created")
    expect(page.get_by_role("alert")).to_contain_text("shown only this once")
    token = page.locator("#token").inner_text().strip()
    assert re.fullmatch(r"jz_\w+_[\w-]{20,}", token), token
    expect(page.get_by_text(re.compile(r"^claude mcp add"))).to_have_text(
        f'claude mcp add --transport http jezero {site.url}/mcp --header "Authorization: Bearer {token}"')
    screenshot(page, "client-token")

    page.reload()  # a reload sends the form again; the name is taken now, so no new token either
    page.wait_for_load_state()
    assert token not in page.content()
    nav(page, "Clients")
    expect(page.get_by_role("row").filter(has=page.get_by_role("link", name="laptop-e2e"))).to_contain_text("agent-*")
    assert token not in page.content()
    page.go_back()
    assert token not in page.content()


def test_the_agent_view_shows_what_both_hooks_would_inject(tab):
    """Choose a project and type a first message: the session-start text (protocol and the
    project's newest items) and the first-prompt text, as an agent would receive them."""
    page = tab.page
    page.goto("/")
    nav(page, "Agent view")
    page.get_by_label("Project", exact=True).select_option("shop-site")
    page.get_by_label(re.compile(r"first message|prompt", re.I)).fill("Should we keep the analytics consent banner?")
    page.get_by_role("button", name=re.compile(r"show|preview|inject", re.I)).click()

    main = page.locator("main")
    expect(main).to_contain_text("Jezero is this team's library of past work")  # the protocol
    expect(main).to_contain_text(re.compile(r"\[\d+\] \d{4}-\d\d-\d\d " + re.escape(INVOICE)))  # newest first
    expect(main).to_contain_text(re.compile(r"\[\d+\] \d{4}-\d\d-\d\d " + re.escape(KEEP)))
    expect(main).to_contain_text("These may be related to this request")  # the first-prompt frame
    expect(main).not_to_contain_text("Restic backups")  # another project
    screenshot(page, "agent-view")


def test_timeline_and_projects_link_to_each_other_and_fit_a_phone(tab, open_tab, site):
    """Projects lists each project with its count and links to its timeline, newest first;
    every main page fits a 375-pixel-wide phone without sideways scrolling."""
    page = tab.page
    page.goto("/")
    nav(page, "Projects")
    expect(page.get_by_role("heading", level=1)).to_have_text("Projects")
    shop = page.get_by_role("row").filter(has=page.get_by_role("link", name="shop-site", exact=True))
    expect(shop.get_by_role("cell")).to_have_text(["shop-site", "3", re.compile(r"^\d{4}-\d\d-\d\d$")])
    screenshot(page, "projects")
    shop.get_by_role("link", name="shop-site").click()

    expect(page.get_by_role("heading", level=1)).to_have_text("Timeline of shop-site")
    expect(page.locator(".results .title")).to_have_text([INVOICE, REMOVE, KEEP])
    screenshot(page, "timeline")
    nav(page, "Projects")
    expect(page).to_have_url(f"{site.url}/projects/")

    phone = open_tab(viewport=PHONE, is_mobile=True, has_touch=True)
    for path in ("/?q=consent+banner", "/timeline/", "/projects/", "/items/1/", "/sources/", "/clients/",
                 "/agent-view/?project=shop-site&prompt=analytics+consent+banner"):
        phone.page.goto(path)
        width = phone.page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{path} is {width}px wide on a {PHONE['width']}px phone"
    phone.page.goto("/?q=consent+banner")
    expect(phone.page.get_by_role("searchbox")).to_be_visible()
    screenshot(phone.page, "phone-search")


def test_markup_in_a_title_is_shown_as_text_and_never_runs(tab):
    """A stored `<script>` shows as the text it is, on the result list and the item page."""
    page = tab.page
    page.goto("/?q=escaping+check")
    link = page.get_by_role("link", name=EVIL)
    expect(link).to_be_visible()
    page.goto("/?q=onerror")
    expect(page.locator(".results .snippet")).to_contain_text("onerror=alert")
    expect(page.locator(".results img")).to_have_count(0)
    page.goto("/?q=escaping+check")
    link.click()
    expect(page.get_by_role("heading", level=1)).to_have_text(EVIL)
    expect(page.get_by_text("A title with markup <img src=x onerror=alert(2)> must show as text.")).to_be_visible()
    expect(page.locator(".atoms")).to_contain_text("<script>alert(3)</script>")
    page.wait_for_load_state("load")
    assert page.locator("main script").count() == 0
    assert tab.dialogs == []
