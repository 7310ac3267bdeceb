"""Each person sees their own, in a browser (docs/design.md "People"): a real `jezero
serve` with three sources, a person made with `jezero user add` and limited to one of them,
who logs in through headless Chromium and finds only that source on search, an item by id,
the later panel, the timeline, projects and the agent view; and a staff user who adds, narrows
and deactivates a person on the Users page.

Locators are roles and labels, as in test_browser.py. Screenshots go to
test-artifacts/screenshots/.
"""

import json
import re
import subprocess
from datetime import UTC, datetime, timedelta

import pytest

from tests.e2e.browser import JEZERO, Site, chromium_missing, launch, screenshot, write_jsonl

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install -e '.[test]'")
expect = sync_api.expect
expect.set_options(timeout=10_000)

_NO_BROWSER = chromium_missing()
pytestmark = pytest.mark.skipif(_NO_BROWSER is not None, reason=_NO_BROWSER or "")

ADMIN_PASSWORD = "e2e-admin-password-9q2m"
LENA_PASSWORD = "lena-bakes-on-sundays-4"
KIM_PASSWORD = "kim-reads-the-mail-8"

FEEDING = "Sourdough starter feeding schedule"       # lena's, older
HYDRATION = "Sourdough hydration raised to 75 %"      # lena's, newer, same subject
OVEN = "Sourdough oven temperature lowered"           # tomas's, newest, same subject
THERAPY = "Therapy appointment moved to Thursday"     # the household's mail


def _ago(days):
    return (datetime.now(UTC).replace(microsecond=0) - timedelta(days=days)).isoformat().replace("+00:00", "Z")


def _record(key, title, project, days, summary):
    return {"key": key, "title": title, "project": project, "occurred_at": _ago(days), "summary": summary}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("people")
    site = Site(tmp, JEZERO_ADMIN_PASSWORD=ADMIN_PASSWORD)
    site.jezero("init")
    sources = {
        "agent-lena": [_record("feed", FEEDING, "kitchen", 40, "Feed the sourdough starter twice a day."),
                       _record("water", HYDRATION, "kitchen", 20, "Raised the sourdough hydration for an open crumb.")],
        "agent-tomas": [_record("oven", OVEN, "kitchen", 5, "Lowered the oven for the sourdough loaf.")],
        "mail-home": [_record("therapy", THERAPY, "health", 2, "The therapy appointment moved to Thursday.")],
    }
    for source, records in sources.items():
        site.jezero("import-jsonl", str(write_jsonl(tmp / f"{source}.jsonl", records)), "--source", source)
    added = subprocess.run([str(JEZERO), "user", "add", "lena", "--sources", "agent-lena", "--password-stdin"],
                           env=site.env, input=LENA_PASSWORD + "\n", capture_output=True, text=True, timeout=60)
    assert added.returncode == 0 and added.stdout == "user lena: sources agent-lena\n", added.stderr
    site.ids = {hit["title"]: hit["id"] for hit in json.loads(site.jezero("timeline", "--json"))["results"]}
    site.start()
    yield site
    site.stop()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def log_in(browser, site):
    """`log_in(user, password)` → a page in its own browser context, logged in; every context
    is closed after the test, which fails if a page raised a JavaScript error."""
    contexts, errors = [], []

    def open_(user, password):
        context = browser.new_context(base_url=site.url, viewport={"width": 1100, "height": 900})
        context.set_default_timeout(10_000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto("/login/")
        page.get_by_label("User name").fill(user)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("button", name=f"Log out {user}")).to_be_visible()
        return page

    yield open_
    for context in contexts:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def nav(page, name):
    page.get_by_role("navigation", name="Main").get_by_role("link", name=name, exact=True).click()


def titles(page):
    return page.locator(".results .title")


def choices(page, label):
    """The non-empty option values of the select labelled `label`."""
    options = page.get_by_label(label, exact=True).locator("option").evaluate_all("els => els.map(e => e.value)")
    return [value for value in options if value]


def test_a_person_limited_to_one_source_sees_only_it_on_every_page(log_in, site):
    page = log_in("lena", LENA_PASSWORD)

    # Search: her two items, and lists that name only her source and its project.
    page.get_by_role("searchbox", name=re.compile("Words")).fill("sourdough")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(titles(page)).to_have_text([HYDRATION, FEEDING])
    expect(page.get_by_text("2 results for")).to_be_visible()
    assert choices(page, "Source") == ["agent-lena"]
    assert choices(page, "Project") == ["kitchen"]
    screenshot(page, "person-search")
    page.goto("/?q=therapy")
    expect(page.get_by_text("No results.")).to_be_visible()

    # An item outside her source, by id: the page a missing id gets.
    for title in (OVEN, THERAPY):
        response = page.goto(f"/items/{site.ids[title]}/")
        assert response.status == 404
        expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
        expect(page.get_by_text(f"There is no item {site.ids[title]}.")).to_be_visible()
        expect(page.locator("main")).not_to_contain_text(title)

    # Her older item: the later panel points to her newer work, never to Tomas's newer still.
    page.goto(f"/items/{site.ids[FEEDING]}/")
    expect(page.get_by_role("heading", level=1)).to_have_text(FEEDING)
    later = page.get_by_role("region", name=re.compile(r"NEWER ON THIS SUBJECT|NEWER IN THIS PROJECT"))
    expect(later.get_by_role("link", name=HYDRATION)).to_be_visible()
    expect(later).not_to_contain_text(OVEN)
    screenshot(page, "person-item")

    # Timeline and projects: hers only, counted as hers.
    nav(page, "Timeline")
    expect(titles(page)).to_have_text([HYDRATION, FEEDING])
    assert choices(page, "Source") == ["agent-lena"]
    page.goto("/timeline/?source=mail-home")
    expect(titles(page)).to_have_count(0)
    expect(page.get_by_text("Nothing in this period.")).to_be_visible()
    nav(page, "Projects")
    expect(page.get_by_role("row")).to_have_count(2)   # the heading row and kitchen
    kitchen = page.get_by_role("row").filter(has=page.get_by_role("link", name="kitchen", exact=True))
    expect(kitchen.get_by_role("cell")).to_have_text(["kitchen", "2", re.compile(r"^\d{4}-\d\d-\d\d$")])
    screenshot(page, "person-projects")

    # The agent view injects what an agent with her sources would get.
    nav(page, "Agent view")
    assert choices(page, "Project") == ["kitchen"]
    page.get_by_label("Project", exact=True).select_option("kitchen")
    page.get_by_label("First message").fill("the sourdough oven temperature and hydration")
    page.get_by_role("button", name="Show what would be injected").click()
    start = page.locator("#session-start")
    expect(start).to_contain_text(HYDRATION)
    expect(start).to_contain_text(FEEDING)
    expect(page.locator("main")).not_to_contain_text(OVEN)
    screenshot(page, "person-agent-view")

    # Staff pages are not hers.
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Users")).to_have_count(0)
    page.goto("/users/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Staff only")


def test_staff_add_narrow_and_deactivate_a_person_on_the_users_page(log_in, site):
    staff = log_in("admin", ADMIN_PASSWORD)
    nav(staff, "Users")
    expect(staff.get_by_role("heading", level=1)).to_have_text("Users")
    lena = staff.get_by_role("row").filter(has=staff.get_by_role("link", name="lena", exact=True))
    expect(lena).to_contain_text("agent-lena")
    admin = staff.get_by_role("row").filter(has=staff.get_by_role("link", name="admin", exact=True))
    expect(admin).to_contain_text("every source (staff)")

    staff.get_by_label("Name", exact=True).fill("kim")
    staff.get_by_label(re.compile(r"^Allowed sources")).fill("mail-home")
    staff.get_by_label("Password", exact=True).fill(KIM_PASSWORD)
    staff.get_by_role("button", name="Add the user").click()
    expect(staff.get_by_role("heading", level=1)).to_have_text("User kim")
    expect(staff.get_by_role("status")).to_contain_text("Added kim: reads mail-home.")
    expect(staff.get_by_text("Reads today: mail-home.")).to_be_visible()
    screenshot(staff, "users-person")

    kim = log_in("kim", KIM_PASSWORD)
    expect(titles(kim)).to_have_text([THERAPY])

    # Narrowed to the agents' sessions: from kim's next page on.
    staff.get_by_label(re.compile(r"^Allowed sources")).fill("agent-*")
    staff.get_by_role("button", name="Save").click()
    expect(staff.get_by_role("status")).to_contain_text("Saved kim: reads agent-*.")
    expect(staff.get_by_text("Reads today: agent-lena, agent-tomas.")).to_be_visible()
    kim.reload()
    expect(titles(kim)).to_have_text([OVEN, HYDRATION, FEEDING])
    response = kim.goto(f"/items/{site.ids[THERAPY]}/")
    assert response.status == 404

    # A mistake is named and changes nothing.
    staff.get_by_label(re.compile(r"^Allowed sources")).fill("agent-* mail-*")
    staff.get_by_role("button", name="Save").click()
    expect(staff.locator(".messages")).to_contain_text("'agent-* mail-*' is not a source name or glob")
    staff.goto("/users/kim/")
    expect(staff.get_by_text("Reads today: agent-lena, agent-tomas.")).to_be_visible()

    # Deactivated: kim's open session ends at the next page.
    staff.goto("/users/kim/")
    staff.get_by_role("link", name="Deactivate kim…").click()
    expect(staff.get_by_role("heading", level=1)).to_have_text("Deactivate kim?")
    staff.get_by_role("button", name="Deactivate kim").click()
    expect(staff.get_by_role("status")).to_contain_text("Deactivated kim")
    kim_row = staff.get_by_role("row").filter(has=staff.get_by_role("link", name="kim", exact=True))
    expect(kim_row).to_contain_text("deactivated")
    screenshot(staff, "users")
    kim.goto("/")
    expect(kim).to_have_url(re.compile(r"/login/\?next=/$"))
