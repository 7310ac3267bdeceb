"""One connector run end to end (docs/design.md "The way of the data"): real Claude Code transcripts in a folder, the
real extractive summariser, the real database and index."""

import json

import pytest

from jezero_site.config import validate
from library import store
from library.ingest import locks, pipeline
from library.models import Item, RunReport, UnitCursor
from tests.conftest import REAL_FIXTURES, Counting
from tests.integration.conftest import SESSIONS, TWO_DAYS, age, sessions_folder, summarizer

pytestmark = pytest.mark.django_db


@pytest.fixture
def folder(tmp_path):
    """A projects folder holding three real sessions, settled (modified two days ago)."""
    return sessions_folder(tmp_path)


@pytest.fixture
def connector(settings, folder):
    def configure(**options):
        options = {"name": "agent-laptop", "type": "claude_code", "path": str(folder), **options}
        settings.JEZERO = {**settings.JEZERO, "connectors": validate({"connectors": [options]})["connectors"]}
        return options["name"]

    configure()
    return configure


def test_a_run_stores_one_item_per_segment_and_moves_the_cursor(connector):
    model = Counting()
    report = pipeline.run("agent-laptop", summarizer=model)
    assert (report.units_seen, report.units_changed, report.units_stored, report.units_failed) == (3, 3, 2, 0)
    assert report.units_too_small == 1  # claude_10 is a tiny session, below min_chars 400
    items = list(Item.objects.order_by("key"))
    assert len(items) == len(model.requests) == report.segments_summarised
    item = Item.objects.get(key=f"agent-laptop:{SESSIONS['claude_7.jsonl']}#0")
    assert item.source == "agent-laptop" and item.trust == "own" and item.summarizer == "extractive"
    assert item.original_ref == SESSIONS["claude_7.jsonl"]
    assert "Search if claude -p can make use of WebSearch" in item.original
    assert item.hints["cwd"] == "/src/experiments/claude_p"
    assert item.occurred_at.year == 2026 and item.occurred_at.month == 1
    assert UnitCursor.objects.filter(connector="agent-laptop").count() == 3
    assert RunReport.objects.get().outcome == "ok"
    assert store.check().ok

    again = pipeline.run("agent-laptop", summarizer=model)
    assert (again.units_changed, again.model_calls) == (0, 0)
    assert len(model.requests) == len(items)


def test_unchanged_segments_cost_nothing_after_a_reset(connector):
    model = Counting()
    pipeline.run("agent-laptop", summarizer=model)
    calls = len(model.requests)
    UnitCursor.objects.filter(connector="agent-laptop").delete()  # `jezero connector reset`
    report = pipeline.run("agent-laptop", summarizer=model)
    assert report.units_changed == 3
    assert report.model_calls == 0 and len(model.requests) == calls
    assert report.segments_unchanged == calls


def test_a_growing_session_costs_the_theoretical_minimum(settings, connector, folder, tmp_path):
    """Cut a real transcript at several points and run after each cut: the calls equal one
    per new segment plus one per change of the last segment; earlier items keep ids and hashes.
    (The cuts start after the point where this session's user rewound and re-asked.)"""
    summarizer(settings, max_input_chars=1_000)
    session = SESSIONS["claude_6.jsonl"]
    path = folder / "-src-experiments" / f"{session}.jsonl"
    for other in SESSIONS.values():
        if other != session:
            (folder / "-src-experiments" / f"{other}.jsonl").unlink()
    lines = (REAL_FIXTURES / "claude_6.jsonl").read_bytes().splitlines(keepends=True)
    model = Counting()
    previous = {}                                    # key → (id, hash) after the last run
    for cut in (39, 42, 45, 48, 51, 54, 57, len(lines)):
        path.write_bytes(b"".join(lines[:cut]))
        age(path)
        before = len(model.requests)
        pipeline.run("agent-laptop", summarizer=model)
        current = {item.key: (item.pk, item.text_hash) for item in Item.objects.order_by("pk")}
        new_segments = [key for key in current if key not in previous]
        changed = [key for key in current if key in previous and previous[key][1] != current[key][1]]
        assert len(model.requests) - before == len(new_segments) + len(changed)
        assert len(changed) <= 1                     # only the segment that was last can change
        if changed:
            assert changed[0] == max(previous, key=lambda k: int(k.rsplit("#", 1)[1]))
        assert all(current[key][0] == previous[key][0] for key in previous)   # same ids
        previous = current
    assert len(previous) >= 5                        # it really was cut into several segments
    UnitCursor.objects.all().delete()
    assert pipeline.run("agent-laptop", summarizer=model).model_calls == 0


def test_a_failing_model_leaves_that_unit_for_the_next_run_and_stores_the_others(connector):
    failing = Counting(fail_when="Search if claude -p can make use of WebSearch")
    report = pipeline.run("agent-laptop", summarizer=failing)
    assert report.units_failed == 1 and report.units_stored == 1
    assert report.errors[0]["unit"] == SESSIONS["claude_7.jsonl"]
    assert "400" in report.errors[0]["error"]
    assert not Item.objects.filter(original_ref=SESSIONS["claude_7.jsonl"]).exists()
    assert not UnitCursor.objects.filter(unit_id=SESSIONS["claude_7.jsonl"]).exists()
    assert Item.objects.filter(original_ref=SESSIONS["claude_6.jsonl"]).exists()

    healthy = Counting()
    second = pipeline.run("agent-laptop", summarizer=healthy)
    assert second.units_changed == 1 and second.units_stored == 1
    assert Item.objects.filter(original_ref=SESSIONS["claude_7.jsonl"]).exists()


def test_a_dry_run_counts_what_would_be_sent_and_changes_nothing(connector):
    report = pipeline.run("agent-laptop", dry_run=True)
    assert report.documents >= 2 and report.characters > 1_000
    assert report.estimated_tokens == pytest.approx(report.characters / 4, abs=report.documents)
    assert Item.objects.count() == 0 and UnitCursor.objects.count() == 0
    assert report.model_calls == 0


def test_sample_summarises_the_newest_units_and_leaves_the_cursor(connector, folder):
    newest = folder / "-src-experiments" / f"{SESSIONS['claude_7.jsonl']}.jsonl"
    age(newest, TWO_DAYS - 3600)
    report = pipeline.run("agent-laptop", sample=1, summarizer=Counting())
    assert report.units_stored == 1
    assert set(Item.objects.values_list("original_ref", flat=True)) == {SESSIONS["claude_7.jsonl"]}
    assert UnitCursor.objects.count() == 0


def test_a_limit_stops_the_run_and_says_so(connector):
    model = Counting()
    report = pipeline.run("agent-laptop", limit=1, summarizer=model)
    assert len(model.requests) <= 2  # the unit that took the last call finishes whole
    assert "limit of 1 model call" in report.budget_stopped
    assert report.units_left >= 1
    rerun = pipeline.run("agent-laptop", summarizer=model)
    assert rerun.units_stored >= 1 and not rerun.budget_stopped


def test_the_daily_token_budget_stops_calls(settings, connector):
    RunReport.objects.create(connector="agent-laptop", stats={"input_tokens": 900, "output_tokens": 200})
    summarizer(settings, daily_token_budget=1_000)
    report = pipeline.run("agent-laptop", summarizer=Counting())
    assert "daily token budget" in report.budget_stopped and report.model_calls == 0


def test_settling_units_are_left_for_later(connector, folder):
    for path in (folder / "-src-experiments").iterdir():
        age(path, 60)  # modified a minute ago; settle_minutes is 30
    report = pipeline.run("agent-laptop", summarizer=Counting())
    assert report.units_settling == 3 and Item.objects.count() == 0 and UnitCursor.objects.count() == 0


def test_a_run_refuses_to_start_without_a_model(settings, connector):
    summarizer(settings, provider="anthropic", model=None)
    with pytest.raises(pipeline.RunRefused, match="summarizer.model must be set"):
        pipeline.run("agent-laptop")
    assert RunReport.objects.count() == 0


def test_one_run_per_connector_at_a_time(connector):
    with locks.connector_lock("agent-laptop"), pytest.raises(pipeline.RunRefused, match="already running"):
        pipeline.run("agent-laptop", summarizer=Counting())


def test_an_unknown_connector_is_refused(connector):
    with pytest.raises(pipeline.RunRefused, match="no connector named 'nope'"):
        pipeline.run("nope")


def test_secrets_never_reach_the_model_or_the_database(connector, folder):
    token = "ghp_" + "R8kq2ZpL0vXc7TnW4yHs9BdF6mJa1QeU3iGo"
    path = folder / "-src-experiments" / "5e0b2b87-0000-4000-8000-000000000001.jsonl"
    line = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "5e0b2b87-0000-4000-8000-000000000001",
            "cwd": f"/home/ana/src/shop?token={token}", "timestamp": "2026-03-01T10:00:00Z",
            "message": {"role": "user", "content": f"deploy with GITHUB_TOKEN={token} please, then check the "
                                                   "release notes and the changelog for the shop. " * 8}}
    path.write_text(json.dumps(line) + "\n")
    age(path)
    model = Counting()
    pipeline.run("agent-laptop", summarizer=model)
    assert all(token not in r.document and token not in (r.context or "") for r in model.requests)
    for item in Item.objects.all():
        assert token not in json.dumps([item.title, item.summary, item.questions, item.atoms, item.original, item.hints])
    stored = Item.objects.get(original_ref="5e0b2b87-0000-4000-8000-000000000001")
    assert "[REDACTED:github-token]" in stored.original


def test_projects_come_from_the_hints(settings, connector):
    settings.JEZERO = {**settings.JEZERO, "projects": {"paths": {"/src/experiments/claude_p": "claude-p"},
                                                       "roots": []}}
    pipeline.run("agent-laptop", summarizer=Counting())
    assert set(Item.objects.filter(original_ref=SESSIONS["claude_7.jsonl"]).values_list("project", flat=True)) == {
        "claude-p"}
    connector(project="fixed-one")
    UnitCursor.objects.all().delete()
    Item.objects.all().delete()
    pipeline.run("agent-laptop", summarizer=Counting())
    assert set(Item.objects.values_list("project", flat=True)) == {"fixed-one"}


def test_segments_that_disappear_are_removed_with_their_unit(settings, connector, folder):
    summarizer(settings, max_input_chars=1_500)
    pipeline.run("agent-laptop", summarizer=Counting())
    session = SESSIONS["claude_6.jsonl"]
    before = Item.objects.filter(original_ref=session).count()
    assert before > 2
    path = folder / "-src-experiments" / f"{session}.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:20]))  # the session was rewritten shorter
    age(path)
    pipeline.run("agent-laptop", summarizer=Counting())
    after = Item.objects.filter(original_ref=session)
    assert 0 < after.count() < before
    assert store.check().ok
    assert all(item.key.startswith(f"agent-laptop:{session}#") for item in after)


def test_a_missing_folder_is_reported_not_silent(connector, tmp_path):
    connector(path=str(tmp_path / "nowhere"))
    report = pipeline.run("agent-laptop", summarizer=Counting())
    assert report.units_seen == 0
    assert report.warnings["path_missing"] == 1
    assert "does not exist" in report.errors[0]["error"]


def test_a_source_that_cannot_be_read_fails_the_run_clearly_and_changes_nothing(connector, monkeypatch):
    from connectors.base import UnitError
    from connectors.claude_code import ClaudeCodeConnector

    def unreadable(self):
        raise UnitError("imap.example.org: login failed (AUTHENTICATIONFAILED)")
        yield  # pragma: no cover - makes this a generator like the real discover()

    monkeypatch.setattr(ClaudeCodeConnector, "discover", unreadable)
    report = pipeline.run("agent-laptop", summarizer=Counting())
    assert report.source_failed and report.units_seen == 0
    assert report.errors == [{"unit": None, "error": "imap.example.org: login failed (AUTHENTICATIONFAILED)"}]
    assert RunReport.objects.get().outcome == "failed"
    assert Item.objects.count() == 0 and UnitCursor.objects.count() == 0
