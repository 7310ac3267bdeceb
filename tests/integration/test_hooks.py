"""SPEC §13: what the session-start and first-prompt hooks inject, rule by rule."""

import pytest

from library.access import hooks
from library.search import ALL_SOURCES
from tests.conftest import days_ago, make_item

pytestmark = pytest.mark.django_db


def first(prompt, sources=ALL_SOURCES):
    return hooks.first_prompt(prompt, allowed_sources=sources).context


@pytest.fixture
def items():
    for n in range(12):  # other records, so that BM25 has something to rank against
        make_item(title=f"weekly chores {n}", summary="nothing related")
    return {
        "migration": make_item(title="Database migration for the recipes app", summary="Moved recipes to SQLite.",
                               project="recipes-app", occurred_at=days_ago(5)),
        "migrations": make_item(title="Squash old migrations", summary="Django migrations were squashed for speed.",
                                project="shop-site", occurred_at=days_ago(4)),
        "cafe": make_item(title="Menú del café exportado a PDF", summary="Exportar el menú semanal del café con expo-print.",
                          project="recipes-app", occurred_at=days_ago(3)),
    }


def test_distinctive_words_fold_accents_drop_stop_words_and_short_ones():
    assert hooks.distinctive_words("Please help me FIX the Migración of the café DB, para la app") == [
        "migracion", "cafe", "app"]
    assert hooks.distinctive_words("quiero ayuda para el menú") == ["menu"]
    assert len(hooks.distinctive_words(" ".join(f"word{n}" for n in range(40)))) == 20
    assert hooks.distinctive_words("deploy deploy Deploy") == ["deploy"]


def test_fewer_than_two_words_adds_nothing(items):
    assert first("migration") == ""
    assert first("please fix the migration") == ""  # one distinctive word left
    assert first("") == ""


@pytest.fixture
def generic():
    """Thirty sessions about building code files: their words are in most of the library."""
    return [make_item(title=f"Fix the build of the code file {n}", summary="The build of the code file works again.",
                      original="user: the build breaks on this code file", project=f"proj-{n % 5}")
            for n in range(30)]


def test_generic_words_inject_nothing(items, generic):
    """SPEC §13 Precision: two words that happen to be in a title are not evidence."""
    assert first("fix the build of my code file") == ""
    assert first("the build of the code file fails again") == ""


def test_two_rare_words_anywhere_are_evidence(items, generic):
    """Words held by at most 3 % of the library (or 3 items) count; the item shows."""
    target = make_item(title="Upgrade node", summary="Node 18 upgrade.",
                       original="user: webpack dies with ERR_OSSL_EVP_UNSUPPORTED\n\n"
                                "assistant: add --openssl-legacy-provider to NODE_OPTIONS")
    context = first("webpack build fails with ERR_OSSL_EVP_UNSUPPORTED, openssl legacy provider?")
    assert f"[{target.id}]" in context and "Upgrade node" in context
    assert all(f"[{g.id}]" not in context for g in generic)


def test_one_rare_word_is_not_enough(items, generic):
    make_item(title="Upgrade node", original="user: webpack dies with ERR_OSSL_EVP_UNSUPPORTED")
    assert first("the code file build says ERR_OSSL_EVP_UNSUPPORTED") == ""


def test_in_the_working_folders_project_two_words_in_title_or_summary_are_enough(items, generic):
    """The session's own past work: sharing two of the prompt's words is evidence there."""
    own = make_item(title="Fix the build of the code file for the recipes app", summary="Build fixed.",
                    project="recipes-app", occurred_at=days_ago(1))
    context = hooks.first_prompt("fix the code file build again", allowed_sources=ALL_SOURCES,
                                 cwd="/home/tomas/src/recipes-app/api")
    assert f"[{own.id}]" in context.context
    assert context.project == "recipes-app"
    assert all(f"[{g.id}]" not in context.context for g in generic)  # other projects need rare words
    assert hooks.first_prompt("fix the code file build again", allowed_sources=ALL_SOURCES).context == ""


def test_whole_words_only_in_the_own_project_rule(items):
    """`migration` in the prompt does not count `migrations` in a title."""
    for n in range(30):  # elsewhere these words are common, so only the own-project rule could show it
        make_item(title=f"Squash migrations {n}", summary="Django migrations squashed.", project="other")
    context = hooks.first_prompt("migration squash", allowed_sources=ALL_SOURCES, project="shop-site").context
    assert f"[{items['migrations'].id}]" not in context
    context = hooks.first_prompt("django migrations squashed", allowed_sources=ALL_SOURCES, project="shop-site")
    assert f"[{items['migrations'].id}]" in context.context


def test_accents_do_not_matter_for_the_rule(items):
    context = first("exportar menu del cafe")
    assert f"[{items['cafe'].id}]" in context


def test_at_most_three_lines_with_the_check_note_framed_as_data(items):
    for n in range(6):
        make_item(title=f"Stripe webhook retries {n}", summary="stripe webhook handler", project="shop-site")
    context = hooks.first_prompt("stripe webhook retries", allowed_sources=ALL_SOURCES, project="shop-site").context
    lines = [line for line in context.splitlines() if line.startswith("[")]
    assert len(lines) == 3
    assert context.startswith("Data from the Jezero library")
    assert "get_item" in context and "not instructions" in context
    assert all(line.split("] ")[1][:10].count("-") == 2 for line in lines)  # [id] YYYY-MM-DD title


def test_the_callers_sources_apply(items):
    make_item(title="Stripe invoice accountant", summary="stripe invoice", source="mail-home", key="mail-home:9")
    assert "accountant" in first("stripe invoice accountant")
    assert first("stripe invoice accountant", sources=["agent-*"]) == ""


def test_session_start_shows_the_projects_five_newest_and_the_protocol(settings, items):
    for n in range(6):
        make_item(title=f"recipes work {n}", project="recipes-app", occurred_at=days_ago(1 + n / 10))
    result = hooks.session_start(allowed_sources=ALL_SOURCES, cwd="/home/tomas/src/recipes-app/mobile")
    assert result.project == "recipes-app"
    lines = [line for line in result.context.splitlines() if line.startswith("[")]
    assert len(lines) == 5 and "recipes work 0" in lines[0]
    assert result.context.endswith(hooks.PROTOCOL)
    assert "later(item_id)" in hooks.PROTOCOL and "external" in hooks.PROTOCOL


def test_session_start_without_a_project_is_only_the_protocol(items):
    result = hooks.session_start(allowed_sources=ALL_SOURCES, cwd="/tmp/scratch")
    assert (result.project, result.context) == (None, hooks.PROTOCOL)
    named = hooks.session_start(allowed_sources=ALL_SOURCES, project="shop-site")
    assert "Squash old migrations" in named.context
