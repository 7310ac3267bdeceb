"""docs/design.md "Bad input changes nothing": input nobody should send costs nothing and breaks nothing — a clear 4xx or an
ordinary answer, never a 500, on the API, the pages and the read functions they share (MCP's
answers are in tests/e2e/test_mcp.py)."""

import pytest
from django.test import Client as Browser

from library import search
from library.access import clients
from library.errors import BadInput
from library.terms import MAX_QUERY_CHARS, MAX_TERMS, clean_query
from tests.conftest import make_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def library():
    return make_item(title="Stripe webhook signature failure", source="agent-laptop", key="agent-laptop:1",
                     original="user: the stripe webhook fails its signature check")


def api(path, **params):
    token = clients.create("reader", sources="*", scopes="read")[1]
    return Browser().get(path, params, HTTP_AUTHORIZATION=f"Bearer {token}")


def test_the_caps_say_what_is_allowed():
    with pytest.raises(BadInput, match=f"at most {MAX_QUERY_CHARS:,} characters"):
        clean_query("x" * (MAX_QUERY_CHARS + 1))
    with pytest.raises(BadInput, match=f"at most {MAX_TERMS} words"):
        clean_query(" ".join(f"w{n}" for n in range(MAX_TERMS + 1)))
    assert clean_query("stripe\x00web\x1bhook\tsig") == "stripe web hook\tsig"


def test_a_huge_query_is_refused_before_any_search(library, django_assert_num_queries):
    with django_assert_num_queries(0), pytest.raises(BadInput):
        search.search("stripe " * 50_000, allowed_sources=search.ALL_SOURCES)
    response = api("/api/v1/search", q="stripe " * 50_000)
    assert response.status_code == 400
    assert "at most 1,000 characters" in response.json()["detail"]


@pytest.mark.parametrize("query", ["stripe\x00webhook", "\x00", "stripe \x7f\x01 signature", "\"\x00\""])
def test_control_characters_are_searched_as_spaces(library, query):
    response = api("/api/v1/search", q=query)
    assert response.status_code == 200
    if query.strip("\x00\" "):
        assert [r["id"] for r in response.json()["results"]] == [library.id]


@pytest.mark.parametrize("path", ["/", "/timeline/"])
@pytest.mark.parametrize("page", ["99999999999999999999999", "-3", "abc", "1e9"])
def test_any_page_number_is_an_ordinary_page(client, people, library, path, page):
    client.force_login(people["plain"])
    response = client.get(path, {"q": "stripe", "page": page} if path == "/" else {"page": page})
    assert response.status_code == 200


def test_a_nul_on_the_search_page_is_an_ordinary_search(client, people, library):
    client.force_login(people["plain"])
    response = client.get("/", {"q": "stripe\x00webhook"})
    assert response.status_code == 200 and "Stripe webhook signature failure" in response.content.decode()
    huge = client.get("/", {"q": "stripe " * 50_000})
    assert huge.status_code == 200 and "at most 1,000 characters" in huge.content.decode()


def test_a_long_question_in_natural_language_is_searched_not_refused():
    """A question of 40 words (the recall evaluation holds ones of 37) is a query, not a refusal."""
    question = ("When all crawled pages are merged into one markdown file, how did we make links to other crawled "
                "pages jump to that page's section instead of the website, and what did we base the heading ids on? "
                "Also which file?")
    assert len(question.split()) > 32 and clean_query(question) == question
