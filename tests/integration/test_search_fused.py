"""docs/design.md "How search ranks": the default search ranks by the record and by what was said (the original),
says where each result matched and shows why."""

import pytest

from library import ranking
from library import search as lib
from library.search import ALL_SOURCES, SNIPPET_END, SNIPPET_START
from tests.conftest import NOW, days_ago, make_item

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _lexical(jezero_config):
    """These tests are about the two lexical lists and their fusion, score for score; the
    re-ranks by meaning and closeness that follow are tests/integration/test_meaning.py's and
    test_closeness.py's."""
    jezero_config("search", meaning_weight=0.0, proximity_weight=0.0)


def find(query, **kwargs):
    kwargs.setdefault("allowed_sources", ALL_SOURCES)
    kwargs.setdefault("now", NOW)
    return lib.search(query, **kwargs)


def ids(result):
    return [hit.id for hit in result.hits]


def test_a_detail_only_in_what_was_said_is_found_with_a_snippet_showing_it():
    """The record left the error string out; the session's text has it."""
    item = make_item(title="Fix the importer", summary="The importer was repaired.",
                     original="user: the import dies with ERR_OSSL_EVP_UNSUPPORTED on node 18\n\n"
                              "assistant: set NODE_OPTIONS=--openssl-legacy-provider and it runs")
    make_item(title="Unrelated", original="user: nothing to see here")
    result = find("ERR_OSSL_EVP_UNSUPPORTED")
    assert ids(result) == [item.id]
    hit = result.hits[0]
    assert hit.matched_in == ("original",)
    assert f"{SNIPPET_START}ERR_OSSL_EVP_UNSUPPORTED{SNIPPET_END}" in hit.snippet
    row = result.as_dict()["results"][0]
    assert row["matched_in"] == ["original"]
    assert "ERR_OSSL_EVP_UNSUPPORTED on node 18" in row["snippet"]
    assert SNIPPET_START not in row["snippet"] and SNIPPET_END not in row["snippet"]


def test_records_only_does_not_see_what_was_said():
    make_item(title="Fix the importer", original="user: the import dies with ERR_OSSL_EVP_UNSUPPORTED")
    assert find("ERR_OSSL_EVP_UNSUPPORTED", records_only=True).hits == []


def test_matched_in_names_both_indexes_when_both_matched():
    both = make_item(title="Gunicorn timeout raised", original="user: gunicorn workers time out after 30 s")
    record = make_item(title="Gunicorn config notes", original="user: tuning the web server")
    result = find("gunicorn")
    by_id = {hit.id: hit.matched_in for hit in result.hits}
    assert by_id == {both.id: ("record", "original"), record.id: ("record",)}
    assert ids(result)[0] == both.id  # found in both ranks above found in one


def test_a_record_match_shows_the_record_snippet():
    item = make_item(title="Rotate the restic repository key", original="user: please do the thing we said")
    hit = find("restic").hits[0]
    assert hit.id == item.id and hit.matched_in == ("record",)
    assert f"{SNIPPET_START}restic{SNIPPET_END}" in hit.snippet


def test_neither_index_dominates_by_scale(jezero_config):
    """A 40,000-character original full of the word scores far above a short record in raw
    BM25; each list is scaled by its best hit, so at equal weights the record match ranks
    on a par."""
    jezero_config("search", record_weight=1.0, original_weight=1.0)
    long_said = make_item(title="Session", summary="Work happened.", occurred_at=days_ago(1),
                          original="assistant: " + " ".join(["the kestrel cache warmed"] * 4_000))
    in_title = make_item(title="Kestrel cache design", summary="Why the cache exists.", occurred_at=days_ago(2))
    result = find("kestrel")
    assert set(ids(result)) == {long_said.id, in_title.id}
    scores = {hit.id: hit.score for hit in result.hits}
    assert scores[in_title.id] == pytest.approx(scores[long_said.id], rel=0.05)


def test_the_weights_are_settings(jezero_config):
    said = make_item(title="Session one", original="user: the pelican deploy failed", occurred_at=days_ago(1))
    recorded = make_item(title="Pelican deploy failed", original="user: something else", occurred_at=days_ago(1))
    jezero_config("search", record_weight=1.0, original_weight=3.0)
    assert ids(find("pelican"))[0] == said.id
    jezero_config("search", record_weight=3.0, original_weight=1.0)
    assert ids(find("pelican"))[0] == recorded.id


def test_the_recency_factor_applies_to_the_fused_score():
    old = make_item(title="Heron migration", original="user: heron migration", occurred_at=days_ago(365))
    new = make_item(title="Heron migration", original="user: heron migration", occurred_at=days_ago(0))
    result = find("heron")
    assert ids(result) == [new.id, old.id]
    assert result.hits[1].score / result.hits[0].score == pytest.approx(lib.recency_factor(365), rel=1e-6)


def test_filters_and_allowed_sources_apply_to_what_was_said():
    mine = make_item(source="agent-mine", key="agent-mine:1", original="user: the cormorant outage")
    theirs = make_item(source="mail-home", key="mail-home:1", original="user: the cormorant outage",
                       project="house")
    assert ids(find("cormorant", allowed_sources=["agent-*"])) == [mine.id]
    assert ids(find("cormorant", allowed_sources=[])) == []
    assert ids(find("cormorant", source="mail-home")) == [theirs.id]
    assert ids(find("cormorant", project="house")) == [theirs.id]
    assert ids(find("cormorant", since=NOW)) == []


def test_short_words_are_found_in_what_was_said():
    """The trigram record index cannot look up two letters; the word index can."""
    item = make_item(title="Pipeline work", original="user: make CI run once per push, not twice")
    assert ids(find("CI")) == [item.id]
    result = find("CI", records_only=True)
    assert (result.match, result.hits) == (None, [])


def test_common_words_alone_find_nothing_in_what_was_said_and_say_why():
    make_item(title="Notes", original="user: why did the thing do that")
    result = find("why did the")
    assert (result.match, result.original_match, result.hits) == (None, None, [])
    assert "only common words" in result.hint
    assert "only common words" in find("is it a").as_dict()["hint"]
    assert find("why did the", records_only=True).hint is None   # the record ranking (docs/design.md "The record ranking") looks "why", "did", "the" up
    assert "3 or more characters" in find("a an", records_only=True).hint
    assert find("notes").hint is None


def test_a_natural_question_finds_the_session_by_its_words():
    item = make_item(title="Untitled", summary="Short.", original=(
        "user: the deploy keeps serving the old bundle after every release\n\n"
        "assistant: the CDN cached index.html; purge it and set Cache-Control: no-cache on it"))
    make_item(title="Unrelated", original="user: the bundle size grew after adding moment.js")
    hit = find("why did the deploy keep serving the old bundle?").hits[0]
    assert hit.id == item.id
    assert "original" in hit.matched_in


def test_chinese_text_is_found_without_spaces():
    """The index holds CJK characters one by one; a query matches them as two-character phrases."""
    item = make_item(title="Photo site", original="user: 这个纹理计算方式导致在 iphone 上不清晰")
    make_item(title="Other", original="user: 纹身 计划")
    result = find("纹理计算")
    assert ids(result) == [item.id]
    assert f"{SNIPPET_START}纹理{SNIPPET_END}" in result.hits[0].snippet


def test_punctuated_identifiers_are_found_as_typed():
    item = make_item(title="Work", original="tool: Edit: src/api/views.py\n\nassistant: HTTP_404 comes from snake_case_handler")
    make_item(title="Other", original="assistant: the views of the api are in src")
    for query in ("views.py", "HTTP_404", "snake_case_handler", '"src/api/views.py"'):
        assert ids(find(query))[:1] == [item.id], query


def test_pages_of_the_fused_ranking_do_not_overlap():
    for n in range(15):
        make_item(title=f"Grebe note {n}", original=f"user: grebe {n}", occurred_at=days_ago(n))
    first = ids(find("grebe", limit=10))
    second = ids(find("grebe", limit=10, offset=10))
    assert len(first) == 10 and len(second) == 5 and not set(first) & set(second)


def test_the_same_query_gives_the_same_answer():
    for n in range(12):
        make_item(title=f"Plover {n % 3}", original=f"user: plover plover {n}", occurred_at=days_ago(n % 4))
    assert find("plover").as_dict() == find("plover").as_dict()


def test_words_most_originals_hold_are_left_out_of_the_original_query(monkeypatch):
    """BM25 gives them no weight (FTS5's idf is 1e-6 for a word half the rows hold); in a
    library where more than COMMON items hold one, scoring it would cost a pass over half the
    library: it is left out, and the items holding only such words follow, newest first."""
    monkeypatch.setattr(ranking, "COMMON", 3)   # as if in a library of thousands
    for n in range(6):
        make_item(title=f"Session {n}", original=f"user: the workspace build {n} again", occurred_at=days_ago(10 - n))
    rare = make_item(title="Session x", original="user: the workspace build fails on the kestrel runner",
                     occurred_at=days_ago(30))
    result = find("workspace kestrel")
    assert result.original_match == '"kestrel"'
    assert ids(result)[0] == rare.id and len(ids(result)) == 7
    assert [hit.score for hit in result.hits[1:]] == [0.0] * 6   # listed by date, newest first
    assert [hit.occurred_at for hit in result.hits[1:]] == sorted((h.occurred_at for h in result.hits[1:]), reverse=True)
    everything_common = find("workspace build")
    assert everything_common.newest and everything_common.original_match == '"workspace" OR "build"'
    # A phrase of common words is looked up as its words; one with a rare word stays a phrase.
    assert find('"workspace build" kestrel').original_match == '"kestrel"'
    assert find('"kestrel runner" workspace').original_match == '"kestrel runner"'
