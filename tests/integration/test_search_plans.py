"""What SQLite does for a search: no statement of the default search reads a whole table that
grows with every write. The item catalog asks `item_changes` for its first and last change on
every search; asked in one SELECT, SQLite scanned all the changes kept (100,000 after a bulk
import: 5 ms of a 10 ms search at 100,000 items, bench/RESULTS-search.md). Untimed: the query
plans themselves are checked."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from library import search as lib
from library import store
from library.indexes import CHANGES
from library.search import ALL_SOURCES
from tests.conftest import NOW, days_ago, make_item

pytestmark = pytest.mark.django_db

GROWING = (CHANGES,)   # tables no search statement may scan whole


def plans(run):
    """[(sql, [plan detail])] of every statement `run()` sends."""
    with CaptureQueriesContext(connection) as captured:
        run()
    out = []
    with connection.cursor() as cursor:
        for query in captured.captured_queries:
            sql = query["sql"]
            if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
                continue
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
            out.append((sql, [row[3] for row in cursor.fetchall()]))
    return out


@pytest.fixture
def library_of_changes():
    for i in range(60):
        make_item(title=f"gunicorn worker {i}", source="laptop-a" if i % 2 else "laptop-b",
                  project="shop" if i % 3 else "infra", occurred_at=days_ago(i),
                  original=f"user: why does gunicorn restart the worker {i}?\n\nassistant: the timeout.")
    store.optimize()
    make_item(title="gunicorn after the refresh", occurred_at=days_ago(0), original="gunicorn again")


@pytest.mark.parametrize("filters", [{}, {"source": "laptop-a"}, {"project": "infra"}, {"since": "2026-01-01"},
                                     {"allowed_sources": ["laptop-b"]}])
def test_no_search_statement_scans_the_changes(library_of_changes, filters):
    filters = dict(filters)   # the parameter's dict is shared by every run of this case
    allowed = filters.pop("allowed_sources", ALL_SOURCES)
    seen = plans(lambda: lib.search("gunicorn worker timeout", allowed_sources=allowed, now=NOW, **filters))
    assert any(CHANGES in sql for sql, _plan in seen)       # the catalog did ask
    for sql, plan in seen:
        for table in GROWING:
            assert not any(step.startswith(f"SCAN {table}") for step in plan), (sql, plan)


@pytest.mark.parametrize("listing", [lib.sources, lib.projects])
@pytest.mark.parametrize("allowed", [ALL_SOURCES, ["laptop-a"]])
def test_the_lists_of_sources_and_projects_read_an_index_not_the_items(library_of_changes, listing, allowed):
    """MCP's `catalog` and the web app's filters list every source and project with counts:
    from a covering index, not by reading every item (whose rows hold what was said): 455 ms →
    18 ms for the sources at 100,000 items."""
    seen = plans(lambda: listing(allowed_sources=allowed))
    steps = [step for _sql, plan in seen for step in plan if step.startswith(("SCAN items", "SEARCH items",
                                                                             "SCAN i ", "SEARCH i "))]
    assert steps
    for step in steps:
        assert "COVERING INDEX" in step, (steps, seen)
