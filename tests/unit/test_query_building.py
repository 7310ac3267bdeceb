"""Query building (docs/design.md "Query terms"): how free text becomes an FTS5 MATCH expression."""

import pytest

from library.terms import build_match_query, split_terms

TRIGRAM = "trigram remove_diacritics 1"


def test_it_quotes_words_and_keeps_phrases_whole():
    """The spec's own example."""
    assert build_match_query('analytics shop "consent banner"', TRIGRAM) == '"analytics" OR "shop" OR "consent banner"'


@pytest.mark.parametrize("operator", ["NEAR", "AND", "NOT", "foo*", "^start", "title:x1y", "(group)", "NEAR(a b)"])
def test_fts5_operators_are_searched_as_text(operator):
    """Every term is quoted, so nothing typed acts as an FTS5 operator."""
    match = build_match_query(f"alpha {operator}", TRIGRAM)
    assert match.startswith('"alpha" OR "')
    assert all(term.startswith('"') and term.endswith('"') for term in match.split(" OR "))


def test_or_is_dropped_as_too_short():
    assert build_match_query("stripe OR webhook", TRIGRAM) == '"stripe" OR "webhook"'


def test_an_unbalanced_quote_is_closed_at_the_end():
    assert build_match_query('analytics "consent banner', TRIGRAM) == '"analytics" OR "consent banner"'


def test_duplicates_are_removed_keeping_the_first():
    assert build_match_query('shop banner shop "shop"', TRIGRAM) == '"shop" OR "banner"'


def test_a_query_of_short_words_builds_nothing():
    assert build_match_query("a an OR to", TRIGRAM) is None
    assert build_match_query("   ", TRIGRAM) is None
    assert build_match_query('""', TRIGRAM) is None


def test_the_minimum_is_one_character_without_trigrams():
    assert build_match_query("a an OR", "unicode61 remove_diacritics 2") == '"a" OR "an" OR "OR"'


def test_a_quote_inside_a_word_starts_a_phrase():
    assert split_terms('say"hello world" now') == ["say", "hello world", "now"]


def test_single_quotes_are_ordinary_characters():
    assert build_match_query("it's 'single'", TRIGRAM) == "\"it's\" OR \"'single'\""


def test_phrase_length_counts_the_whole_phrase():
    """A quoted phrase of short words is kept when it is 3+ characters in all."""
    assert build_match_query('"CI on" ok', TRIGRAM) == '"CI on"'
