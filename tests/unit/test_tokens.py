"""What the word indexes hold for a text and how a token becomes an FTS5 expression
(library.tokens): one answer for the indexes, the query side, the postings and snippets."""

from library.tokens import index_text, index_tokens, phrase, prefix_end, quote


def test_cjk_characters_stand_alone_and_private_use_ones_become_spaces():
    assert index_text("修复部署 done") == " 修  复  部  署  done"
    assert index_text("a\ue000b") == "a b"


def test_a_query_word_is_named_by_the_tokens_unicode61_makes_of_it():
    assert index_tokens("Café-Deploy_v2") == ["cafe", "deploy", "v2"]
    assert index_tokens("部署") == ["部", "署"]


def test_nothing_typed_acts_as_an_operator():
    assert quote('say "NEAR" (x)') == '"say ""NEAR"" (x)"'
    assert phrase(["deploy"], prefix=True) == '"deploy"*'
    assert phrase(["connection", "pool"]) == '"connection pool"'


def test_the_end_of_a_prefix_range_is_above_every_word_it_begins_and_below_the_next():
    assert prefix_end("execu") == "execv"
    words = ["execu", "execute", "executed", "execu\U0010ffff", "execv"]
    assert [w for w in words if "execu" <= w < prefix_end("execu")] == words[:4]
    assert prefix_end("a\U0010ffff") == "b"                 # the last code point carries
    assert prefix_end("x\ud7ff") == "x\ue000"               # no lone surrogate
    assert prefix_end("\U0010ffff") is None
