"""Choosing the summariser from the web app and the CLI (docs/design.md "Configuration as data"): the Settings page's form
generated from the `[summarizer]` schema, values set here over jezero.toml's key by key, the
API key written to a 0600 file and never to the database, a log or a page, the effective
configuration used by every run (without a restart), and the Test button's one call through
the real SDKs against the fake model server on loopback."""

import io
import logging
import socket
import stat

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client as Browser

from library.errors import InvalidSettings
from library.ingest import pipeline
from library.ingest.summarize import configuration
from library.models import Item, Job, SummarizerSetting
from tests.fakes.model_server import anthropic_tool_reply, api_error, openai_reply
from tests.integration.conftest import summarizer

pytestmark = pytest.mark.django_db

KEY = "sk-ant-settings-test-0123456789-abcdwxyz"
RECORD = {
    "title": "Month-end date test fixed with timedelta",
    "summary": "The calendar test failed at a month's end. Tomorrow is now today plus a timedelta. The tests pass.",
    "questions": ["Why did the date test fail on the first of the month?", "How is tomorrow computed now?",
                  "Which test file covers the calendar?"],
    "atoms": [{"kind": "fix", "text": "date.today() + timedelta(days=1)"},
              {"kind": "command", "text": "pytest tests/test_calendar.py"}],
    "project": None,
}


@pytest.fixture(autouse=True)
def isolated(settings, tmp_path, monkeypatch):
    """The key file in this test's folder; no provider key in the environment."""
    settings.JEZERO_SUMMARIZER_KEY_FILE = tmp_path / "summarizer-api-key"
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY_FILE", "OPENAI_API_KEY", "OPENAI_API_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def commit(django_capture_on_commit_callbacks):
    """POST and let the transaction commit, so a job's task runs (Huey's immediate mode),
    then follow the redirect."""

    def send(browser, url, data=None):
        with django_capture_on_commit_callbacks(execute=True):
            response = browser.post(url, data or {})
        return browser.get(response["Location"]) if response.status_code == 302 else response

    return send


def page(response):
    return response.content.decode()


def form(**values):
    """A submitted Settings form: every editable field (empty unless given)."""
    return {name: "" for name in configuration.EDITABLE} | values


def everything_stored():
    """Every row of every table of the database, as text."""
    out = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f'SELECT * FROM "{table}"')  # noqa: S608 - table names from the schema itself
            out.extend(repr(row) for row in cursor.fetchall())
    return "\n".join(out)


def sent_key(request):
    """The API key a request carried (the anthropic SDK sends it as a bearer token or X-Api-Key)."""
    return request.headers.get("x-api-key") or request.headers["authorization"].removeprefix("Bearer ")


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- access ------------------------------------------------------------------------------------------

def test_only_staff_reach_the_settings_page_and_its_actions(client, people, staff):
    """Anonymous visitors go to the login page; a plain user gets 403 and changes nothing."""
    assert client.get("/settings/")["Location"].startswith("/login/")
    plain = Browser()
    plain.force_login(people["plain"])
    assert plain.get("/settings/").status_code == 403
    assert plain.post("/settings/", form(provider="openai", model="x")).status_code == 403
    assert plain.post("/settings/test/").status_code == 403
    assert not SummarizerSetting.objects.exists() and not Job.objects.exists()
    response = staff.get("/settings/")
    assert response.status_code == 200
    assert '<a href="/settings/" aria-current="page">Settings</a>' in page(response)
    assert 'href="/settings/"' not in page(plain.get("/"))


# --- the form and the layers -------------------------------------------------------------------------

def test_mistakes_are_named_beside_their_fields_and_nothing_is_changed(staff, settings):
    """Out of range, not a number, a provider without a model: each beside its field, 400, no
    row stored and no key file written although a key was typed."""
    response = staff.post("/settings/", form(provider="anthropic", timeout_seconds="0", max_concurrency="many")
                          | {"api_key": KEY})
    html = page(response)
    assert response.status_code == 400
    assert '<p class="field-error" id="f-timeout_seconds-error">0 is out of range (allowed 1–3,600)</p>' in html
    assert "expected a whole number, got &#x27;many&#x27;" in html
    assert '<p class="field-error" id="f-model-error">required for provider anthropic</p>' in html
    assert 'aria-invalid="true"' in html
    assert KEY not in html
    assert not SummarizerSetting.objects.exists()
    assert not settings.JEZERO_SUMMARIZER_KEY_FILE.exists()

    response = staff.post("/settings/", form(model="claude-haiku-4-5") | {"api_key": "two words"})
    assert response.status_code == 400
    assert "an API key is one line of 8 to 1,000 printable characters" in page(response)
    assert not SummarizerSetting.objects.exists()


def test_values_set_here_override_the_file_key_by_key_and_clear_back_to_it(staff, settings):
    """The file sets model and timeout; the page sets timeout and max_concurrency: model stays
    the file's; each field says where its value comes from; Clear puts the file's back."""
    summarizer(settings, provider="openai", model="file-model", timeout_seconds=60)
    response = staff.post("/settings/", form(provider="openai", timeout_seconds="30", max_concurrency="2"))
    assert response.status_code == 302
    config = configuration.effective()
    assert (config["provider"], config["model"], config["timeout_seconds"], config["max_concurrency"]) == \
           ("openai", "file-model", 30, 2)
    html = page(staff.get("/settings/"))
    assert 'id="f-model-from">In use: <code>file-model</code> — from <strong>jezero.toml</strong>' in html
    assert 'id="f-timeout_seconds-from">In use: <code>30</code> — from <strong>set here</strong>' in html
    assert 'id="f-max_input_chars-from">In use: <code>60000</code> — from <strong>default</strong>' in html
    assert 'placeholder="jezero.toml: 60"' in html     # what an empty field gives
    assert 'name="clear" value="timeout_seconds"' in html and 'value="model"' not in html.split("f-model-from")[1][:300]

    response = staff.post("/settings/clear/", {"clear": "timeout_seconds"})
    assert response.status_code == 302
    assert configuration.effective()["timeout_seconds"] == 60
    assert configuration.describe().values["timeout_seconds"].origin == configuration.FILE
    assert list(SummarizerSetting.objects.values_list("key", flat=True)) == ["max_concurrency", "provider"]

    # Submitting the form with a field emptied clears it too; the file's value applies again.
    staff.post("/settings/", form(provider="openai"))
    assert list(SummarizerSetting.objects.values_list("key", flat=True)) == ["provider"]
    assert configuration.effective()["max_concurrency"] == 4


def test_command_and_api_key_env_stay_in_the_file(settings):
    """A command line to run and the variable sent as the key cannot be set from outside the file."""
    with pytest.raises(InvalidSettings) as refused:
        configuration.change({"command": "sh -c id", "api_key_env": "JEZERO_SECRET_KEY"})
    assert set(refused.value.problems) == {"command", "api_key_env"}
    with pytest.raises(InvalidSettings) as refused:
        configuration.change({"provider": "command", "model": "m"})
    assert "command runs the command line of jezero.toml" in refused.value.problems["provider"]
    summarizer(settings, command=["true"])
    assert configuration.change({"provider": "command", "model": "m"})["command"] == ["true"]
    assert not SummarizerSetting.objects.filter(key="command").exists()


def test_a_stored_value_that_no_longer_fits_the_schema_is_ignored_and_reported():
    SummarizerSetting.objects.create(key="timeout_seconds", value=99_999)
    described = configuration.describe()
    assert described.config["timeout_seconds"] == 120
    assert "out of range" in described.problems["timeout_seconds"]


# --- the API key -------------------------------------------------------------------------------------

def test_the_key_typed_in_the_page_goes_to_a_0600_file_never_to_the_database_a_log_or_a_page(
        staff, settings, caplog, server, commit):
    caplog.set_level(logging.DEBUG)
    response = staff.post("/settings/", form(provider="anthropic", model="claude-fake", base_url=server.url)
                          | {"api_key": f"  {KEY}\n"})
    assert response.status_code == 302
    path = settings.JEZERO_SUMMARIZER_KEY_FILE
    assert path.read_text() == KEY + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not list(path.parent.glob(".summarizer-api-key.*"))      # no temporary file left behind

    html = page(staff.get("/settings/"))
    assert "set — ends in …wxyz" in html and KEY not in html and KEY[:-4] not in html
    assert 'type="password" id="f-api_key" name="api_key" value=""' in html
    assert "The key saved here is used" in html

    server.script(anthropic_tool_reply(RECORD))
    commit(staff, "/settings/test/")
    assert sent_key(server.requests[-1]) == KEY      # it is the key the provider gets
    assert KEY not in everything_stored()
    assert KEY not in caplog.text

    # The environment wins over the saved key, and the page says so.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
        assert "holds a key and is used, not the one saved here" in page(staff.get("/settings/"))
        status = configuration.key_status()
        assert (status.origin, status.shadowed) == ("env", True)

    response = staff.post("/settings/key/remove/")
    assert response.status_code == 302 and not path.exists()
    assert "None saved here." in page(staff.get("/settings/"))


# --- the effective configuration in use --------------------------------------------------------------

def test_every_run_uses_the_effective_configuration_and_a_running_worker_picks_a_change_up(laptop, server):
    """The worker's process read jezero.toml (extractive) when it started; each run reads the
    summariser anew, so a model chosen since, then its key saved since, are used at the next
    run — with the limits set here — and no restart."""
    from library.errors import RunRefused
    from library.tasks import run_due_connectors

    configuration.change({"provider": "anthropic", "model": "claude-fake", "base_url": server.url,
                          "max_calls_per_run": "2"})
    with pytest.raises(RunRefused, match="ANTHROPIC_API_KEY"):
        pipeline.run(laptop)                                # the model chosen, its key not yet given
    configuration.save_key(KEY)
    server.script(*[anthropic_tool_reply(RECORD) for _ in range(5)])
    run_due_connectors()   # the worker's next tick (Huey's immediate mode in tests)
    assert len(server.requests) == 2                       # max_calls_per_run, set here
    assert {item.summarizer for item in Item.objects.all()} == {"anthropic:claude-fake"}
    assert server.requests[0].body["model"] == "claude-fake" and sent_key(server.requests[0]) == KEY


def test_re_summarising_uses_the_effective_configuration(server, staff, commit):
    from tests.conftest import make_item

    item = make_item(original="user: the build fails\n\nassistant: pinned the compiler; it builds.")
    configuration.change({"provider": "openai", "model": "local-model", "base_url": server.url})
    server.script(openai_reply(RECORD))
    call_command("resummarize", "--ids", str(item.pk), stdout=io.StringIO(), stderr=io.StringIO())
    item.refresh_from_db()
    assert item.summarizer == "openai:local-model" and item.title == RECORD["title"]
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"   # a keyless local server


# --- the Test button ---------------------------------------------------------------------------------

def test_the_test_button_shows_the_record_the_model_wrote_through_the_real_sdk(staff, server, commit):
    configuration.change({"provider": "anthropic", "model": "claude-fake", "base_url": server.url})
    configuration.save_key(KEY)
    server.script(anthropic_tool_reply(RECORD, input_tokens=321, output_tokens=54))
    html = page(commit(staff, "/settings/test/"))
    assert "<strong>anthropic:claude-fake</strong> wrote this record of the test sample" in html
    assert "321 tokens in, 54 out" in html
    assert f"<h2>{RECORD['title']}</h2>" in html and "pytest tests/test_calendar.py" in html
    assert 'href="/settings/">Back to Settings' in html
    [request] = server.requests
    assert request.body["model"] == "claude-fake"
    assert "The date test in tests/test_calendar.py fails" in request.body["messages"][0]["content"]
    assert not Item.objects.exists()                       # a test stores nothing
    job = Job.objects.get()
    assert job.kind == Job.Kind.SUMMARIZER_TEST and job.status == Job.Status.DONE


@pytest.mark.parametrize(("reply", "words"), [
    (api_error(401, "authentication_error"), "the provider refused the API key (HTTP 401): check the key"),
    (api_error(404, "not_found_error"), "not found (HTTP 404): check the model name &#x27;claude-fake&#x27;"),
    (api_error(529, "overloaded_error"), "the provider had an error (HTTP 529): try again later"),
])
def test_a_failed_test_says_why_in_plain_words_after_one_call(staff, server, commit, reply, words):
    """No retry: one call, even for a status the runs would retry."""
    configuration.change({"provider": "anthropic", "model": "claude-fake", "base_url": server.url})
    configuration.save_key(KEY)
    server.script(reply, reply)
    html = page(commit(staff, "/settings/test/"))
    assert "<strong>Failed</strong>: " + words in html
    assert len(server.requests) == 1
    assert Job.objects.get().status == Job.Status.FAILED


def test_an_unreachable_server_and_a_missing_key_are_said_plainly(staff, commit):
    url = f"http://127.0.0.1:{closed_port()}"
    configuration.change({"provider": "anthropic", "model": "claude-fake", "base_url": url})
    response = staff.post("/settings/test/")        # no key anywhere: refused before any job
    assert response.status_code == 302 and not Job.objects.exists()
    assert "set the environment variable ANTHROPIC_API_KEY" in page(staff.get("/settings/"))
    configuration.save_key(KEY)
    html = page(commit(staff, "/settings/test/"))
    assert f"could not reach {url}: check base_url and that the server is running" in html


# --- the CLI ----------------------------------------------------------------------------------------

def run_cli(*args, stdin=None, monkeypatch=None):
    out = io.StringIO()
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    call_command("summarizer", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_the_cli_shows_sets_clears_and_tests_through_the_same_rules(settings, server, monkeypatch):
    summarizer(settings, model="file-model")
    with pytest.raises(CommandError, match="timeout_seconds: 0 is out of range"):
        run_cli("set", "provider=anthropic", "timeout_seconds=0")
    with pytest.raises(CommandError, match="'provider' must be KEY=VALUE"):
        run_cli("set", "provider")
    with pytest.raises(CommandError, match="command: a command line to run is set in jezero.toml only"):
        run_cli("set", "command=sh")
    assert not SummarizerSetting.objects.exists()

    out = run_cli("set", "provider=anthropic", f"base_url={server.url}", "known_projects=shop",
                  "known_projects=site")
    assert "provider            anthropic  [set here]" in out
    assert "model               file-model  [jezero.toml]" in out
    assert "known_projects      shop, site  [set here]" in out
    assert "api key             from none: set ANTHROPIC_API_KEY or run `jezero summarizer set-key`" in out

    with pytest.raises(CommandError, match="not one"):
        run_cli("set-key", stdin="not a key\n", monkeypatch=monkeypatch)
    assert not settings.JEZERO_SUMMARIZER_KEY_FILE.exists()
    out = run_cli("set-key", stdin=KEY + "\n", monkeypatch=monkeypatch)
    assert "ends in …wxyz" in out and KEY not in out
    assert stat.S_IMODE(settings.JEZERO_SUMMARIZER_KEY_FILE.stat().st_mode) == 0o600
    assert KEY not in run_cli("show", "--json") and '"ends_in": "wxyz"' in run_cli("show", "--json")

    server.script(anthropic_tool_reply(RECORD))
    out = run_cli("test")
    assert "anthropic:file-model answered" in out and f"title: {RECORD['title']}" in out
    server.script(api_error(401, "authentication_error"))
    with pytest.raises(CommandError, match=r"refused the API key \(HTTP 401\)"):
        run_cli("test")

    with pytest.raises(CommandError, match="unknown key"):
        run_cli("unset", "colour")
    out = run_cli("unset", "base_url", "known_projects")
    assert out.startswith("cleared base_url, known_projects")
    assert "base_url            -  [default]" in out
    assert run_cli("remove-key").startswith("removed the saved API key")
