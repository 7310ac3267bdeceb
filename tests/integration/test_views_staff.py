"""docs/design.md "The web app": the staff actions on items, the Sources page, the admin tools and their jobs, the
Clients pages and the agent view — each with a staff user, a plain user and an anonymous
visitor; what a person would see and what it changes; query counts that do not grow."""

from pathlib import Path

import pytest
from django.db import connection
from django.test import Client as Browser
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from library import search
from library.access import clients
from library.models import Client, Connector, ForgetLog, InboxSession, Item, Job, RunReport, Tombstone, UnitCursor
from tests.conftest import days_ago, make_item
from tests.integration.conftest import SECRET, configure, summarizer

pytestmark = pytest.mark.django_db


def browser(user=None, **options):
    client = Browser(**options)
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def staff(people):
    return browser(people["staff"])


@pytest.fixture
def plain(people):
    return browser(people["plain"])


@pytest.fixture
def commit(django_capture_on_commit_callbacks):
    """Send a request and let its transaction commit, so a job's task runs (immediate Huey);
    with `follow=True`, then follow the redirect as a browser would."""

    def run(send, *args, follow=False, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            response = send(*args, **kwargs)
        if follow and response.status_code == 302:
            return send.__self__.get(response["Location"])
        return response

    return run


@pytest.fixture
def world(laptop):
    """One of everything the staff pages act on."""
    item = make_item(title="Stripe webhook signature failure", source="agent-laptop", key="agent-laptop:x#0",
                     project="shop-site", hints={"git_remote": "git@github.com:ana/shop-site.git"},
                     original="user: why does the stripe webhook fail?\n\nassistant: the signing secret was stale.")
    UnitCursor.objects.create(connector=laptop, unit_id="x", fingerprint="1")
    _, token = clients.create("agent", sources="agent-*", scopes="read")
    job = Job.objects.create(kind="retag", status="done", result={"checked": 1, "changed": 0, "ids": []})
    return {"item": item, "connector": laptop, "client": "agent", "token": token, "job": job}


def text(response):
    return response.content.decode()


# --- access: three people on every page and action --------------------------------------------

STAFF_PAGES = ["/admin-tools/", "/admin-tools/jobs/{job}/", "/clients/", "/clients/{client}/",
               "/clients/{client}/revoke/", "/items/{item}/delete/", "/sources/{connector}/reset/",
               "/sources/add/", "/sources/add/?type=markdown", "/sources/{connector}/edit/",
               "/sources/{connector}/delete/"]
POST_ONLY = ["/items/{item}/resummarize/", "/items/{item}/retag/", "/sources/{connector}/run/",
             "/sources/{connector}/dry-run/", "/admin-tools/retag/", "/admin-tools/redact/preview/",
             "/admin-tools/redact/apply/", "/admin-tools/resummarize/", "/sources/{connector}/enabled/"]
STAFF_POSTS = POST_ONLY + ["/items/{item}/delete/", "/sources/{connector}/reset/", "/clients/",
                           "/clients/{client}/", "/clients/{client}/revoke/", "/sources/add/?type=markdown",
                           "/sources/{connector}/edit/", "/sources/{connector}/delete/"]
EVERYONE = ["/sources/", "/agent-view/", "/agent-view/?project=shop-site&prompt=stripe+webhook+signature"]


def fill(path, world):
    return path.format(item=world["item"].pk, job=world["job"].pk, client=world["client"],
                       connector=world["connector"])


def nothing_changed(world):
    assert Item.objects.filter(pk=world["item"].pk, project="shop-site").exists()
    assert UnitCursor.objects.filter(connector=world["connector"]).count() == 1
    assert clients.authenticate(world["token"]) is not None
    assert Job.objects.count() == 1 and not RunReport.objects.exists()
    assert not Connector.objects.exists()


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize("path", sorted(set(STAFF_PAGES + STAFF_POSTS + EVERYONE)))
def test_anonymous_visitors_are_sent_to_the_login_page(world, method, path):
    path = fill(path, world)
    response = getattr(Browser(), method)(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")
    nothing_changed(world)


@pytest.mark.parametrize("path", STAFF_PAGES)
def test_plain_users_may_not_open_staff_pages(world, plain, path):
    response = plain.get(fill(path, world))
    assert response.status_code == 403
    assert "Staff only" in text(response)


@pytest.mark.parametrize("path", STAFF_POSTS)
def test_plain_users_may_not_run_staff_actions(world, plain, commit, path):
    response = commit(plain.post, fill(path, world), {"name": "sneaky", "scopes": "read"})
    assert response.status_code == 403
    nothing_changed(world)
    assert not Client.objects.filter(name="sneaky").exists()


@pytest.mark.parametrize("path", POST_ONLY)
def test_post_only_actions_answer_get_with_405(world, staff, path):
    assert staff.get(fill(path, world)).status_code == 405
    nothing_changed(world)


@pytest.mark.parametrize("who", ["staff", "plain"])
@pytest.mark.parametrize("path", EVERYONE)
def test_everyone_logged_in_may_see_sources_and_the_agent_view(world, people, who, path):
    assert browser(people[who]).get(fill(path, world)).status_code == 200


def test_actions_need_the_csrf_token(world, people):
    guarded = browser(people["staff"], enforce_csrf_checks=True)
    assert guarded.post(f"/items/{world['item'].pk}/delete/").status_code == 403
    assert guarded.post(f"/clients/{world['client']}/revoke/").status_code == 403
    nothing_changed(world)


# --- item actions -------------------------------------------------------------------------------

def test_staff_resummarise_an_item_in_the_background(world, staff, commit):
    item = world["item"]
    response = commit(staff.post, f"/items/{item.pk}/resummarize/")
    job = Job.objects.get(kind="resummarize")
    assert response.status_code == 302 and response["Location"] == f"/admin-tools/jobs/{job.pk}/"
    page = text(staff.get(response["Location"]))
    assert f"Re-summarising item #{item.pk}" in page
    assert "Done" in page and "summarised <strong>1</strong>" in page
    assert f'href="/items/{item.pk}/"' in page
    item.refresh_from_db()
    assert item.summarizer == "extractive" and item.pk == world["item"].pk


def test_resummarise_says_what_to_configure_when_the_model_is_missing(settings, world, staff):
    summarizer(settings, provider="anthropic", model=None)
    response = staff.post(f"/items/{world['item'].pk}/resummarize/", follow=True)
    assert response.redirect_chain[-1][0] == f"/items/{world['item'].pk}/"
    assert "summarizer.model must be set for provider anthropic" in text(response)
    assert Job.objects.count() == 1


def test_retag_applies_the_project_rules_and_says_old_and_new(world, staff):
    item = make_item(hints={"git_remote": "git@github.com:ana/garden-notes.git"}, project="misc")
    response = staff.post(f"/items/{item.pk}/retag/", follow=True)
    assert response.redirect_chain[-1][0] == f"/items/{item.pk}/"
    assert "Retagged: project misc → garden-notes." in text(response)
    assert Item.objects.get(pk=item.pk).project == "garden-notes"
    again = staff.post(f"/items/{item.pk}/retag/", follow=True)
    assert "Retagged: no change (project garden-notes)." in text(again)


def test_delete_asks_first_then_forgets_the_item_for_good(world, staff):
    item = world["item"]
    confirm = staff.get(f"/items/{item.pk}/delete/")
    assert confirm.status_code == 200
    assert f"Forget item #{item.pk} for good?" in text(confirm) and "Stripe webhook signature failure" in text(confirm)
    assert "1 item of 1 unit" in " ".join(text(confirm).replace("<strong>", "").replace("</strong>", "").split())
    assert Item.objects.filter(pk=item.pk).exists()

    response = staff.post(f"/items/{item.pk}/delete/", follow=True)
    assert response.redirect_chain == [("/", 302)]
    assert "Forgot 1 item of 1 unit. They will not come back." in text(response)
    assert not Item.objects.filter(pk=item.pk).exists()
    assert Tombstone.objects.filter(source=item.source).count() == 1
    assert ForgetLog.objects.get().by == "ana"
    assert search.search("stripe webhook", allowed_sources=search.ALL_SOURCES).hits == []
    assert staff.get(f"/items/{item.pk}/").status_code == 404


@pytest.mark.parametrize("path", ["/items/999999/retag/", "/items/999999/resummarize/", "/items/999999/delete/"])
def test_actions_on_a_missing_item_answer_404(world, staff, path):
    assert staff.post(path).status_code == 404


def test_stored_text_is_escaped_on_the_delete_page(staff):
    item = make_item(title='<script>alert("x")</script> webhook')
    page = text(staff.get(f"/items/{item.pk}/delete/"))
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page


# --- sources ------------------------------------------------------------------------------------

def report(connector, *, minutes_ago=0, **values):
    stats = {"units_seen": 12, "units_changed": 3, "units_settling": 1, "units_too_small": 1, "units_failed": 1,
             "units_stored": 1, "segments_summarised": 4, "segments_unchanged": 7, "segments_failed": 1,
             "documents": 5, "characters": 54321, "estimated_tokens": 13580, "input_tokens": 9876,
             "output_tokens": 543, "model_calls": 5, "retries": 1}
    started = timezone.now() - timezone.timedelta(minutes=minutes_ago)
    fields = {"connector": connector, "started_at": started, "finished_at": started, "stats": stats,
              "outcome": "ok", **values}
    return RunReport.objects.create(**fields)


@pytest.fixture
def three_sources(settings, tmp_path):
    configure(settings,
              {"name": "agent-laptop", "type": "claude_code", "path": str(tmp_path), "interval_minutes": 20,
               "settle_minutes": 45},
              {"name": "mail-home", "type": "imap", "host": "imap.example.org", "user": "ana",
               "password_env": "MAIL_PASSWORD"},
              {"name": "uploads-devices", "type": "upload", "enabled": False})
    return ["agent-laptop", "mail-home", "uploads-devices"]


def test_the_sources_page_shows_each_connector_its_schedule_cursor_and_last_runs(three_sources, plain):
    UnitCursor.objects.bulk_create([UnitCursor(connector="agent-laptop", unit_id=f"u{n}", fingerprint="f")
                                    for n in range(7)])
    InboxSession.objects.create(source="uploads-devices", session_id="s1", agent="claude_code")
    report("agent-laptop", errors=[{"unit": "session-42", "error": "the model answered 400"}],
           warnings={"malformed_line": 2}, budget_stopped="the run reached its limit of 5 model call(s)")
    report("agent-laptop", minutes_ago=60, dry_run=True)
    page = text(plain.get("/sources/"))
    for expected in ("agent-laptop", "claude_code", "every 20 min", "settle for 45 min", "7 units known",
                     "mail-home", "imap.example.org", 'class="badge external"', "uploads-devices",
                     "disabled", "1 uploaded session", "<b>12</b> seen", "<b>3</b> changed", "<b>1</b> settling",
                     "<b>1</b> too small", "<b>4</b> summarised", "<b>7</b> unchanged", "<b>9876</b> in",
                     "<b>5</b> model calls", "the run reached its limit of 5 model call(s)",
                     "unit <code>session-42</code>: the model answered 400", "malformed_line ×2", "dry run",
                     "Never run."):
        assert expected in page, expected
    assert "MAIL_PASSWORD" not in page
    assert "Run now" not in page  # plain users see no staff actions


def test_staff_see_the_actions_of_enabled_connectors(three_sources, staff):
    page = text(staff.get("/sources/"))
    assert page.count("Run now</button>") == 2  # not for the disabled one
    assert page.count("Test (dry run)</button>") == 3  # a disabled connector can be tested before it is enabled
    assert page.count("Reset cursor") == 3


def test_the_sources_page_costs_the_same_queries_with_many_runs(three_sources, staff):
    def queries():
        with CaptureQueriesContext(connection) as captured:
            assert staff.get("/sources/").status_code == 200
        return len(captured)

    for name in three_sources:
        for n in range(3):
            report(name, minutes_ago=n)
    few = queries()
    for name in three_sources:
        for n in range(3, 30):
            report(name, minutes_ago=n)
    assert queries() == few <= 8, few  # session, user, connectors, cursors, inbox, runs, jobs, waiting uploads
    assert text(staff.get("/sources/")).count("<tr>") == 3 * 5 + 3  # five newest runs each, plus headers


def test_run_now_runs_the_connector_as_a_job_and_shows_the_report(laptop, staff, commit):
    response = commit(staff.post, f"/sources/{laptop}/run/")
    job = Job.objects.get(kind="run")
    assert response["Location"] == f"/admin-tools/jobs/{job.pk}/"
    page = text(staff.get(response["Location"]))
    assert "Run of agent-laptop" in page and "Done" in page and "Stored 2 units" in page
    assert Item.objects.filter(source=laptop).exists()
    sources = text(staff.get("/sources/"))
    assert "<b>2</b> stored" in sources and "3 units known" in sources


def test_a_dry_run_shows_documents_characters_and_estimated_tokens(laptop, staff, commit):
    response = commit(staff.post, f"/sources/{laptop}/dry-run/", follow=True)
    page = text(response)
    result = Job.objects.get(kind="dry_run").result
    assert f"A run would send <strong>{result['documents']} documents</strong>" in page
    assert f"<strong>{result['characters']} characters</strong>" in page
    assert f"about <strong>{result['estimated_tokens']} tokens</strong>" in page
    assert not Item.objects.exists() and not UnitCursor.objects.exists()
    assert "dry run" in text(staff.get("/sources/"))


def test_a_run_without_a_configured_model_is_refused_with_what_to_set(settings, laptop, staff):
    summarizer(settings, provider="openai", model=None)
    response = staff.post(f"/sources/{laptop}/run/", follow=True)
    assert response.redirect_chain[-1][0] == "/sources/"
    assert "summarizer.model must be set for provider openai" in text(response)
    assert not Job.objects.exists()


def test_reset_asks_first_then_forgets_the_cursor(world, staff):
    name = world["connector"]
    UnitCursor.objects.create(connector=name, unit_id="y", fingerprint="2")
    confirm = text(staff.get(f"/sources/{name}/reset/"))
    assert "2 units known" in confirm and "reads the whole source again" in confirm
    assert UnitCursor.objects.filter(connector=name).count() == 2
    response = staff.post(f"/sources/{name}/reset/", follow=True)
    assert response.redirect_chain[-1][0] == "/sources/"
    assert "agent-laptop: forgot 2 unit cursors" in text(response)
    assert not UnitCursor.objects.filter(connector=name).exists()
    assert Item.objects.filter(pk=world["item"].pk).exists()  # items stay


@pytest.mark.parametrize("method,path", [("post", "/sources/nope/run/"), ("post", "/sources/nope/dry-run/"),
                                         ("get", "/sources/nope/reset/"), ("post", "/sources/nope/reset/")])
def test_an_unknown_connector_is_404(laptop, staff, method, path):
    response = getattr(staff, method)(path)
    assert response.status_code == 404 and "There is no connector nope." in text(response)


# --- admin tools and jobs -----------------------------------------------------------------------

def test_the_admin_tools_page_offers_each_tool_and_lists_recent_jobs(world, staff):
    page = text(staff.get("/admin-tools/"))
    for expected in ("Retag all", "Count what would change", "Re-summarise", "<code>extractive</code>",
                     f'href="/admin-tools/jobs/{world["job"].pk}/"', "retag all"):
        assert expected in page, expected


def test_retag_all_runs_as_a_job_and_reports_changes(staff, commit):
    item = make_item(hints={"git_remote": "https://github.com/ana/garden-notes"}, project=None)
    response = commit(staff.post, "/admin-tools/retag/", follow=True)
    page = text(response)
    assert "Retag all" in page and "<strong>1</strong> changed project" in page
    assert f'href="/items/{item.pk}/"' in page
    assert Item.objects.get(pk=item.pk).project == "garden-notes"


def test_redact_stored_shows_the_count_first_then_applies(staff, commit):
    leaky = make_item(summary=f"Deploy with {SECRET} set.")
    make_item(summary="Nothing secret.")
    preview = text(commit(staff.post, "/admin-tools/redact/preview/", follow=True))
    assert "<strong>1</strong> of 2 items would change" in preview
    assert 'action="/admin-tools/redact/apply/"' in preview and "Redact 1 item now" in preview
    assert SECRET in Item.objects.get(pk=leaky.pk).summary

    applied = text(commit(staff.post, "/admin-tools/redact/apply/", follow=True))
    assert "Redacted <strong>1</strong> of 2 items" in applied
    assert Item.objects.get(pk=leaky.pk).summary == "Deploy with [REDACTED:github-token] set."


def test_a_preview_with_nothing_to_redact_offers_no_apply_button(staff, commit):
    make_item(summary="Nothing secret.")
    page = text(commit(staff.post, "/admin-tools/redact/preview/", follow=True))
    assert "Nothing to redact." in page and "/admin-tools/redact/apply/" not in page


def test_resummarise_by_ids_and_by_filter(staff, commit):
    original = "user: The nightly backup fails with rsync error 23.\n\nassistant: Removed the stale exclude entry."
    first = make_item(summarizer="anthropic:old", original=original)
    second = make_item(summarizer="anthropic:old", original=original, source="mail-home")
    other = make_item(summarizer="extractive", original=original)
    page = text(commit(staff.post, "/admin-tools/resummarize/", {"ids": f" {first.pk}, {second.pk} "}, follow=True))
    assert "Selected 2; summarised <strong>2</strong>; failed 0" in page
    assert Item.objects.filter(summarizer="extractive").count() == 3

    Item.objects.filter(pk=second.pk).update(summarizer="anthropic:old")
    page = text(commit(staff.post, "/admin-tools/resummarize/", {"field": "source", "value": "mail-home"},
                       follow=True))
    assert "items where source=mail-home" in page and "summarised <strong>1</strong>" in page
    assert Item.objects.get(pk=second.pk).summarizer == "extractive"
    assert Item.objects.get(pk=other.pk).summarizer == "extractive"


@pytest.mark.parametrize("form,message", [
    ({"ids": "1, x"}, "ids must be whole numbers separated by commas"),
    ({"ids": "", "value": ""}, "give item ids, or a filter value"),
    ({"ids": "424242"}, "no items match that choice"),
    ({"field": "title", "value": "x"}, "choose one of summarizer, source, project, trust"),
])
def test_a_bad_resummarise_request_says_why_and_keeps_the_form(staff, form, message):
    response = staff.post("/admin-tools/resummarize/", form)
    assert response.status_code == 400
    assert message in text(response)
    if form.get("ids"):
        assert f'value="{form["ids"]}"' in text(response)
    assert not Job.objects.exists()


def test_an_unfinished_job_polls_with_htmx_and_reloads_without_javascript(people, staff):
    job = Job.objects.create(kind="retag", status="running", done=40, total=100, started_at=timezone.now(),
                             created_by=people["staff"])
    page = text(staff.get(f"/admin-tools/jobs/{job.pk}/"))
    assert "<html" in page and "Running" in page and "40 of 100" in page
    assert f'hx-get="/admin-tools/jobs/{job.pk}/" hx-trigger="every 1s"' in page
    assert '<noscript><meta http-equiv="refresh" content="2"></noscript>' in page
    assert f'<a href="/admin-tools/jobs/{job.pk}/">Reload</a>' in page
    assert 'max="100" value="40"' in page and "started by ana" in page

    fragment = text(staff.get(f"/admin-tools/jobs/{job.pk}/", headers={"HX-Request": "true"}))
    assert "<html" not in fragment and fragment.strip().startswith('<div id="job"')
    assert 'hx-trigger="every 1s"' in fragment


def test_a_finished_job_stops_polling_and_a_failed_one_shows_its_error(staff):
    done = Job.objects.create(kind="retag", status="done", result={"checked": 2, "changed": 0, "ids": []},
                              started_at=timezone.now(), finished_at=timezone.now())
    fragment = text(staff.get(f"/admin-tools/jobs/{done.pk}/", headers={"HX-Request": "true"}))
    assert "Done" in fragment and "hx-trigger" not in fragment and "Reload" not in fragment
    failed = Job.objects.create(kind="run", params={"connector": "agent-laptop"}, status="failed",
                                error="connector 'agent-laptop' is already running")
    page = text(staff.get(f"/admin-tools/jobs/{failed.pk}/"))
    assert "Failed" in page and "connector &#x27;agent-laptop&#x27; is already running" in page
    assert staff.get("/admin-tools/jobs/424242/").status_code == 404


def test_the_job_list_is_on_the_admin_page_and_a_queued_job_says_it_waits_for_the_worker(staff):
    job = Job.objects.create(kind="redact_preview")
    page = text(staff.get(f"/admin-tools/jobs/{job.pk}/"))
    assert "Queued" in page and "jezero worker" in page


# --- clients ------------------------------------------------------------------------------------

def test_creating_a_client_shows_its_token_once_with_ready_snippets(staff):
    response = staff.post("/clients/", {"name": "laptop-claude", "sources": "agent-*, mail-home",
                                        "scopes": ["read", "upload"], "upload_source": "uploads-laptop"})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    page = text(response)
    token = page.split('<p class="token" id="token">', 1)[1].split("</p>", 1)[0]
    assert token.startswith("jz_")
    assert ('claude mcp add --transport http jezero http://testserver/mcp '
            f'--header "Authorization: Bearer {token}"') in page
    assert '[mcp_servers.jezero]\nurl = "http://testserver/mcp"\nbearer_token_env_var = "JEZERO_TOKEN"' in page
    assert f"JEZERO_URL=http://testserver\nJEZERO_TOKEN={token}" in page
    assert "shown only this once" in page

    caller = clients.authenticate(token)
    assert caller.name == "laptop-claude" and caller.sources == ("agent-*", "mail-home")
    assert caller.scopes == {"read", "upload"} and caller.upload_source == "uploads-laptop"
    for later in ("/clients/", "/clients/laptop-claude/"):
        assert token not in text(staff.get(later))
    assert token not in str(dict(staff.session))


def test_the_client_list_shows_what_each_client_may_do(world, staff):
    clients.revoke("agent")
    clients.create("phone", sources="", scopes="")
    page = text(staff.get("/clients/"))
    for expected in ('href="/clients/agent/"', "<code>agent-*</code>", "revoked", "phone", "none", "never"):
        assert expected in page, expected
    assert world["token"] not in page


@pytest.mark.parametrize("form,message", [
    ({"name": "bad name!", "scopes": ["read"]}, "must be letters, digits"),
    ({"name": "dev", "scopes": ["upload"], "upload_source": "agent-laptop"},
     "&#x27;agent-laptop&#x27; is a claude_code connector, not an upload one"),
    ({"name": "dev", "scopes": ["read"]}, "a client with the read scope and no sources reads nothing"),
    ({"name": "agent", "scopes": ["read"]}, "a client named &#x27;agent&#x27; exists already"),
])
def test_a_bad_create_request_says_why_and_stores_nothing(world, staff, form, message):
    response = staff.post("/clients/", form)
    assert response.status_code == 400 and message in text(response)
    assert list(Client.objects.values_list("name", flat=True)) == ["agent"]
    assert "jz_" not in text(response)


def test_the_client_list_costs_the_same_queries_with_many_clients(people, staff):
    def queries():
        with CaptureQueriesContext(connection) as captured:
            assert staff.get("/clients/").status_code == 200
        return len(captured)

    for n in range(3):
        clients.create(f"device-{n}", sources="agent-*")
    few = queries()
    for n in range(3, 30):
        clients.create(f"device-{n}", sources="agent-*")
    assert queries() == few
    assert text(staff.get("/clients/")).count('href="/clients/device-') == 30


def test_editing_a_client_changes_its_access_and_keeps_its_token(world, staff):
    page = text(staff.get("/clients/agent/"))
    assert 'value="agent-*"' in page and "cannot be shown again" in page
    response = staff.post("/clients/agent/", {"sources": "mail-*", "scopes": ["read", "upload"],
                                              "upload_source": "uploads-phone"}, follow=True)
    assert response.redirect_chain == [("/clients/agent/", 302)] and "Saved agent." in text(response)
    caller = clients.authenticate(world["token"])
    assert caller.sources == ("mail-*",) and caller.scopes == {"read", "upload"}
    assert caller.upload_source == "uploads-phone"


def test_a_bad_edit_says_why_and_changes_nothing(world, staff):
    response = staff.post("/clients/agent/", {"sources": "mail-*", "scopes": ["upload"],
                                              "upload_source": "agent-laptop"})
    assert response.status_code == 400 and "is a claude_code connector, not an upload one" in text(response)
    assert clients.get("agent").sources == ["agent-*"] and clients.get("agent").upload_source == ""


def test_revoking_asks_first_then_the_token_stops_working(world, staff):
    confirm = text(staff.get("/clients/agent/revoke/"))
    assert "Revoke agent?" in confirm and "stops working at once" in confirm
    assert clients.authenticate(world["token"]) is not None
    response = staff.post("/clients/agent/revoke/", follow=True)
    assert response.redirect_chain == [("/clients/", 302)]
    assert "Revoked agent: its token no longer works." in text(response)
    assert clients.authenticate(world["token"]) is None
    assert "revoked" in text(staff.get("/clients/agent/"))


@pytest.mark.parametrize("path", ["/clients/nobody/", "/clients/nobody/revoke/"])
def test_an_unknown_client_is_404(staff, path):
    assert staff.get(path).status_code == 404
    assert staff.post(path).status_code == 404


# --- agent view ---------------------------------------------------------------------------------

@pytest.fixture
def shop():
    return {
        "old": make_item(title="Stripe webhook signature failure", project="shop-site", occurred_at=days_ago(20),
                         summary="The stripe webhook rejected events: the signing secret was stale."),
        "new": make_item(title='Checkout <b>button</b> colour', project="shop-site", occurred_at=days_ago(2)),
        "other": make_item(title="Garden watering schedule", project="garden", occurred_at=days_ago(1)),
    }


def test_the_agent_view_shows_what_both_hooks_would_inject(shop, plain):
    response = plain.get("/agent-view/", {"project": "shop-site", "prompt": "the stripe webhook fails again"})
    page = text(response)
    start = page.split('<pre id="session-start">', 1)[1].split("</pre>", 1)[0]
    assert f"[{shop['new'].pk}] {days_ago(2):%Y-%m-%d} Checkout &lt;b&gt;button&lt;/b&gt; colour" in start
    assert f"[{shop['old'].pk}]" in start and "Garden" not in start
    assert "Jezero is this team&#x27;s library of past work" in start
    first = page.split('<pre id="first-prompt">', 1)[1].split("</pre>", 1)[0]
    assert f"[{shop['old'].pk}] {days_ago(20):%Y-%m-%d} Stripe webhook signature failure" in first
    assert "<code>stripe</code>" in page and "<code>webhook</code>" in page
    assert '<option value="shop-site" selected>' in page


def test_the_agent_view_finds_the_project_from_a_working_folder(shop, plain):
    page = text(plain.get("/agent-view/", {"cwd": str(Path.home() / "src" / "garden" / "beds"), "prompt": "hi"}))
    assert "Project <strong>garden</strong> (from the folder)" in page
    assert f"[{shop['other'].pk}]" in page
    assert "Nothing is injected: fewer than two distinctive words" in page


def test_the_agent_view_starts_empty_and_without_a_project_shows_only_the_protocol(shop, plain):
    page = text(plain.get("/agent-view/"))
    assert "<pre" not in page and "Show what would be injected" in page
    page = text(plain.get("/agent-view/", {"cwd": "/tmp/scratch", "prompt": "quantum flux capacitor"}))
    assert "No project: only the protocol is injected." in page
    assert "no result shares two of these words" in page
    page = text(plain.get("/agent-view/", {"project": "brand-new", "prompt": ""}))
    assert "Project <strong>brand-new</strong>: no items in it yet" in page
    assert '<option value="brand-new" selected>' in page
