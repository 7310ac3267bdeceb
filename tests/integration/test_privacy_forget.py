"""Forgetting and exclusions inside the app (docs/design.md "Kept out"): what a tombstone stops
(the same session under another connector, an upload, a re-run), what staff see on the web
pages, what `jezero check` finds, and the configured exclusions. The file-level proof (the
text gone from the database file and a backup) is tests/e2e/test_privacy_cli.py."""

import json
import logging

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from jezero_site.config import validate
from library import forget, store
from library.ingest import pipeline
from library.models import ForgetLog, InboxSession, Item, Tombstone
from tests.conftest import REAL_FIXTURES, make_item
from tests.integration.conftest import SESSIONS, age, configure, sessions_folder
from tests.integration.test_api import token_for, upload

pytestmark = pytest.mark.django_db

CLAUDE_7 = SESSIONS["claude_7.jsonl"]


def two_laptops(settings, tmp_path):
    """Two connectors reading copies of the same real sessions (a laptop and its backup disk)."""
    first = sessions_folder(tmp_path / "a")
    second = sessions_folder(tmp_path / "b")
    configure(settings, {"name": "agent-laptop", "type": "claude_code", "path": str(first)},
              {"name": "agent-disk", "type": "claude_code", "path": str(second)})
    return first, second


def unit_items(source, unit):
    return list(forget.unit_items(source, unit).values_list("pk", flat=True))


def test_a_forgotten_session_read_by_another_connector_is_forgotten_there_too(settings, tmp_path, caplog):
    two_laptops(settings, tmp_path)
    stored = pipeline.run("agent-laptop").units_stored
    ids = unit_items("agent-laptop", CLAUDE_7)
    assert ids
    caplog.set_level(logging.INFO)
    done = forget.forget(forget.plan(ids=ids[:1]), by="ana")
    assert (done.units, done.items) == (1, len(ids)) and done.checkpointed is False   # in-memory test database
    assert "WebSearch" not in caplog.text and "forget by=ana how=ids units=1 items=" in caplog.text

    report = pipeline.run("agent-disk")   # the same files under another connector: the same segment hashes

    assert report.units_forgotten == 1 and report.units_stored == stored - 1
    assert unit_items("agent-disk", CLAUDE_7) == []
    assert Tombstone.objects.filter(source="agent-disk", unit_id=CLAUDE_7).exists()
    assert forget.problems() == []


def test_a_forgotten_session_that_grows_stays_forgotten_until_undone(settings, tmp_path):
    folder = sessions_folder(tmp_path)
    configure(settings, {"name": "agent-laptop", "type": "claude_code", "path": str(folder)})
    pipeline.run("agent-laptop")
    forget.forget(forget.plan(unit=f"agent-laptop:{CLAUDE_7}"), by="cli")
    path = next(folder.rglob(f"{CLAUDE_7}.jsonl"))
    with open(path, "a") as out:   # the session goes on: a new turn is appended
        out.write(json.dumps({"type": "user", "uuid": "late", "parentUuid": None, "sessionId": CLAUDE_7,
                              "timestamp": "2026-01-24T09:00:00Z",
                              "message": {"role": "user", "content": "one more question about the Task tool"}}) + "\n")
    age(path)

    grown = pipeline.run("agent-laptop")

    assert grown.units_changed == 1 and grown.units_forgotten == 1 and unit_items("agent-laptop", CLAUDE_7) == []
    forget.undo(f"agent-laptop:{CLAUDE_7}", by="cli")
    back = pipeline.run("agent-laptop")
    assert back.units_stored == 1 and unit_items("agent-laptop", CLAUDE_7)
    assert [entry.how for entry in ForgetLog.objects.order_by("at", "id")] == ["unit", "undo"]


def test_an_upload_of_a_forgotten_session_is_not_stored_and_its_inbox_copy_is_emptied(settings):
    configure(settings, {"name": "uploads-laptop", "type": "upload", "settle_minutes": 0})
    token = token_for("laptop", sources="*", scopes="read,upload", upload_source="uploads-laptop")
    body = (REAL_FIXTURES / "claude_7.jsonl").read_bytes()
    assert upload(token, body[: len(body) // 2 + body[len(body) // 2:].index(b"\n") + 1],
                  session_id=CLAUDE_7).status_code == 201
    pipeline.run("uploads-laptop")
    assert unit_items("uploads-laptop", CLAUDE_7)

    done = forget.forget(forget.plan(source="uploads-laptop"), by="ana")

    assert done.uploads == 1
    row = InboxSession.objects.get()
    assert row.entries == [] and row.hints == {}
    longer = upload(token, body, session_id=CLAUDE_7)   # the session grew on the device
    assert longer.status_code == 200 and longer.json()["stored"] is False
    assert "forgotten" in longer.json()["detail"]
    assert InboxSession.objects.get().entries == []
    assert pipeline.run("uploads-laptop").units_stored == 0 and not Item.objects.exists()

    forget.undo(f"uploads-laptop:{CLAUDE_7}", by="ana")
    assert upload(token, body, session_id=CLAUDE_7).status_code == 201
    assert pipeline.run("uploads-laptop").units_stored == 1


def test_check_finds_a_forgotten_unit_that_has_items_again():
    item = make_item(key="agent-test:session-1#0", source="agent-test")
    forget.forget(forget.plan(ids=[item.pk]), by="cli")
    assert forget.problems() == []
    make_item(key="agent-test:session-1#4", source="agent-test")   # written behind the tombstone's back
    problems = forget.problems()
    assert problems and "agent-test:session-1 has 1 item(s)" in problems[0]
    with pytest.raises(CommandError):
        call_command("check")


def test_a_forget_makes_the_postings_refresh_due():
    for n in range(3):
        make_item(title=f"webhook retry {n}")
    store.optimize()
    assert not store.postings_due()
    forget.forget(forget.plan(ids=[Item.objects.first().pk]), by="cli")
    assert store.postings_due()
    store.optimize()
    assert not store.postings_due()


def test_a_forget_never_touches_another_source_with_the_same_unit_name():
    mine = make_item(key="agent-a:shared-name#0", source="agent-a", project="p1")
    theirs = make_item(key="agent-b:shared-name#0", source="agent-b", project="p1")
    plan = forget.plan(unit="agent-a:shared-name")
    assert plan.units == {("agent-a", "shared-name"): [mine.pk]}
    forget.forget(plan, by="cli")
    assert list(Item.objects.values_list("pk", flat=True)) == [theirs.pk]


def test_the_admin_cannot_delete_items_behind_forget(staff):
    item = make_item()
    page = staff.get(f"/admin/library/item/{item.pk}/delete/")
    assert page.status_code == 403
    assert Item.objects.filter(pk=item.pk).exists()


# --- the web pages ---------------------------------------------------------------------------------

def test_staff_forget_a_project_from_its_timeline_after_a_confirmation(staff, people):
    kept = make_item(project="garden", source="agent-test")
    gone = [make_item(project="clinic", source="agent-test") for _ in range(2)]
    timeline = staff.get("/timeline/?project=clinic").content.decode()
    assert "/forget/?project=clinic" in timeline
    confirm = staff.get("/forget/?project=clinic").content.decode()
    assert "Forget project clinic for good?" in confirm and "Forget 2 items" in confirm
    assert Item.objects.count() == 3
    done = staff.post("/forget/", {"project": "clinic"}, follow=True).content.decode()
    assert "Forgot 2 items of 2 units." in done
    assert list(Item.objects.values_list("pk", flat=True)) == [kept.pk]
    assert Tombstone.objects.count() == len(gone)

    from django.test import Client

    plain = Client()
    plain.force_login(people["plain"])
    assert plain.get("/forget/?project=garden").status_code == 403
    assert plain.post("/forget/", {"project": "garden"}).status_code == 403
    assert "/forget/?" not in plain.get("/timeline/?project=garden").content.decode()
    assert Item.objects.filter(pk=kept.pk).exists()


def test_staff_forget_a_source_from_the_sources_page(staff, laptop):
    stored = pipeline.run(laptop).units_stored
    page = staff.get("/sources/").content.decode()
    assert f"/forget/?source={laptop}" in page
    assert staff.get("/forget/?source=no-such-source").status_code == 404
    staff.post("/forget/", {"source": laptop})
    assert not Item.objects.filter(source=laptop).exists()
    assert Tombstone.objects.filter(source=laptop).count() == stored


# --- exclusions ------------------------------------------------------------------------------------

def test_an_excluded_folder_is_never_read(settings, tmp_path):
    folder = sessions_folder(tmp_path)
    project = next(folder.iterdir())
    configure(settings, {"name": "agent-laptop", "type": "claude_code", "path": str(folder),
                         "exclude_paths": [str(project)]})
    report = pipeline.run("agent-laptop")
    assert report.units_excluded == len(SESSIONS) and report.units_stored == 0 and not Item.objects.exists()


def test_a_globally_excluded_working_folder_and_project_are_never_stored(settings, tmp_path):
    folder = sessions_folder(tmp_path)
    configure(settings, {"name": "agent-laptop", "type": "claude_code", "path": str(folder)})
    settings.JEZERO = {**settings.JEZERO, "privacy": validate({"privacy": {"exclude_paths": ["*/claude_p"]}})["privacy"]}
    first = pipeline.run("agent-laptop")
    assert first.units_excluded == 1 and first.units_stored >= 1   # claude_7 ran in /src/experiments/claude_p
    assert unit_items("agent-laptop", CLAUDE_7) == []

    settings.JEZERO = {**settings.JEZERO, "projects": {**settings.JEZERO["projects"], "paths": {"/src/experiments": "lab"}},
                       "privacy": validate({"privacy": {"exclude_projects": ["lab"]}})["privacy"]}
    configure(settings, {"name": "agent-disk", "type": "claude_code", "path": str(sessions_folder(tmp_path / "b"))})
    again = pipeline.run("agent-disk")
    assert again.units_excluded >= 1 and unit_items("agent-disk", CLAUDE_7) == []
    assert not Item.objects.filter(project="lab").exists()


def test_an_upload_from_an_excluded_project_is_not_stored(settings):
    configure(settings, {"name": "uploads-laptop", "type": "upload", "exclude_projects": ["clinic-notes"]})
    token = token_for("laptop", sources="*", scopes="read,upload", upload_source="uploads-laptop")
    body = (REAL_FIXTURES / "claude_7.jsonl").read_bytes()
    response = upload(token, body, session_id=CLAUDE_7, project="clinic-notes")
    assert response.status_code == 200 and response.json()["stored"] is False
    assert "project excluded" in response.json()["detail"]
    assert not InboxSession.objects.exists()


@pytest.mark.parametrize("config, said", [
    ({"privacy": {"exclude_projects": ["Clinic Notes"]}}, "privacy.exclude_projects: 'Clinic Notes' must be a slug"),
    ({"privacy": {"exclude_paths": [" "]}}, "privacy.exclude_paths: ' ' must not be empty"),
    ({"privacy": {"exclude": ["x"]}}, "privacy.exclude: unknown key"),
    ({"connectors": [{"name": "a", "type": "upload", "exclude_projects": "clinic"}]},
     "connectors[0].exclude_projects: expected a list of strings"),
])
def test_bad_exclusions_are_refused_with_the_key_named(config, said):
    from library.schema import ConfigError

    with pytest.raises(ConfigError) as caught:
        validate(config)
    assert said in str(caught.value)


def test_forgetting_a_source_of_more_than_a_thousand_uploaded_sessions():
    # One OR term per session would pass SQLite's expression depth (1,000).
    InboxSession.objects.bulk_create([InboxSession(source="uploads-big", session_id=f"s{n}", agent="codex",
                                                   entries=[["user", f"private note {n}", None]], size=20)
                                      for n in range(1_200)])
    plan = forget.plan(source="uploads-big")
    assert (plan.uploads, len(plan.units)) == (1_200, 1_200)
    done = forget.forget(plan, by="cli")
    assert done.uploads == 1_200 and not InboxSession.objects.exclude(entries=[]).exists()
    assert Tombstone.objects.filter(source="uploads-big").count() == 1_200
