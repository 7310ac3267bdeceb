"""The last stage of the fused ranking: the best results re-ranked by how many of the query's
words what was said holds close together (docs/design.md "Closeness")."""

import pytest

from library import ranking, snippets
from library import search as lib
from library.ranking import Ranked
from library.search import ALL_SOURCES, SNIPPET_END, SNIPPET_START
from tests.conftest import NOW, days_ago, make_item

pytestmark = pytest.mark.django_db

FILLER = "We looked at the logs again and nothing else stood out in this part of the session. "


@pytest.fixture(autouse=True)
def _no_meaning(jezero_config):
    """Meaning re-ranks first (tests/integration/test_meaning.py); off here, so that the words
    alone decide the order closeness starts from."""
    jezero_config("search", meaning_weight=0.0)


def find(query, **kwargs):
    return [hit.id for hit in lib.search(query, allowed_sources=ALL_SOURCES, now=NOW, **kwargs).hits]


def sessions():
    """`scattered` says each word of the question more often, far apart; `together` says them
    once, in one sentence: the answer."""
    scattered = make_item(title="Client work", occurred_at=days_ago(3), original="".join(
        f"user: the {word} question again. " + FILLER * 3 for word in ("websocket", "reconnect", "backoff") * 3))
    together = make_item(title="Client work", occurred_at=days_ago(3), original=(
        "user: what should the client do when the connection drops?\n\n"
        "assistant: the websocket now retries: reconnect with exponential backoff, capped at 30 s. "
        + FILLER * 20))
    return scattered, together


def test_the_session_that_says_the_question_words_together_comes_first(jezero_config):
    scattered, together = sessions()
    assert find("websocket reconnect backoff") == [together.id, scattered.id]
    jezero_config("search", proximity_weight=0.0)      # off: the words' own order
    assert find("websocket reconnect backoff") == [scattered.id, together.id]


def test_the_snippet_shows_the_window_closeness_counted():
    _scattered, together = sessions()
    hit = lib.search("websocket reconnect backoff", allowed_sources=ALL_SOURCES, now=NOW).hits[0]
    assert hit.id == together.id
    for word in ("websocket", "reconnect", "backoff"):
        assert f"{SNIPPET_START}{word}{SNIPPET_END}" in hit.snippet


def test_a_one_word_query_and_records_only_keep_their_order(jezero_config):
    sessions()
    default = find("websocket")
    jezero_config("search", proximity_weight=0.0)
    assert find("websocket") == default
    jezero_config("search", proximity_weight=1.0)
    exact = lib.search("websocket reconnect backoff", allowed_sources=ALL_SOURCES, now=NOW, records_only=True)
    assert all(hit.matched_in == ("record",) for hit in exact.hits)


def test_closeness_counts_the_distinct_words_of_the_densest_window():
    text = "alpha " + "x " * 200 + "beta gamma alpha " + "y " * 200 + "delta"
    assert snippets.window(text, ["alpha", "beta", "gamma", "delta"]).count == 3
    assert snippets.window(text, ["alpha", "delta"]).count == 1
    assert snippets.window(text, ["alpha", "delta"], width=len(text)).count == 2
    assert snippets.window(text, ["omega"]).count == 0 and snippets.window("", ["alpha"]).count == 0
    assert snippets.window("重连退避", ["重连", "退避"]).count == 2      # CJK phrases, as search reads them


def test_the_excerpt_of_a_window_found_by_the_ranking_is_the_excerpt_found_anew():
    text = ("user: " + FILLER * 5 + "the websocket reconnects with backoff now. " + FILLER * 5 + "websocket again")
    words = ["websocket", "backoff"]
    at = snippets.window(text, words)
    assert snippets.excerpt(text, words, at=at) == snippets.excerpt(text, words)
    assert f"{SNIPPET_START}backoff{SNIPPET_END}" in snippets.excerpt(text, words, at=at)
    assert snippets.excerpt(text, words, width=500, at=at) == snippets.excerpt(text, words, width=500)


def test_closer_moves_only_the_first_rows_the_words_ranked():
    rows = [Ranked(1, 3.0, 10, ("original",), 1.0), Ranked(2, 2.9, 10, ("original",), 1.0),
            Ranked(3, 2.0, 10, ("original",), 0.8), Ranked(4, 0.0, 9, ("original",), 1.0)]
    words = ["one", "two", "three"]
    originals = {1: "one two", 2: "one three two", 3: "one two three", 4: "one two three"}
    originals = {item_id: snippets.window(text, words) for item_id, text in originals.items()}
    moved = ranking.closer(rows, originals, words, weight=1.0, depth=2)
    assert [row.id for row in moved] == [2, 1, 3, 4]
    assert moved[0].score == pytest.approx(2.9 + 1.0) and moved[1].score == pytest.approx(3.0 + 2 / 3)
    assert moved[2:] == rows[2:]                              # below the depth: as they were
    deep = ranking.closer(rows, originals, ["one", "two", "three"], weight=1.0, depth=10)
    assert [row.id for row in deep] == [2, 1, 3, 4]           # 3 gains 0.8, still below; 4 (by date) untouched
    assert deep[2].score == pytest.approx(2.0 + 0.8) and deep[3] == rows[3]
    assert ranking.closer(rows, originals, ["one"], weight=1.0, depth=10) == rows
    assert ranking.closer(rows, originals, ["one", "two"], weight=0.0, depth=10) == rows
