"""docs/design.md "Agent hooks": what the session-start and first-prompt hooks inject, rule by rule."""

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
    assert len(hooks.distinctive_words(" ".join(f"word{n}" for n in range(40)))) == hooks.FIRST_PROMPT_MAX_WORDS
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
    """docs/design.md "The first-prompt rule": two words that happen to be in a title are not evidence."""
    assert first("fix the build of my code file") == ""
    assert first("the build of the code file fails again") == ""


@pytest.fixture
def many():
    """A library of some size: 400 sessions with words of their own, so that chance has
    room to match."""
    import random

    rng = random.Random(27)
    vocabulary = [f"{rng.choice('bcdfgklmnprstvz')}{rng.choice('aeiou')}{rng.choice('lnrst')}"
                  f"{rng.choice('aeiou')}{rng.choice('kmnpt')}{n}" for n in range(3000)]
    return [make_item(title=f"Session {n}", summary=" ".join(rng.choices(vocabulary, k=8)),
                      original="user: " + " ".join(rng.choices(vocabulary, k=40)), project=f"filler-{n % 40}")
            for n in range(400)]


def test_rare_words_anywhere_are_evidence_when_chance_would_not_give_them(items, generic, many):
    """Four words no other item holds, in a library of 400+: shown from another project."""
    target = make_item(title="Upgrade node", summary="Node 18 upgrade.", project="frontend",
                       original="user: webpack dies with ERR_OSSL_EVP_UNSUPPORTED\n\n"
                                "assistant: add --openssl-legacy-provider to NODE_OPTIONS")
    context = first("webpack build fails with ERR_OSSL_EVP_UNSUPPORTED, openssl legacy provider?")
    assert f"[{target.id}]" in context and "Upgrade node" in context
    assert all(f"[{g.id}]" not in context for g in generic)


def test_two_rare_words_are_a_coincidence_at_this_scale(items, generic, many):
    """Two shared rare words happen by chance once a library holds hundreds of sessions."""
    make_item(title="Upgrade node", project="frontend",
              original="user: webpack dies with ERR_OSSL_EVP_UNSUPPORTED on the laptop")
    assert first("the code file build says ERR_OSSL_EVP_UNSUPPORTED with webpack again") == ""


def test_one_rare_word_is_not_enough(items, generic):
    make_item(title="Upgrade node", original="user: webpack dies with ERR_OSSL_EVP_UNSUPPORTED")
    assert first("the code file build says ERR_OSSL_EVP_UNSUPPORTED") == ""


def test_in_a_small_library_rarity_is_weak_evidence(items):
    """Fifteen items: every word is rare, so three shared words are no evidence; all five
    words of a record, each held by it alone, are."""
    assert first("database migration recipes") == ""
    assert f"[{items['migration'].id}]" in first("database migration recipes sqlite moved")


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
    context = hooks.first_prompt("exportar menu del cafe", allowed_sources=ALL_SOURCES, project="recipes-app")
    assert f"[{items['cafe'].id}]" in context.context


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
    make_item(title="Stripe invoice accountant", summary="stripe invoice", source="mail-home", key="mail-home:9",
              project="household")
    def ask(sources):
        return hooks.first_prompt("stripe invoice accountant", allowed_sources=sources, project="household").context
    assert "accountant" in ask(ALL_SOURCES)
    assert ask(["agent-*"]) == ""


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
