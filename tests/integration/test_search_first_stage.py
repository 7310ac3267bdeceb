"""Issue 15: the fused search's first stage reads the record through its word index (a word
finds the words it begins) and asks the record list only for the terms that rank, so that a
common word costs what the page costs, not what the library holds; the original-text list
does the same when `search.original_common_share` asks. (`COMMON_FLOOR` keeps this from
acting below 20,000 items; the tests lower it to see it act on a few dozen.)"""

import pytest

from library import search as lib
from library.search import ALL_SOURCES
from tests.conftest import NOW, days_ago, make_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_floor(monkeypatch):
    """Common terms left out as in a library of 20,000+ items: past 5 % of the items."""
    monkeypatch.setattr(lib, "COMMON_FLOOR", 0)


@pytest.fixture
def both_lists(small_floor, jezero_config):
    """The original-text list with the same budget (`search.original_common_share`)."""
    jezero_config("search", original_common_share=0.05)


def find(query, **kwargs):
    kwargs.setdefault("allowed_sources", ALL_SOURCES)
    kwargs.setdefault("now", NOW)
    return lib.search(query, **kwargs)


def library_of_forty():
    """40 items; 'build' in the records and originals of 10, 'kestrel' in one."""
    items = []
    for n in range(40):
        word = "build" if n % 4 == 0 else "note"
        items.append(make_item(title=f"Session {n} {word}", original=f"user: the {word} number {n}",
                               occurred_at=days_ago(40 - n)))
    rare = make_item(title="Kestrel runner build", original="user: the kestrel runner build fails",
                     occurred_at=days_ago(300))
    return items, rare


def test_a_common_word_is_left_out_of_the_record_list_when_a_rarer_one_ranks(small_floor):
    _items, rare = library_of_forty()
    lookup = lib.record_lookup("build kestrel")
    assert (lookup.match, lookup.filler, lookup.newest) == ('"kestrel"*', '"build"*', False)
    result = find("build kestrel")
    assert result.match == '"kestrel"*'
    assert result.original_match == '"build" OR "kestrel"'   # by default the original-text list has no budget
    assert result.hits[0].id == rare.id and len(result.hits) == 10
    assert result.hint is None and not result.newest


def test_with_a_budget_for_what_was_said_too_a_page_is_still_full(both_lists):
    items, rare = library_of_forty()
    result = find("build kestrel")
    assert result.match == '"kestrel"*' and result.original_match == '"kestrel"'
    assert result.hint is None and not result.newest
    # The page is still full: after the item that ranks, the newest items holding the
    # common word (they would rank last by BM25 as well).
    builds = sorted((item for item in items if "build" in item.title), key=lambda item: item.occurred_at,
                    reverse=True)
    assert [hit.id for hit in result.hits] == [rare.id] + [item.id for item in builds][:9]
    assert result.hits[0].score > 0 and {hit.score for hit in result.hits[1:]} == {0.0}


def test_without_the_floor_nothing_is_left_out_of_a_small_library():
    _items, rare = library_of_forty()
    result = find("build kestrel")
    assert result.match == '"build"* OR "kestrel"*'
    assert result.hits[0].id == rare.id and len(result.hits) == 10   # the 'build' items follow


def test_a_query_of_common_words_lists_the_newest_items_holding_them_and_says_so(both_lists):
    items, rare = library_of_forty()
    result = find("build")
    assert result.newest
    holding = [item for item in [*items, rare] if "build" in item.title]
    newest_first = sorted(holding, key=lambda item: item.occurred_at, reverse=True)
    assert [hit.id for hit in result.hits] == [item.id for item in newest_first][:10]
    assert "newest items" in result.hint and "distinctive word" in result.as_dict()["hint"]
    assert "newest items" in find("build", project=None, source="agent-test").hint


def test_the_rarest_terms_rank_together_within_the_budget(small_floor):
    """5 % of 42 items is 2 rows: the rarest term is kept, the next only while they fit."""
    library_of_forty()
    make_item(title="Plover survey", original="user: plover")
    # One item each: 'plover' and 'kestrel' fit in 2 rows and rank; 'build' (11) does not.
    lookup = lib.record_lookup("plover kestrel build")
    assert lookup.match == '"plover"* OR "kestrel"*' and not lookup.newest
    make_item(title="Kestrel again", original="user: ok")
    # 'kestrel' now in two items: 'plover' (1) ranks, 1 + 2 is past the budget.
    assert lib.record_lookup("plover kestrel build").match == '"plover"*'


def test_a_fragment_finds_the_words_it_begins_in_the_record():
    item = make_item(title="Continuous deployment pipeline", original="user: ship it")
    make_item(title="Unrelated", original="user: nothing")
    result = find("continu")
    assert result.match == '"continu"*'
    assert [hit.id for hit in result.hits] == [item.id]
    assert result.hits[0].matched_in == ("record",)
    assert find("contin", records_only=True).hits[0].id == item.id   # SPEC §7's trigram agrees


def test_a_word_finds_the_words_it_begins_in_the_record_as_the_trigram_index_would():
    item = make_item(title="Deployment checklist", original="user: ok")
    assert lib.record_lookup("deploy").match == '"deploy"*'
    assert [hit.id for hit in find("deploy").hits] == [item.id]
    assert find("deploy", records_only=True).hits[0].id == item.id
    assert lib.record_lookup("zq go").match == '"zq" OR "go"'   # under 3 letters: the word itself
    assert lib.record_lookup('"deploy checklist"').match == '"deploy checklist"'   # a phrase stays whole


def test_chinese_in_a_record_is_found_by_two_characters():
    """A trigram index cannot look up two characters; the word index holds them one by one."""
    item = make_item(title="修复部署脚本", summary="部署失败", original="user: ok")
    assert find("部署", records_only=True).hits == []
    hit = find("部署").hits[0]
    assert hit.id == item.id and "record" in hit.matched_in


def test_a_phrase_is_looked_up_in_the_record_as_a_phrase():
    item = make_item(title="Connection pool exhausted under load")
    make_item(title="Pool party exhausted everyone connection")
    result = find('"connection pool"')
    assert [hit.id for hit in result.hits if "record" in hit.matched_in] == [item.id]


def test_every_surface_says_when_common_words_were_listed_by_date(both_lists, client, people, capsys):
    """The page, the CLI and the MCP text answer say it before the results; the API and
    `--json` carry it as `hint`."""
    from django.core.management import call_command

    from library.access import mcp as library_mcp
    from library.access.schemas import SearchOut

    library_of_forty()
    client.force_login(people["plain"])
    page = client.get("/", {"q": "build"}).content.decode()
    assert "Every word of this query is common in the library" in page
    assert "Every word of this query" not in client.get("/", {"q": "kestrel build"}).content.decode()
    call_command("search", "build")
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("every word of this query is common")
    answer = SearchOut(**find("build").as_dict())
    text = library_mcp.search_text(answer)
    assert text.splitlines()[0].startswith("every word of this query is common")
    assert "best first" in text.splitlines()[1]


def test_a_word_most_of_a_large_library_holds_is_not_scored_item_by_item(monkeypatch):
    """Held by more than half of the items and by more than COMMON_FLOOR of them, a lone word
    would make BM25 score half the library to rank by nothing: the newest items are listed."""
    monkeypatch.setattr(lib, "COMMON_FLOOR", 10)
    for n in range(30):
        make_item(title=f"Note {n}", original=f"user: the heron count {n}", occurred_at=days_ago(n + 1))
    lookup = lib.original_lookup("heron")
    assert lookup.newest and lookup.match == '"heron"'
    result = find("heron")
    assert result.newest and "newest" in result.hint
    assert [hit.occurred_at for hit in result.hits] == sorted((hit.occurred_at for hit in result.hits), reverse=True)
