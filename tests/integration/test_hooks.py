"""SPEC §13: what the session-start and first-prompt hooks inject, rule by rule."""

import pytest

from library import hooks
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


def test_two_whole_words_in_title_or_summary_are_needed(items):
    context = first("the recipes migration keeps failing")
    assert f"[{items['migration'].id}]" in context
    assert "Database migration for the recipes app" in context


def test_migration_does_not_count_migrations(items):
    """Whole words only: `migration` in the prompt does not match `migrations`."""
    context = first("django migration squashed")
    assert f"[{items['migrations'].id}]" in context  # `django` and `squashed` match whole words
    context = first("migration squash")
    assert f"[{items['migrations'].id}]" not in context  # `migrations`, `squashed`: no whole-word match


def test_accents_do_not_matter_for_the_rule(items):
    context = first("exportar menu del cafe")
    assert f"[{items['cafe'].id}]" in context


def test_at_most_three_lines_with_the_check_note_framed_as_data(items):
    for n in range(6):
        make_item(title=f"Stripe webhook retries {n}", summary="stripe webhook handler")
    context = first("stripe webhook retries")
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
