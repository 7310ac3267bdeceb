"""Each person sees their own (docs/design.md "People"): a person limited to one source
finds only it on every page — search and its lists, an item by id, the later panel, the
timeline, projects, the agent view, the sources page, the API read through the browser —
staff see everything, users from before migration 0015 keep everything; the Users page and
`jezero user` manage who reads what."""

import io
import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client as Browser
from django.test.utils import CaptureQueriesContext

from library.access import clients, people
from library.errors import BadInput, NotFound
from library.filters import parse_globs
from library.management.commands.user import Command as UserCommand
from library.models import Person
from tests.conftest import days_ago, make_item
from tests.integration.conftest import configure

pytestmark = pytest.mark.django_db

PASSWORD = "lena-reads-her-own-7"


def text(response):
    return response.content.decode()


def browser(user):
    client = Browser()
    client.force_login(user)
    return client


def titles(page):
    return re.findall(r'class="title" href="/items/\d+/">([^<]+)<', page)


def options(page, select):
    """The option values of the <select> with id `select`, "any" left out."""
    block = page.split(f'<select id="{select}"', 1)[1].split("</select>", 1)[0]
    return [value for value in re.findall(r'<option value="([^"]*)"', block) if value]


@pytest.fixture
def library():
    """Lena's sessions (agent-lena) and the household's other sources, on the same subjects."""
    return {
        "hers": make_item(title="Stripe webhook signature fix", source="agent-lena", key="agent-lena:1",
                          project="shop-site", summary="The stripe webhook secret was stale.",
                          occurred_at=days_ago(30), original="user: the stripe webhook fails"),
        "hers_later": make_item(title="Stripe webhook retries", source="agent-lena", key="agent-lena:2",
                                project="shop-site", summary="Stripe webhook retries tuned.",
                                occurred_at=days_ago(10)),
        "theirs": make_item(title="Stripe webhook moved to the new endpoint", source="agent-tomas",
                            key="agent-tomas:1", project="shop-site", summary="The stripe webhook moved.",
                            occurred_at=days_ago(5)),
        "health": make_item(title="Blood test results and the stripe of a rash", source="mail-home",
                            key="mail-home:1", project="health", trust="external", summary="Private.",
                            occurred_at=days_ago(2)),
    }


@pytest.fixture
def lena(django_user_model):
    """A person limited to the source agent-lena."""
    user = django_user_model.objects.create_user("lena")
    Person.objects.create(user=user, sources=["agent-lena"])
    return user


@pytest.fixture
def as_lena(lena):
    return browser(lena)


@pytest.fixture
def as_staff(people):
    return browser(people["staff"])


# --- what a person limited to one source sees --------------------------------------------------

def test_search_finds_only_her_source(library, as_lena):
    page = text(as_lena.get("/", {"q": "stripe webhook"}))
    assert sorted(titles(page)) == ["Stripe webhook retries", "Stripe webhook signature fix"]
    assert "moved to the new endpoint" not in page and "Blood test" not in page


def test_the_newest_items_and_the_search_lists_hold_only_her_source_and_projects(library, as_lena):
    page = text(as_lena.get("/"))
    assert titles(page) == ["Stripe webhook retries", "Stripe webhook signature fix"]
    assert options(page, "source") == ["agent-lena"]
    assert options(page, "project") == ["shop-site"]        # health is only in mail-home


def test_asking_for_another_source_finds_nothing(library, as_lena):
    for source in ("agent-tomas", "mail-home"):
        assert titles(text(as_lena.get("/", {"q": "stripe", "source": source}))) == []
        assert titles(text(as_lena.get("/", {"source": source}))) == []


def test_an_item_outside_her_sources_is_the_same_not_found_page_as_a_missing_id(library, as_lena):
    outside = library["theirs"].pk
    response = as_lena.get(f"/items/{outside}/")
    missing = as_lena.get("/items/999999/")
    assert response.status_code == missing.status_code == 404
    assert f"There is no item {outside}." in text(response)
    main = [text(page).split('<main id="main">', 1)[1] for page in (response, missing)]
    assert main[0].replace(str(outside), "N") == main[1].replace("999999", "N")
    assert "moved to the new endpoint" not in text(response)
    assert as_lena.get(f"/items/{outside}/", {"original": "1"}).status_code == 404


def test_the_later_panel_leaves_out_newer_work_of_other_sources(library, as_lena, as_staff):
    path = f"/items/{library['hers'].pk}/"
    hers = text(as_lena.get(path))
    assert "Stripe webhook retries" in hers
    assert "moved to the new endpoint" not in hers
    assert "moved to the new endpoint" in text(as_staff.get(path))


def test_the_timeline_shows_only_her_source(library, as_lena):
    page = text(as_lena.get("/timeline/"))
    assert titles(page) == ["Stripe webhook retries", "Stripe webhook signature fix"]
    assert options(page, "source") == ["agent-lena"]
    assert titles(text(as_lena.get("/timeline/", {"project": "shop-site"}))) == titles(page)
    other = text(as_lena.get("/timeline/", {"source": "agent-tomas"}))
    assert titles(other) == [] and "Nothing in this period." in other
    assert titles(text(as_lena.get("/timeline/", {"project": "health"}))) == []


def test_projects_count_only_her_items(library, as_lena, as_staff):
    page = text(as_lena.get("/projects/"))
    assert re.search(r"shop-site</a></td><td>2</td>", page)
    assert "health" not in page
    staff = text(as_staff.get("/projects/"))
    assert re.search(r"shop-site</a></td><td>3</td>", staff) and "health" in staff


def test_the_agent_view_injects_only_her_items(library, as_lena):
    page = text(as_lena.get("/agent-view/", {"project": "shop-site", "prompt": "the stripe webhook signature again"}))
    start = page.split('<pre id="session-start">', 1)[1].split("</pre>", 1)[0]
    assert f"[{library['hers_later'].pk}]" in start and f"[{library['hers'].pk}]" in start
    assert f"[{library['theirs'].pk}]" not in start
    first = page.split('<pre id="first-prompt">', 1)[1].split("</pre>", 1)[0]
    assert f"[{library['theirs'].pk}]" not in first and "Blood test" not in first
    assert options(page, "project") == ["shop-site"]


def test_the_sources_page_shows_only_her_connectors_and_their_runs(settings, tmp_path, library, as_lena, as_staff):
    configure(settings, {"name": "agent-lena", "type": "claude_code", "path": str(tmp_path)},
              {"name": "mail-home", "type": "imap", "host": "imap.example.org", "user": "family@example.org",
               "password_env": "JEZERO_MAIL_PASSWORD"})
    page = text(as_lena.get("/sources/"))
    assert ">agent-lena</h2>" in page
    assert "mail-home" not in page and "imap.example.org" not in page
    staff = text(as_staff.get("/sources/"))
    assert ">agent-lena</h2>" in staff and ">mail-home</h2>" in staff


def test_the_api_read_through_her_browser_session_is_limited_too(library, as_lena):
    found = as_lena.get("/api/v1/search", {"q": "stripe webhook"}).json()["results"]
    assert {hit["source"] for hit in found} == {"agent-lena"}
    assert as_lena.get(f"/api/v1/items/{library['theirs'].pk}").status_code == 404
    assert {hit["source"] for hit in as_lena.get("/api/v1/timeline").json()["results"]} == {"agent-lena"}


def test_a_glob_names_every_source_it_matches(library, django_user_model):
    user = django_user_model.objects.create_user("kim")
    Person.objects.create(user=user, sources=["agent-*"])
    page = text(browser(user).get("/"))
    assert options(page, "source") == ["agent-lena", "agent-tomas"]
    assert "Blood test" not in page and "moved to the new endpoint" in page


# --- staff, users from before, users without a record -------------------------------------------

@pytest.mark.parametrize("path", ["/", "/?q=stripe", "/timeline/", "/projects/"])
def test_staff_see_every_source(library, as_staff, path):
    page = text(as_staff.get(path))
    assert "health" in page if path == "/projects/" else "Blood test" in page


def test_staff_see_every_item_even_with_narrow_or_no_globs(library, django_user_model):
    boss = django_user_model.objects.create_user("boss", is_staff=True)
    Person.objects.create(user=boss, sources=["agent-lena"])
    assert browser(boss).get(f"/items/{library['health'].pk}/").status_code == 200
    Person.objects.filter(user=boss).delete()
    assert "Blood test" in text(browser(boss).get("/"))


def test_a_user_without_a_record_reads_nothing(library, django_user_model):
    """A user made in the Django admin, say, after the migration: the safe default."""
    stranger = browser(django_user_model.objects.create_user("stranger"))
    page = text(stranger.get("/"))
    assert titles(page) == [] and options(page, "source") == [] and options(page, "project") == []
    assert titles(text(stranger.get("/", {"q": "stripe"}))) == []
    assert stranger.get(f"/items/{library['hers'].pk}/").status_code == 404
    assert "No project tags yet." in text(stranger.get("/projects/"))
    assert stranger.get("/api/v1/search", {"q": "stripe"}).json()["results"] == []


def test_a_change_of_sources_applies_from_the_next_request(library, lena, as_lena):
    assert as_lena.get(f"/items/{library['theirs'].pk}/").status_code == 404
    people.update("lena", sources="agent-lena, agent-tomas")
    assert as_lena.get(f"/items/{library['theirs'].pk}/").status_code == 200
    people.update("lena", sources="mail-home")
    assert titles(text(as_lena.get("/"))) == ["Blood test results and the stripe of a rash"]


def test_a_deactivated_person_is_logged_out_at_the_next_page(library, lena, as_lena):
    assert as_lena.get("/").status_code == 200
    people.update("lena", active=False)
    response = as_lena.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_a_new_password_ends_the_persons_other_sessions(library, lena, as_lena):
    assert as_lena.get("/").status_code == 200
    people.update("lena", password=PASSWORD)
    assert as_lena.get("/")["Location"].startswith("/login/")


@pytest.mark.django_db(transaction=True)
def test_users_from_before_the_migration_keep_reading_everything(django_user_model):
    make_item(title="Private mail from the bank", source="mail-home", key="mail-home:b")
    call_command("migrate", "library", "0014", verbosity=0)      # a library from before people
    old = django_user_model.objects.create_user("old-tomas")
    call_command("migrate", "library", verbosity=0)
    assert Person.objects.get(user=old).sources == ["*"]
    assert "Private mail from the bank" in text(browser(old).get("/"))
    newcomer = django_user_model.objects.create_user("newcomer")    # after the migration: nothing until given sources
    assert people.allowed_sources(newcomer) == ()


# --- the Users page -------------------------------------------------------------------------------

@pytest.mark.parametrize("method, path", [("get", "/users/"), ("post", "/users/"), ("get", "/users/lena/"),
                                          ("post", "/users/lena/"), ("get", "/users/lena/deactivate/"),
                                          ("post", "/users/lena/deactivate/"), ("post", "/users/lena/reactivate/")])
def test_only_staff_may_manage_users(lena, as_lena, people, method, path):
    response = getattr(as_lena, method)(path)
    assert response.status_code == 403 and "Staff only" in text(response)
    anonymous = getattr(Browser(), method)(path)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")
    assert Person.objects.get(user=lena).sources == ["agent-lena"] and get_user_model().objects.get(username="lena").is_active


def test_the_users_page_lists_each_user_with_what_they_read(lena, people, as_staff):
    get_user_model().objects.create_user("stranger")
    page = text(as_staff.get("/users/"))
    rows = {name: row for name, row in re.findall(r'<tr><td><a href="/users/([^/]+)/">.*?</a></td>(.*?)</tr>', page, re.S)}
    assert set(rows) == {"ana", "lena", "stranger", "tomas"}
    assert "every source (staff)" in rows["ana"]
    assert "<code>agent-lena</code>" in rows["lena"]
    assert "nothing" in rows["stranger"]
    assert "<code>*</code>" in rows["tomas"]
    nav = page.split('<nav aria-label="Main">', 1)[1].split("</nav>", 1)[0]
    assert '<a href="/users/" aria-current="page">Users</a>' in nav


def test_the_users_link_is_for_staff_only(as_lena):
    assert 'href="/users/"' not in text(as_lena.get("/"))


def test_staff_add_a_person_who_logs_in_and_reads_only_her_sources(library, as_staff):
    response = as_staff.post("/users/", {"name": "mira", "sources": "agent-lena", "password": PASSWORD}, follow=True)
    assert response.redirect_chain == [("/users/mira/", 302)]
    assert "Added mira: reads agent-lena." in text(response)
    assert "Reads today: agent-lena." in text(response)
    mira = Browser()
    assert mira.post("/login/", {"username": "mira", "password": PASSWORD}).status_code == 302
    assert titles(text(mira.get("/"))) == ["Stripe webhook retries", "Stripe webhook signature fix"]


@pytest.mark.parametrize("form, message", [
    ({"name": "lena", "sources": "*", "password": PASSWORD}, "a user named &#x27;lena&#x27; exists already"),
    ({"name": "mira", "sources": "agent-* mail-*", "password": PASSWORD}, "is not a source name or glob"),
    ({"name": "mira", "sources": "", "password": PASSWORD}, "a person who is not staff and has no sources"),
    ({"name": "mira", "sources": "*", "password": "12345678"}, "This password is entirely numeric."),
    ({"name": "bad name!", "sources": "*", "password": PASSWORD}, "Enter a valid username"),
])
def test_a_bad_add_says_why_and_makes_nobody(lena, as_staff, form, message):
    response = as_staff.post("/users/", form)
    assert response.status_code == 400 and message in text(response)
    assert PASSWORD not in text(response)           # a typed password is never sent back
    assert sorted(get_user_model().objects.values_list("username", flat=True)) == ["ana", "lena", "tomas"]


def test_staff_edit_sources_staff_flag_and_password(lena, as_staff):
    response = as_staff.post("/users/lena/", {"sources": "agent-lena, mail-home", "password": ""}, follow=True)
    assert "Saved lena: reads agent-lena, mail-home." in text(response)
    assert Person.objects.get(user=lena).sources == ["agent-lena", "mail-home"]
    as_staff.post("/users/lena/", {"sources": "agent-lena", "staff": "on", "password": PASSWORD})
    lena.refresh_from_db()
    assert lena.is_staff and lena.check_password(PASSWORD)
    page = text(as_staff.get("/users/lena/"))
    assert 'value="agent-lena"' in page and 'name="staff" checked' in page and "Reads every source (staff)." in page


def test_a_bad_edit_says_why_and_changes_nothing(lena, as_staff):
    for form, message in [({"sources": "agent lena"}, "is not a source name or glob"),
                          ({"sources": ""}, "a person who is not staff and has no sources"),
                          ({"sources": "*", "password": "lena"}, "This password is too short.")]:
        response = as_staff.post("/users/lena/", form)
        assert response.status_code == 400 and message in text(response), form
    lena.refresh_from_db()
    assert Person.objects.get(user=lena).sources == ["agent-lena"] and not lena.has_usable_password()


def test_staff_cannot_lock_themselves_out(people, as_staff):
    response = as_staff.post("/users/ana/", {"sources": "*", "password": ""})
    assert response.status_code == 400 and "cannot take away your own staff rights" in text(response)
    as_staff.post("/users/ana/deactivate/")
    people["staff"].refresh_from_db()
    assert people["staff"].is_staff and people["staff"].is_active


def test_changing_your_own_password_keeps_you_logged_in(people, as_staff):
    as_staff.post("/users/ana/", {"sources": "", "staff": "on", "password": PASSWORD})
    assert as_staff.get("/users/").status_code == 200


def test_deactivate_asks_first_then_the_person_cannot_log_in_and_reactivate_undoes_it(lena, as_staff):
    lena.set_password(PASSWORD)
    lena.save()
    assert "Deactivate lena?" in text(as_staff.get("/users/lena/deactivate/"))
    response = as_staff.post("/users/lena/deactivate/", follow=True)
    assert response.redirect_chain == [("/users/", 302)] and "Deactivated lena" in text(response)
    assert "deactivated" in text(as_staff.get("/users/lena/"))
    assert Browser().post("/login/", {"username": "lena", "password": PASSWORD}).status_code == 200   # refused
    as_staff.post("/users/lena/reactivate/")
    assert Browser().post("/login/", {"username": "lena", "password": PASSWORD}).status_code == 302
    assert Person.objects.get(user=lena).sources == ["agent-lena"]          # kept all along


@pytest.mark.parametrize("path", ["/users/nobody/", "/users/nobody/deactivate/", "/users/nobody/reactivate/"])
def test_an_unknown_user_is_404(as_staff, path):
    assert as_staff.post(path).status_code == 404
    assert "There is no user nobody." in text(as_staff.post(path))


def test_the_users_page_costs_the_same_queries_with_many_users(as_staff, django_user_model):
    def count():
        with CaptureQueriesContext(connection) as captured:
            assert as_staff.get("/users/").status_code == 200
        return len(captured)

    few = count()
    for n in range(20):
        Person.objects.create(user=django_user_model.objects.create_user(f"person-{n}"), sources=["agent-*"])
    assert count() == few


# --- the service and its rules -------------------------------------------------------------------

def test_globs_are_checked_the_same_for_people_and_clients():
    assert parse_globs("agent-*, mail-home,, agent-*") == ["agent-*", "mail-home"]
    assert parse_globs(["agent-[ab]?", "*"]) == ["agent-[ab]?", "*"]
    for bad in ("agent-* mail-*", "agent/x", "'*'"):
        with pytest.raises(BadInput, match="is not a source name or glob"):
            parse_globs(bad)
        with pytest.raises(BadInput, match="is not a source name or glob"):
            clients.create("laptop", sources=bad)


def test_giving_sources_to_a_user_without_a_record_makes_one(django_user_model):
    django_user_model.objects.create_user("stranger")
    assert people.get("stranger").sources == ()
    assert people.update("stranger", sources="agent-*").sources == ("agent-*",)
    assert Person.objects.get(user__username="stranger").sources == ["agent-*"]
    with pytest.raises(NotFound, match="no user named 'ghost'"):
        people.update("ghost", sources="*")


# --- jezero user -----------------------------------------------------------------------------------

def cli(*args, stdin=None, monkeypatch=None):
    """Run `jezero user …` as the command line does; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    command = UserCommand(stdout=out, stderr=err)
    try:
        command.run_from_argv(["jezero", "user", *args])
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    return code, out.getvalue(), err.getvalue()


def test_user_add_with_a_password_from_stdin_then_she_reads_only_her_source(library, monkeypatch):
    code, out, _ = cli("add", "mira", "--sources", "agent-lena", "--password-stdin", stdin=PASSWORD + "\n",
                       monkeypatch=monkeypatch)
    assert code == 0 and out == "user mira: sources agent-lena\n"
    mira = Browser()
    assert mira.post("/login/", {"username": "mira", "password": PASSWORD}).status_code == 302
    assert titles(text(mira.get("/"))) == ["Stripe webhook retries", "Stripe webhook signature fix"]


def test_user_add_without_a_password_prints_a_generated_one_once(monkeypatch):
    code, out, _ = cli("add", "boss", "--staff", "--json")
    data = json.loads(out)
    assert code == 0 and data["staff"] is True and data["sources"] == []
    user = get_user_model().objects.get(username="boss")
    assert user.is_staff and user.check_password(data["password"])
    assert data["password"] not in user.password          # only its hash is kept
    assert "password" not in json.loads(cli("list", "--json")[1])["users"][0]


def test_user_edit_changes_only_what_is_given(lena, monkeypatch):
    code, out, _ = cli("edit", "lena", "--sources", "agent-*,mail-home")
    assert code == 0 and out == "user lena: sources agent-*,mail-home\n"
    cli("edit", "lena", "--staff")
    cli("edit", "lena", "--password-stdin", stdin=PASSWORD + "\n", monkeypatch=monkeypatch)
    lena.refresh_from_db()
    assert lena.is_staff and lena.check_password(PASSWORD)
    assert Person.objects.get(user=lena).sources == ["agent-*", "mail-home"]
    assert cli("edit", "lena", "--no-staff")[1] == "user lena: sources agent-*,mail-home\n"
    assert cli("edit", "lena", "--no-active")[1] == "user lena: sources agent-*,mail-home; deactivated\n"


def test_user_list_shows_who_reads_what(lena, people):
    code, out, _ = cli("list")
    assert code == 0
    assert out.splitlines() == ["ana  staff (reads every source)  last login never",
                                "lena  sources agent-lena  last login never",
                                "tomas  sources *  last login never"]
    rows = json.loads(cli("list", "--json")[1])["users"]
    assert [(r["name"], r["staff"], r["active"], r["sources"]) for r in rows] == [
        ("ana", True, True, []), ("lena", False, True, ["agent-lena"]), ("tomas", False, True, ["*"])]


@pytest.mark.parametrize("args, message", [
    (("edit", "ghost", "--sources", "*"), "jezero user: no user named 'ghost'"),
    (("add", "lena", "--sources", "*"), "jezero user: a user named 'lena' exists already"),
    (("add", "mira", "--sources", "agent-* mail-*"), "jezero user: --sources: 'agent-* mail-*' is not a source name"),
    (("edit", "lena", "--sources", "agent lena"), "jezero user: --sources: 'agent lena' is not a source name"),
    (("add", "mira"), "jezero user: --sources: a person who is not staff and has no sources reads nothing"),
    (("edit", "lena"), "jezero user: edit: nothing to change"),
    (("add",), "jezero user: add needs the user's name"),
])
def test_user_mistakes_print_one_line_and_exit_1(lena, args, message):
    code, out, err = cli(*args)
    assert code == 1 and out == ""
    assert err.startswith(message) and err.count("\n") <= 1, err
    assert Person.objects.get(user=lena).sources == ["agent-lena"]
    assert sorted(get_user_model().objects.values_list("username", flat=True)) == ["lena"]


def test_an_empty_password_on_stdin_is_refused(monkeypatch):
    code, _, err = cli("add", "mira", "--sources", "*", "--password-stdin", stdin="\n", monkeypatch=monkeypatch)
    assert code == 1 and "stdin held no password" in err
    with pytest.raises(CommandError, match="is too short"):
        monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
        call_command("user", "add", "mira", "--sources", "*", "--password-stdin")
    assert not get_user_model().objects.filter(username="mira").exists()
