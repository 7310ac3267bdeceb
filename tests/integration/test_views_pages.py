"""The pages every person uses (docs/design.md "The web app"): search, item, timeline, projects — with a staff user,
a plain user and an anonymous visitor; query counts that do not grow with the library; and
stored text that can never become markup."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.conftest import days_ago, make_item

pytestmark = pytest.mark.django_db


def as_person(client, user):
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def library():
    return {
        "decision": make_item(title="Keep analytics behind the consent banner", summary="Kept GA behind consent.",
                              project="shop-site", source="agent-laptop", key="agent-laptop:1",
                              atoms=[{"kind": "decision", "text": "keep GA behind consent"},
                                     {"kind": "risk", "text": "consent banner may block checkout"},
                                     {"kind": "command", "text": "npm run test:consent"}],
                              questions=["Do we keep Google Analytics?"], occurred_at=days_ago(100),
                              original="user: should we keep analytics?"),
        "reversal": make_item(title="Remove the analytics script; the consent banner stays", project="shop-site",
                              source="agent-laptop", key="agent-laptop:2", occurred_at=days_ago(10)),
        "mail": make_item(title="Invoice for the analytics agency", project="shop-site", source="mail-home",
                          key="mail-home:1", trust="external", occurred_at=days_ago(5)),
    }


PAGES = ["/", "/?q=analytics", "/timeline/", "/timeline/?project=shop-site", "/projects/"]


@pytest.mark.parametrize("path", PAGES + ["/items/1/"])
def test_anonymous_visitors_are_sent_to_the_login_page(client, library, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


@pytest.mark.parametrize("who", ["staff", "plain"])
@pytest.mark.parametrize("path", PAGES)
def test_people_can_read_every_page(client, people, library, who, path):
    response = as_person(client, people[who]).get(path)
    assert response.status_code == 200
    assert "Keep analytics" in response.content.decode() or path == "/projects/"


def test_login_with_the_username_and_password_fields(client, people):
    people["plain"].set_password("pw-tomas-123456")
    people["plain"].save()
    response = client.post("/login/", {"username": "tomas", "password": "pw-tomas-123456"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200
    client.logout()
    bad = client.post("/login/", {"username": "tomas", "password": "nope"})
    assert bad.status_code == 200 and "did not match" in bad.content.decode()


def test_search_shows_results_with_badges_snippets_and_keeps_the_query_in_the_url(client, people, library):
    page = as_person(client, people["plain"]).get("/", {"q": "analytics consent", "project": "shop-site"}).content.decode()
    assert page.index("Keep analytics behind the consent banner") < page.index("Invoice for the analytics agency")
    assert "<mark>" in page                                   # highlighted snippet
    assert 'class="badge external"' in page                   # the mail item is marked external
    assert 'value="analytics consent"' in page                # the query stays in the form (and the URL)
    assert '<option value="shop-site" selected>' in page


def test_search_filters_by_source_and_since(client, people, library):
    c = as_person(client, people["plain"])
    assert "Invoice for the analytics agency" not in c.get("/", {"q": "analytics", "source": "agent-laptop"}).content.decode()
    since = days_ago(20).date().isoformat()
    page = c.get("/", {"q": "analytics", "since": since}).content.decode()
    assert "Remove the analytics script" in page and "Keep analytics behind" not in page
    assert "is not an ISO 8601" in c.get("/", {"q": "analytics", "since": "last week"}).content.decode()


def test_an_empty_query_lists_the_newest_items(client, people, library):
    page = as_person(client, people["plain"]).get("/").content.decode()
    titles = re.findall(r'class="title" href="/items/\d+/">([^<]+)<', page)
    assert titles[0] == "Invoice for the analytics agency"


def test_search_pages(client, people):
    for n in range(45):
        make_item(title=f"heron count {n}", occurred_at=days_ago(n))
    c = as_person(client, people["plain"])
    first = c.get("/", {"q": "heron"}).content.decode()
    assert first.count('class="title"') == 20 and "page=2" in first
    third = c.get("/", {"q": "heron", "page": 3}).content.decode()
    assert third.count('class="title"') == 5 and "page=4" not in third


def test_a_query_of_short_words_says_why_there_is_nothing(client, people, library):
    assert "Nothing to search for" in as_person(client, people["plain"]).get("/", {"q": "a an"}).content.decode()
    page = as_person(client, people["plain"]).get("/", {"q": "a an", "records_only": "1"}).content.decode()
    assert "three characters or more" in page


def test_the_item_page_shows_everything_and_the_later_panel(client, people, library):
    item = library["decision"]
    page = as_person(client, people["plain"]).get(f"/items/{item.id}/").content.decode()
    assert "Kept GA behind consent." in page and "Do we keep Google Analytics?" in page
    assert '<li class="decision"><code>keep GA behind consent</code></li>' in page
    assert '<li class="risk"><code>consent banner may block checkout</code></li>' in page
    assert "NEWER ON THIS SUBJECT" in page or "NEWER IN THIS PROJECT (by date, not by subject)" in page
    assert "Remove the analytics script" in page
    assert "user: should we keep analytics?" not in page
    assert "user: should we keep analytics?" in as_person(client, people["plain"]).get(
        f"/items/{item.id}/?original=1").content.decode()
    assert "Staff actions" not in page
    assert "Staff actions" in as_person(client, people["staff"]).get(f"/items/{item.id}/").content.decode()


def test_a_missing_item_is_a_404_page(client, people):
    response = as_person(client, people["plain"]).get("/items/4242/")
    assert response.status_code == 404 and "no item 4242" in response.content.decode()


def test_projects_list_counts_and_latest_dates(client, people, library):
    make_item(title="Backups", project="home-server", occurred_at=days_ago(1))
    page = as_person(client, people["plain"]).get("/projects/").content.decode()
    assert page.index("home-server") < page.index("shop-site")
    assert re.search(r"shop-site</a></td><td>3</td><td>" + days_ago(5).date().isoformat(), page)


def test_stored_text_renders_as_text_never_markup(client, people):
    evil = make_item(title='<script>alert("t")</script> \ue000boom\ue001 <mark>x</mark>',
                     summary='<img src=x onerror=alert(1)> analytics', atoms=[{"kind": "fact", "text": "<script>a()</script>"}])
    c = as_person(client, people["plain"])
    for path in ("/?q=alert", "/", f"/items/{evil.id}/", "/timeline/"):
        page = c.get(path).content.decode()
        assert "<script>alert" not in page and "<img src=x" not in page, path
        assert "&lt;script&gt;" in page, path
    search = c.get("/", {"q": "boom"}).content.decode()
    assert "&lt;mark&gt;x&lt;/mark&gt;" in search or "&lt;mark&gt;" in search


def _queries(client, path):
    with CaptureQueriesContext(connection) as captured:
        assert client.get(path).status_code == 200
    return len(captured)


@pytest.mark.parametrize("path", ["/", "/?q=heron", "/timeline/", "/projects/"])
def test_list_pages_do_not_grow_their_query_count_with_the_library(client, people, path):
    c = as_person(client, people["plain"])
    for n in range(3):
        make_item(title=f"heron {n}", project=f"p{n}", occurred_at=days_ago(n))
    few = _queries(c, path)
    for n in range(3, 40):
        make_item(title=f"heron {n}", project=f"p{n}", source=f"s{n % 5}", key=f"s{n % 5}:{n}", occurred_at=days_ago(n))
    assert _queries(c, path) == few
