"""`later` (docs/design.md "Later"), step by step."""

import pytest
from django.db import connection

from library import search as lib
from library.errors import NotFound
from library.search import ALL_SOURCES, MATCHED_BY_SUBJECT, MATCHED_BY_TIMELINE
from tests.conftest import NOW, days_ago, make_item

pytestmark = pytest.mark.django_db


def later(item, **kwargs):
    kwargs.setdefault("allowed_sources", ALL_SOURCES)
    kwargs.setdefault("now", NOW)
    return lib.later(item.id, **kwargs)


def ids(result):
    return [hit.id for hit in result.hits]


def relevance(match, item):
    with connection.cursor() as cursor:
        cursor.execute("SELECT -bm25(items_fts, 2.0, 1.0, 1.5, 1.5, 0.5) FROM items_fts "
                       "WHERE items_fts MATCH %s AND rowid = %s", [match, item.id])
        row = cursor.fetchone()
    return row[0] if row else 0.0


@pytest.fixture
def fillers():
    """Unrelated records in the project, so the subject words are rare (BM25's IDF)."""
    return [make_item(title=f"plain chore {n}", summary="nothing of note", project="shop", occurred_at=days_ago(300 + n))
            for n in range(20)]


def test_newer_items_on_the_subject_come_newest_first(fillers):
    decision = make_item(title="Keep analytics behind the consent banner", project="shop", occurred_at=days_ago(100))
    reversal = make_item(title="Remove the analytics script; consent banner stays", project="shop", occurred_at=days_ago(50))
    wording = make_item(title="New consent banner wording behind the analytics opt-in", project="shop", occurred_at=days_ago(10))
    result = later(decision)
    assert result.matched_by == MATCHED_BY_SUBJECT
    assert ids(result) == [wording.id, reversal.id]
    assert all(hit.score is not None for hit in result.hits)
    assert result.heading == "NEWER ON THIS SUBJECT"


def test_only_items_at_or_after_the_item_in_its_project_count(fillers):
    decision = make_item(title="Keep analytics behind the consent banner", project="shop", occurred_at=days_ago(100))
    same_time = make_item(title="analytics consent banner, part 2", project="shop", occurred_at=days_ago(100))
    make_item(title="analytics consent banner draft", project="shop", occurred_at=days_ago(101))  # older
    make_item(title="analytics consent banner elsewhere", project="blog", occurred_at=days_ago(5))  # other project
    assert ids(later(decision)) == [same_time.id]


def test_the_callers_sources_bound_later_too(fillers):
    decision = make_item(title="Keep analytics behind the consent banner", project="shop", source="agent-a",
                         key="agent-a:1", occurred_at=days_ago(100))
    hidden = make_item(title="analytics consent banner removed", project="shop", source="mail-b", key="mail-b:1",
                       occurred_at=days_ago(5))
    assert hidden.id in ids(later(decision, allowed_sources=["agent-*", "mail-*"]))
    assert hidden.id not in ids(later(decision, allowed_sources=["agent-*"]))
    with pytest.raises(NotFound):
        later(hidden, allowed_sources=["agent-*"])


def test_the_bar_is_30_percent_of_the_best_hit_measured_with_the_item_itself(fillers):
    """Without a query the item's match on its own title sets the bar: a weak newer hit that
    would be the best once the item is dropped still falls below it."""
    decision = make_item(title="heron kestrel osprey plover", project="shop", occurred_at=days_ago(100))
    weak = make_item(title="weekly notes", summary="the heron " + "filler words " * 30, project="shop",
                     occurred_at=days_ago(20))
    match = lib.build_match_query(decision.title)
    assert relevance(match, weak) < 0.3 * relevance(match, decision)
    result = later(decision)
    assert result.matched_by == MATCHED_BY_TIMELINE
    assert result.heading == "NEWER IN THIS PROJECT (by date, not by subject)"
    assert weak.id in ids(result)  # there as context by date, not as a subject match


def test_hits_at_or_above_the_bar_pass():
    decision = make_item(title="heron kestrel", project="birds", occurred_at=days_ago(100))
    for n in range(20):
        make_item(title=f"plain chore {n}", project="birds", occurred_at=days_ago(200))
    close = make_item(title="heron kestrel again", project="birds", occurred_at=days_ago(30))
    match = lib.build_match_query(decision.title)
    assert relevance(match, close) >= 0.3 * relevance(match, decision)
    assert ids(later(decision)) == [close.id]


def _five_passing_hits():
    """Two strongly matching hits (older) and three weaker, newer ones — all above the bar."""
    for n in range(20):
        make_item(title=f"plain chore {n}", project="p", occurred_at=days_ago(300))
    decision = make_item(title="restic backup usb disk", project="p", occurred_at=days_ago(100))
    strong = [make_item(title="restic backup usb disk moved", project="p", occurred_at=days_ago(90 - n)) for n in range(2)]
    weaker = [make_item(title=f"restic backup check {n}", summary="usb", project="p", occurred_at=days_ago(30 - 5 * n))
              for n in range(3)]
    return decision, strong, weaker


def test_the_two_closest_stay_and_the_newest_fill_the_rest():
    decision, strong, weaker = _five_passing_hits()
    match = lib.build_match_query(decision.title)
    assert min(relevance(match, s) for s in strong) > max(relevance(match, w) for w in weaker)
    newest_two = [weaker[2], weaker[1]]
    assert ids(later(decision, limit=4)) == [w.id for w in newest_two] + [strong[1].id, strong[0].id]


def test_later_cuts_to_the_limit_newest_first():
    decision, strong, weaker = _five_passing_hits()
    assert ids(later(decision, limit=1)) == [strong[1].id]  # the two closest, newest first, cut to 1
    assert len(ids(later(decision))) == 5
    assert len(ids(later(decision, limit=0))) == 5  # 0 means the default


def test_a_query_narrows_the_subject(fillers):
    decision = make_item(title="Shop site: remove the analytics script", project="shop", occurred_at=days_ago(100))
    about_site = make_item(title="shop site redesign", project="shop", occurred_at=days_ago(20))
    about_analytics = make_item(title="analytics consent toggle", project="shop", occurred_at=days_ago(10))
    assert about_site.id in ids(later(decision))
    narrowed = later(decision, query="analytics consent")
    assert ids(narrowed) == [about_analytics.id]


def test_an_item_without_a_project_is_bounded_by_its_source():
    decision = make_item(title="router firmware upgrade", source="agent-a", key="agent-a:d", occurred_at=days_ago(50))
    for n in range(10):
        make_item(title=f"plain {n}", source="agent-a", key=f"agent-a:f{n}", occurred_at=days_ago(80))
    same_source = make_item(title="router firmware rollback", source="agent-a", key="agent-a:n", occurred_at=days_ago(5))
    make_item(title="router firmware upgrade too", source="agent-b", key="agent-b:n", occurred_at=days_ago(5))
    assert ids(later(decision)) == [same_source.id]


def test_nothing_on_the_subject_falls_back_to_the_projects_newer_timeline():
    decision = make_item(title="zanzibar quokka", project="p", occurred_at=days_ago(100))
    older = make_item(title="older unrelated", project="p", occurred_at=days_ago(200))
    newer = [make_item(title=f"unrelated {n}", project="p", occurred_at=days_ago(50 - n)) for n in range(7)]
    make_item(title="other project", project="q", occurred_at=days_ago(1))
    result = later(decision)
    assert result.matched_by == MATCHED_BY_TIMELINE
    assert ids(result) == [item.id for item in reversed(newer)][:5]
    assert older.id not in ids(result) and decision.id not in ids(result)
    assert all(hit.score is None for hit in result.hits)


def test_later_of_a_missing_item_is_not_found():
    with pytest.raises(NotFound):
        lib.later(424242, allowed_sources=ALL_SOURCES)
