"""The record ranking (docs/design.md "The record ranking"), rule by rule, on a real SQLite FTS5 index: `records_only=True`, which must
reproduce §7 exactly (the fused default of §7a has its own tests in test_search_fused.py)."""

from datetime import timedelta

import pytest
from django.db import connection

from library import search as lib
from library.search import ALL_SOURCES, recency_factor
from tests.conftest import NOW, days_ago, make_item

pytestmark = pytest.mark.django_db


def ids(result):
    return [hit.id for hit in result.hits]


def find(query, **kwargs):
    kwargs.setdefault("allowed_sources", ALL_SOURCES)
    kwargs.setdefault("now", NOW)
    kwargs.setdefault("records_only", True)
    return lib.search(query, **kwargs)


def pure_relevance(match):
    """-bm25 per item id, straight from SQLite, to state a test's preconditions."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT rowid, -bm25(items_fts, 2.0, 1.0, 1.5, 1.5, 0.5) FROM items_fts WHERE items_fts MATCH %s",
                       [match])
        return dict(cursor.fetchall())


# --- matching ------------------------------------------------------------------------------

def test_a_fragment_finds_the_whole_word():
    """Trigram matching: `migrat` finds `migration`."""
    item = make_item(title="Database migration for recipes")
    assert ids(find("migrat")) == [item.id]


def test_punctuation_inside_a_term_is_searched_literally():
    """`test:consent` is not a column filter; it finds the text."""
    item = make_item(summary="The npm script test:consent failed on CI.")
    make_item(summary="consent given, tests green")
    result = find("test:consent")
    assert result.match == '"test:consent"'
    assert ids(result) == [item.id]


def test_operators_typed_by_a_user_are_searched_as_text():
    item = make_item(summary="Call fetch_all (batched) NOT once per row.")
    assert ids(find("(batched) NOT")) == [item.id]
    assert find('NEAR( "* ^').hits == []  # no FTS5 syntax error


@pytest.mark.parametrize(("stored", "typed"), [("café menu", "cafe"), ("cafe menu", "café"), ("Migración lista", "migracion")])
def test_accents_are_folded_both_ways(stored, typed):
    item = make_item(title=stored)
    assert ids(find(typed)) == [item.id]


def test_a_query_of_short_words_returns_nothing_without_error():
    make_item(title="an ox is ok")
    result = find("an ox is")
    assert (result.match, result.hits) == (None, [])


def test_records_only_does_not_search_the_original_text():
    make_item(title="Plain record", original="the zanzibar incident")
    assert find("zanzibar").hits == []


def test_atom_kinds_are_not_indexed_but_atom_texts_are():
    item = make_item(atoms=[{"kind": "decision", "text": "use restic for backups"}])
    assert ids(find("restic")) == [item.id]
    assert find("decision").hits == []


# --- ranking -------------------------------------------------------------------------------

def test_a_title_hit_beats_the_same_hit_in_the_summary():
    """BM25 column weights 2.0 (title) > 1.0 (summary)."""
    in_summary = make_item(title="Plain notes", summary="quokka sighting words", occurred_at=days_ago(1))
    in_title = make_item(title="quokka notes", summary="plain sighting words", occurred_at=days_ago(1))
    assert ids(find("quokka")) == [in_title.id, in_summary.id]


def test_each_column_weighs_as_the_spec_says():
    """Weights 2.0 title, 1.0 summary, 1.5 questions, 1.5 atoms, 0.5 project: the same word
    in otherwise identical records ranks title > questions = atoms > summary > project."""
    base = {"title": "alpha bravo", "summary": "gamma delta", "questions": ["omega zetas"],
            "atoms": [{"kind": "fact", "text": "theta sigma"}], "project": "iotas", "occurred_at": days_ago(1)}
    placed = {
        "title": make_item(**{**base, "title": "kiwis bravo"}),
        "summary": make_item(**{**base, "summary": "kiwis delta"}),
        "questions": make_item(**{**base, "questions": ["kiwis zetas"]}),
        "atoms": make_item(**{**base, "atoms": [{"kind": "fact", "text": "kiwis sigma"}]}),
        "project": make_item(**{**base, "project": "kiwis"}),
    }
    scores = {column: hit_score for column, hit_score in
              ((c, next(h.score for h in find("kiwis").hits if h.id == item.id)) for c, item in placed.items())}
    assert scores["title"] > scores["questions"] > scores["summary"] > scores["project"]
    assert scores["questions"] == pytest.approx(scores["atoms"])


@pytest.mark.parametrize(("age", "factor"), [(0, 1.000), (30, 0.938), (90, 0.850), (180, 0.775), (365, 0.718)])
def test_the_recency_factor_at_the_defaults(age, factor):
    assert recency_factor(age) == pytest.approx(factor, abs=0.0005)


def test_the_recency_factor_never_drops_below_one_minus_the_weight():
    assert recency_factor(100_000) == pytest.approx(0.7, abs=1e-9)
    assert recency_factor(-5) == 1.0  # a future date counts as age 0


def test_equal_relevance_ranks_the_newer_item_first_by_the_factor():
    old = make_item(title="kestrel survey", occurred_at=days_ago(365))
    new = make_item(title="kestrel survey", occurred_at=days_ago(0))
    result = find("kestrel")
    assert ids(result) == [new.id, old.id]
    assert result.hits[1].score / result.hits[0].score == pytest.approx(recency_factor(365), rel=1e-6)


def test_an_old_item_wins_only_when_more_than_1_43_times_as_relevant():
    """score = relevance × factor; a very old item's factor is 0.7, a new one's 1.0."""
    for n in range(20):  # other records, so that the searched words are rare (BM25's IDF)
        make_item(title=f"filler record {n}", summary="plain words only")
    # Pair 1: the old item is about twice as relevant (title vs summary) → it still wins.
    old_strong = make_item(title="pelican crossing", summary="alpha beta", occurred_at=days_ago(20_000))
    new_weak = make_item(title="gamma delta", summary="pelican crossing near the old harbour wall", occurred_at=NOW)
    rel = pure_relevance('"pelican"')
    assert rel[old_strong.id] / rel[new_weak.id] > 1 / 0.7
    assert ids(find("pelican")) == [old_strong.id, new_weak.id]

    # Pair 2: the old item is more relevant (a shorter summary), but by less than 1/0.7.
    old_bit = make_item(title="alpha gamma", summary="heron seen", occurred_at=days_ago(20_000))
    new_less = make_item(title="beta delta", summary="heron seen at dawn", occurred_at=NOW)
    rel = pure_relevance('"heron"')
    assert 1 < rel[old_bit.id] / rel[new_less.id] < 1 / 0.7
    assert ids(find("heron")) == [new_less.id, old_bit.id]


def test_recency_weight_zero_is_pure_bm25(jezero_config):
    jezero_config("search", recency_weight=0.0)
    old = make_item(title="ibis ibis", occurred_at=days_ago(3_000))
    new = make_item(title="ibis plain", occurred_at=NOW)
    result = find("ibis")
    rel = pure_relevance('"ibis"')
    assert ids(result) == [old.id, new.id]
    assert [hit.score for hit in result.hits] == pytest.approx([rel[old.id], rel[new.id]])


def test_ties_go_to_the_newer_item_then_the_higher_id():
    first = make_item(title="osprey nest", occurred_at=days_ago(3))
    second = make_item(title="osprey nest", occurred_at=days_ago(3))
    newer = make_item(title="osprey nest", occurred_at=days_ago(3) + timedelta(seconds=1))
    assert ids(find("osprey", now=days_ago(3))) == [newer.id, second.id, first.id]


def test_only_the_candidate_pool_is_re_ranked(jezero_config):
    """A new item below the BM25 cut-off never appears, however new it is."""
    strong = [make_item(title=f"lynx lynx report {n}", occurred_at=days_ago(3_000)) for n in range(10)]
    weak_new = make_item(title="unrelated", summary="lynx " + "filler " * 40, occurred_at=NOW)
    jezero_config("search", candidate_pool=10)
    assert weak_new.id not in ids(find("lynx", limit=50))
    assert set(ids(find("lynx", limit=50))) == {item.id for item in strong}
    jezero_config("search", candidate_pool=11)
    assert weak_new.id in ids(find("lynx", limit=50))


# --- limits --------------------------------------------------------------------------------

@pytest.mark.parametrize(("limit", "expected"), [(None, 10), (0, 10), (-3, 10), (4, 4), (50, 50), (500, 50)])
def test_search_limits(limit, expected):
    for n in range(60):
        make_item(title=f"marmot burrow {n}")
    assert len(find("marmot", limit=limit).hits) == expected


def test_the_cap_follows_max_limit(jezero_config):
    jezero_config("search", max_limit=5, default_limit=3)
    for n in range(8):
        make_item(title=f"badger sett {n}")
    assert len(find("badger").hits) == 3
    assert len(find("badger", limit=40).hits) == 5


@pytest.mark.parametrize(("limit", "expected"), [(None, 20), (0, 20), (-1, 20), (7, 7), (99, 50)])
def test_timeline_limits(limit, expected):
    for n in range(60):
        make_item(occurred_at=days_ago(n))
    assert len(lib.timeline(allowed_sources=ALL_SOURCES, limit=limit)) == expected


def test_a_limit_that_is_not_a_number_is_bad_input():
    from library.errors import BadInput

    with pytest.raises(BadInput, match="limit"):
        find("anything", limit="ten")


# --- filters -------------------------------------------------------------------------------

@pytest.fixture
def sources():
    return {
        name: make_item(title=f"heron report from {name}", source=name, key=f"{name}:1")
        for name in ("agent-claude", "agent-codex", "Agent-upper", "mail-home")
    }


def test_allowed_sources_are_case_sensitive_globs(sources):
    seen = {hit.source for hit in find("heron", allowed_sources=["agent-*"]).hits}
    assert seen == {"agent-claude", "agent-codex"}
    seen = {hit.source for hit in find("heron", allowed_sources=["agent-c?aude", "mail-*"]).hits}
    assert seen == {"agent-claude", "mail-home"}


def test_a_forbidden_or_unknown_source_gives_nothing_not_an_error(sources):
    assert find("heron", allowed_sources=["agent-*"], source="mail-home").hits == []
    assert find("heron", source="no-such-source").hits == []
    assert find("heron", allowed_sources=[]).hits == []
    assert lib.timeline(allowed_sources=["agent-*"], source="mail-home") == []


def test_source_and_project_filters_are_exact(sources):
    make_item(title="heron in project", project="birds")
    make_item(title="heron in other project", project="birds-2")
    assert {hit.source for hit in find("heron", source="agent-codex").hits} == {"agent-codex"}
    assert [hit.project for hit in find("heron", project="birds").hits] == ["birds"]
    assert find("heron", source="agent").hits == []


def test_since_is_inclusive_and_until_exclusive_naive_means_utc():
    at_midnight = make_item(title="curlew", occurred_at=NOW.replace(year=2026, month=6, day=1, hour=0))
    before = make_item(title="curlew", occurred_at=NOW.replace(year=2026, month=5, day=31, hour=23, minute=59))
    assert ids(find("curlew", since="2026-06-01")) == [at_midnight.id]
    assert ids(find("curlew", since="2026-06-01T00:00:00")) == [at_midnight.id]
    assert ids(find("curlew", since="2026-06-01T02:00:00+02:00")) == [at_midnight.id]
    assert ids(find("curlew", since="2026-06-01T00:00:01")) == []
    timeline_ids = [hit.id for hit in lib.timeline(allowed_sources=ALL_SOURCES, until="2026-06-01")]
    assert timeline_ids == [before.id]
    timeline_ids = [hit.id for hit in lib.timeline(allowed_sources=ALL_SOURCES, since="2026-05-31", until="2026-06-02")]
    assert timeline_ids == [at_midnight.id, before.id]


def test_a_bad_date_is_bad_input():
    from library.errors import BadInput

    with pytest.raises(BadInput, match="since: 'last week' is not an ISO 8601"):
        find("curlew", since="last week")


def test_result_rows_carry_the_fields_of_the_spec():
    make_item(title="godwit migration", project="birds", trust="external", source="mail-home", key="mail-home:t1")
    row = find("godwit").hits[0].as_dict()
    assert list(row) == ["id", "key", "title", "summary", "project", "source", "trust", "occurred_at", "score"]
    assert (row["trust"], row["source"], row["key"]) == ("external", "mail-home", "mail-home:t1")
    assert row["occurred_at"].endswith("Z")


def test_the_same_query_gives_the_same_answer():
    for n in range(30):
        make_item(title=f"plover count {n % 7}", summary="plover " * (n % 4 + 1), occurred_at=days_ago(n))
    assert find("plover count").as_dict() == find("plover count").as_dict()


# --- timeline and get_item -----------------------------------------------------------------

def test_timeline_is_newest_first_with_filters():
    a = make_item(project="p1", occurred_at=days_ago(3))
    b = make_item(project="p1", occurred_at=days_ago(1))
    make_item(project="p2", occurred_at=days_ago(2))
    assert [hit.id for hit in lib.timeline(allowed_sources=ALL_SOURCES, project="p1")] == [b.id, a.id]
    assert all(hit.score is None for hit in lib.timeline(allowed_sources=ALL_SOURCES))


def test_get_item_returns_every_field_and_the_original_only_on_request():
    item = make_item(original="redacted text", hints={"cwd": "/home/ana/src/shop"}, summarizer="extractive")
    data = lib.get_item(item.id, allowed_sources=ALL_SOURCES)
    assert "original" not in data
    assert {"id", "key", "source", "original_ref", "title", "summary", "questions", "atoms", "project", "trust",
            "occurred_at", "ingested_at", "updated_at", "text_hash", "hints", "summarizer", "input_tokens",
            "output_tokens"} == set(data)
    assert data["hints"] == {"cwd": "/home/ana/src/shop"}
    assert lib.get_item(item.id, allowed_sources=ALL_SOURCES, include_original=True)["original"] == "redacted text"


def test_an_item_outside_the_callers_sources_is_not_found_like_a_missing_one():
    from library.errors import NotFound

    item = make_item(source="mail-home", key="mail-home:x")
    with pytest.raises(NotFound) as hidden:
        lib.get_item(item.id, allowed_sources=["agent-*"])
    with pytest.raises(NotFound) as missing:
        lib.get_item(item.id + 1000, allowed_sources=["agent-*"])
    assert str(hidden.value).replace(str(item.id), "N") == str(missing.value).replace(str(item.id + 1000), "N")
