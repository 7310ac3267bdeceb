"""Connectors as data (docs/design.md "Connectors", "Configuration as data"): added, edited, disabled and removed from the web app and the
CLI through one module (`library.ingest.configured`), checked by the schema jezero.toml uses,
beside the file's read-only connectors, and picked up by a running worker without a restart;
clients' upload sources that always have a connector; uploads no connector reads shown."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from library.access import clients
from library.errors import BadInput, InvalidConnector, NotFound
from library.ingest import configured, scheduling
from library.models import Connector, InboxSession, Item, RunReport, UnitCursor
from tests.conftest import make_item
from tests.integration.conftest import SESSIONS, configure, sessions_folder

pytestmark = pytest.mark.django_db


@pytest.fixture
def file_connector(settings, tmp_path):
    """jezero.toml defines `agent-laptop` (claude_code)."""
    configure(settings, {"name": "agent-laptop", "type": "claude_code", "path": str(tmp_path / "nowhere")})
    return "agent-laptop"


def text(response):
    return response.content.decode()


# --- the owner module -----------------------------------------------------------------------------

def test_a_connector_added_is_checked_by_the_files_schema_and_listed_after_the_files(file_connector, tmp_path):
    """Every mistake is named beside its key and nothing is stored; a good one is in use at once."""
    with pytest.raises(InvalidConnector) as refused:
        configured.add("markdown", "notes", {"interval_minutes": "0", "glob": "", "colour": "blue"})
    assert refused.value.problems == {
        "path": "required",
        "interval_minutes": "0 is out of range (allowed 1–10,080)",
        "colour": refused.value.problems["colour"],
    }
    assert "unknown option for a markdown connector" in refused.value.problems["colour"]
    assert not Connector.objects.exists()

    config = configured.add("markdown", "notes", {"path": str(tmp_path), "interval_minutes": "60",
                                                  "user_prompt_markers": "one\ntwo"})
    assert config["glob"] == "**/*.md" and config["interval_minutes"] == 60 and config["trust"] == "own"
    assert config["user_prompt_markers"] == ["one", "two"]
    assert configured.names() == ["agent-laptop", "notes"]
    assert configured.find("notes") == config


def test_a_name_the_file_uses_is_refused_and_so_is_a_taken_one(file_connector, tmp_path):
    with pytest.raises(InvalidConnector, match="jezero.toml defines a connector named 'agent-laptop'"):
        configured.add("codex", "agent-laptop", {"path": str(tmp_path)})
    configured.add("codex", "agent-codex", {"path": str(tmp_path)})
    with pytest.raises(InvalidConnector, match="a connector named 'agent-codex' exists already"):
        configured.add("claude_code", "agent-codex", {"path": str(tmp_path)})
    with pytest.raises(InvalidConnector, match="name: 'bad name' must be letters"):
        configured.add("codex", "bad name", {})
    assert list(Connector.objects.values_list("name", "type")) == [("agent-codex", "codex")]


def test_the_files_connectors_are_read_only_here(file_connector):
    for change in (lambda: configured.edit("agent-laptop", {"interval_minutes": "5"}),
                   lambda: configured.set_enabled("agent-laptop", False),
                   lambda: configured.remove("agent-laptop")):
        with pytest.raises(BadInput, match="defined in jezero.toml and is read-only here"):
            change()
    with pytest.raises(NotFound):
        configured.edit("nothing", {"interval_minutes": "5"})


def test_editing_changes_only_what_is_given_and_an_empty_value_restores_the_default(tmp_path):
    configured.add("claude_code", "agent-desk", {"path": str(tmp_path), "interval_minutes": "60", "project": "shop"})
    config = configured.edit("agent-desk", {"settle_minutes": "0", "project": ""})
    assert (config["interval_minutes"], config["settle_minutes"], config["project"]) == (60, 0, None)
    with pytest.raises(InvalidConnector) as refused:
        configured.edit("agent-desk", {"interval_minutes": "often", "type": "codex"})
    assert refused.value.problems["interval_minutes"] == "expected a whole number, got 'often'"
    assert "cannot be changed" in refused.value.problems["type"]
    assert configured.find("agent-desk")["interval_minutes"] == 60   # nothing changed
    assert configured.set_enabled("agent-desk", False)["enabled"] is False
    assert configured.find("agent-desk")["enabled"] is False


def test_removing_keeps_the_items_and_forgets_the_cursors(tmp_path):
    configured.add("claude_code", "agent-desk", {"path": str(tmp_path)})
    make_item(source="agent-desk", key="agent-desk:s1#0")
    UnitCursor.objects.create(connector="agent-desk", unit_id="s1", fingerprint="1")
    removed = configured.remove("agent-desk")
    assert (removed.items_kept, removed.cursors_forgotten) == (1, 1)
    assert Item.objects.filter(source="agent-desk").count() == 1
    assert not UnitCursor.objects.exists() and configured.find("agent-desk") is None


def test_a_name_the_file_takes_later_is_reported_and_the_files_connector_is_used(settings, tmp_path):
    """The database had `agent-x` first; then jezero.toml defines it too."""
    configured.add("codex", "agent-x", {"path": str(tmp_path)})
    configure(settings, {"name": "agent-x", "type": "claude_code", "path": str(tmp_path)})
    assert configured.find("agent-x")["type"] == "claude_code"
    assert configured.names() == ["agent-x"]
    [(name, problem)] = configured.problems()
    assert name == "agent-x" and "jezero.toml also defines a connector named 'agent-x'" in problem
    with pytest.raises(CommandError, match="1 problem"):
        call_command("check")
    UnitCursor.objects.create(connector="agent-x", unit_id="u", fingerprint="1")
    assert configured.remove("agent-x").cursors_forgotten == 0     # the cursors are the file's connector's
    assert UnitCursor.objects.count() == 1 and configured.problems() == []


def test_a_connector_added_after_the_worker_started_is_run_at_its_next_tick(settings, tmp_path):
    """The worker's process read jezero.toml when it started; the periodic task reads the
    connectors anew at every tick, so one added (or disabled) since is run (or not)."""
    from library.tasks import run_due_connectors

    configure(settings)    # the worker started with no connector in the file
    run_due_connectors()   # a tick: nothing to run
    assert not RunReport.objects.exists()
    configured.add("claude_code", "agent-late", {"path": str(sessions_folder(tmp_path))})
    run_due_connectors()   # the next tick (Huey's immediate mode in tests)
    report = RunReport.objects.get(connector="agent-late")
    assert report.outcome == "ok" and report.stats["units_stored"] == 2
    assert Item.objects.filter(source="agent-late").exists()
    configured.set_enabled("agent-late", False)
    assert scheduling.due() == []


# --- the CLI ---------------------------------------------------------------------------------------

def test_the_cli_adds_edits_lists_and_removes_through_the_same_rules(file_connector, tmp_path, capsys):
    call_command("connector", "add", "markdown", "notes", "--path", str(tmp_path), "--interval-minutes", "60",
                 "--disabled", "--option", "glob=tasks/**/*.md", "--option", "user_prompt_markers=a",
                 "--option", "user_prompt_markers=b")
    assert "added connector notes (markdown, reads" in capsys.readouterr().out
    config = configured.find("notes")
    assert (config["glob"], config["enabled"], config["user_prompt_markers"]) == ("tasks/**/*.md", False, ["a", "b"])

    call_command("connector", "edit", "notes", "--enabled", "--option", "glob=")
    assert configured.find("notes")["enabled"] is True and configured.find("notes")["glob"] == "**/*.md"
    call_command("connector", "list", "--json")
    listing = capsys.readouterr().out
    assert '"origin": "file"' in listing and '"origin": "database"' in listing

    for argv, message in [
        (("add", "markdown", "more", "--interval-minutes", "0"),
         r"interval_minutes: 0 is out of range \(allowed 1–10,080\); path: required"),
        (("add", "sqlite", "db"), "type: 'sqlite' is not one of"),
        (("add", "markdown"), "add needs TYPE and NAME"),
        (("edit", "agent-laptop", "--trust", "external"), "defined in jezero.toml"),
        (("remove", "nothing"), "no connector named 'nothing'"),
        (("reset", "notes", "--path", "x"), "reset takes no options"),
        (("edit", "notes", "--option", "glob"), "must be KEY=VALUE"),
    ]:
        with pytest.raises(CommandError, match=message) as failed:
            call_command("connector", *argv)
        assert failed.value.returncode == 1 and "\n" not in str(failed.value)
    assert list(Connector.objects.values_list("name", flat=True)) == ["notes"]

    call_command("connector", "remove", "notes")
    assert "its 0 item(s) are kept" in capsys.readouterr().out
    assert not Connector.objects.exists()


# --- the web app -----------------------------------------------------------------------------------

def test_the_add_page_offers_the_mounted_folders_with_their_probable_type(settings, tmp_path, staff):
    settings.JEZERO_SOURCES_DIR = tmp_path / "sources"
    for name in ("claude-code", "codex", "notes", "misc"):
        (tmp_path / "sources" / name).mkdir(parents=True)
    page = text(staff.get("/sources/add/"))
    assert f"Add {tmp_path}/sources/claude-code as claude_code" in page
    assert f"Add {tmp_path}/sources/codex as codex" in page
    assert f"Add {tmp_path}/sources/notes as markdown" in page
    assert f"Choose a type for {tmp_path}/sources/misc" in page
    form = text(staff.get("/sources/add/", {"type": "claude_code", "path": f"{tmp_path}/sources/claude-code"}))
    assert f'value="{tmp_path}/sources/claude-code"' in form and 'value="agent-claude-code"' in form
    assert f'<option value="{tmp_path}/sources/claude-code">claude_code (mounted)</option>' in form
    assert "the projects folder" in form and "run every this many minutes; allowed 1–10,080; default 15" in form


def test_the_form_shows_each_mistake_beside_its_field_and_adds_nothing(staff, tmp_path):
    response = staff.post("/sources/add/", {"type": "imap", "name": "mail-home", "port": "99999", "host": "",
                                            "user": "ana", "password_env": "not a variable", "enabled": "on"})
    page = text(response)
    assert response.status_code == 400 and not Connector.objects.exists()
    assert '<p class="field-error" id="f-host-error">required</p>' in page
    assert '<p class="field-error" id="f-port-error">99999 is out of range (allowed 1–65,535)</p>' in page
    assert "must be the name of an environment variable" in page
    assert 'value="ana"' in page   # what was typed stays

    response = staff.post("/sources/add/", {"type": "markdown", "name": "notes", "path": str(tmp_path),
                                            "interval_minutes": "30", "enabled": "on"}, follow=True)
    page = text(response)
    assert "Added notes." in page and "Added in the web app or the CLI" in page
    assert configured.find("notes")["interval_minutes"] == 30


def test_staff_edit_disable_and_remove_a_connector_added_here_but_not_one_of_the_file(file_connector, staff,
                                                                                      tmp_path):
    configured.add("markdown", "notes", {"path": str(tmp_path)})
    page = text(staff.get("/sources/"))
    assert "Defined in jezero.toml (read-only here)" in page
    assert 'href="/sources/notes/edit/"' in page and 'href="/sources/agent-laptop/edit/"' not in page
    edit = text(staff.get("/sources/notes/edit/"))
    assert f'value="{tmp_path}"' in edit and "readonly" in edit
    response = staff.post("/sources/notes/edit/", {"path": str(tmp_path), "interval_minutes": "-1", "enabled": "on"})
    assert response.status_code == 400 and "-1 is out of range" in text(response)
    staff.post("/sources/notes/edit/", {"path": str(tmp_path), "interval_minutes": "45", "enabled": "on"})
    assert configured.find("notes")["interval_minutes"] == 45
    staff.post("/sources/notes/enabled/", {"enabled": "false"})
    assert configured.find("notes")["enabled"] is False
    assert "read-only here" in text(staff.get("/sources/agent-laptop/edit/", follow=True))

    make_item(source="notes", key="notes:a.md")
    confirm = text(staff.get("/sources/notes/delete/"))
    assert "1 item stay" in confirm and "Remove notes</button>" in confirm
    assert configured.find("notes") is not None    # asking removes nothing
    page = text(staff.post("/sources/notes/delete/", follow=True))
    assert "Removed notes. Its 1 item stay in the library" in page
    assert configured.find("notes") is None and Item.objects.filter(source="notes").count() == 1


# --- clients and their upload sources ------------------------------------------------------------

def test_an_uploading_client_always_has_an_upload_connector(settings, tmp_path):
    configure(settings, {"name": "mail-home", "type": "imap", "host": "h", "user": "u", "password_env": "P"})
    client, _ = clients.create("phone", scopes="upload")
    assert client.upload_source == "uploads-phone"
    assert configured.find("uploads-phone")["type"] == "upload"
    clients.create("tablet", scopes="upload", upload_source="uploads-phone")   # shares it: nothing new
    assert Connector.objects.count() == 1

    with pytest.raises(BadInput, match="'mail-home' is a imap connector, not an upload one"):
        clients.create("laptop", scopes="read,upload", sources="*", upload_source="mail-home")
    assert not clients.listing()[0].name == "laptop" and Connector.objects.count() == 1

    with pytest.raises(BadInput, match="client phone, tablet uploads to 'uploads-phone'"):
        configured.remove("uploads-phone")
    clients.revoke("phone")
    clients.revoke("tablet")
    configured.remove("uploads-phone")


def test_a_reading_client_without_sources_is_refused_unless_asked_for(capsys):
    with pytest.raises(BadInput, match="a client with the read scope and no sources reads nothing"):
        clients.create("laptop")
    with pytest.raises(CommandError, match="--no-sources"):
        call_command("client", "add", "laptop")
    assert not clients.listing()
    call_command("client", "add", "laptop", "--no-sources")
    call_command("client", "add", "phone", "--scopes", "upload")
    out = capsys.readouterr().out
    assert "uploads land in source uploads-phone" in out
    assert [c.name for c in clients.listing()] == ["laptop", "phone"]


def test_uploads_no_connector_reads_show_on_the_sources_page_and_in_health(staff, client):
    InboxSession.objects.create(source="uploads-old", session_id="s1", agent="claude_code")
    InboxSession.objects.create(source="uploads-old", session_id="s2", agent="claude_code")
    assert client.get("/health").json()["uploads_without_connector"] == 2
    page = text(staff.get("/sources/"))
    assert "Uploads no connector reads" in page and "<code>uploads-old</code>: 2 sessions" in page
    staff.post("/sources/add/", {"type": "upload", "name": "uploads-old", "enabled": "on"})
    assert client.get("/health").json()["uploads_without_connector"] == 0
    assert "Uploads no connector reads" not in text(staff.get("/sources/"))


def test_a_dry_run_lists_what_a_run_would_read(settings, tmp_path):
    from library.ingest import pipeline

    configured.add("claude_code", "agent-desk", {"path": str(sessions_folder(tmp_path)), "enabled": "false"})
    report = pipeline.run("agent-desk", dry_run=True)     # a disabled connector can be tested
    assert report.units_seen == 3 and report.units_too_small == 1
    assert sorted(entry["unit"] for entry in report.would_read) == sorted(
        str(path) for path in (tmp_path / "projects" / "-src-experiments").glob("*.jsonl")
        if path.stem != SESSIONS["claude_10.jsonl"])
    assert sum(entry["characters"] for entry in report.would_read) == report.characters
    assert not Item.objects.exists() and not UnitCursor.objects.exists()


def test_exclusions_are_set_in_the_connector_form_one_per_line_and_checked(staff, tmp_path):
    form = text(staff.get("/sources/add/", {"type": "markdown"}))
    assert 'name="exclude_paths"' in form and 'name="exclude_projects"' in form
    response = staff.post("/sources/add/", {"type": "markdown", "name": "notes", "path": str(tmp_path),
                                            "exclude_projects": "therapy-notes\nNot A Slug", "enabled": "on"})
    assert response.status_code == 400 and not Connector.objects.exists()
    assert "&#x27;Not A Slug&#x27; must be a slug" in text(response)
    staff.post("/sources/add/", {"type": "markdown", "name": "notes", "path": str(tmp_path), "enabled": "on",
                                 "exclude_paths": "~/notes/health\n*/private/*", "exclude_projects": "therapy-notes"})
    found = configured.find("notes")
    assert found["exclude_paths"] == ["~/notes/health", "*/private/*"]
    assert found["exclude_projects"] == ["therapy-notes"]
