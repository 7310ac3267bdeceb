"""Bounded fusion (`ranking.fuse_parts`) against adding every item up (`ranking.fuse` of each
index's whole Relevance): the same Ranked rows, bit for bit, on random libraries, terms and
filters, including ties, deleted items, filters that remove an index's best item, postings
out of order and depths past the number of matching items."""

import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from library import ranking
from library.catalog import Catalog
from library.filters import Filters, micros

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SOURCES = {"laptop-a": 0, "laptop-b": 1, "mail": 2}
PROJECTS = {"shop": 0, "infra": 1, "notes": 2}


def random_catalog(rng, size):
    np_rng = np.random.default_rng(rng.randrange(2**32))
    present = np_rng.random(size) > 0.05          # some items were deleted
    present[0] = False                             # item ids start at 1
    span = 2 * 365 * 86_400_000_000
    occurred = micros(NOW) - np_rng.integers(0, span, size)
    if rng.random() < 0.3:                         # many items of one date: ties of the recency factor
        occurred[np_rng.random(size) < 0.5] = micros(NOW - timedelta(days=30))
    return Catalog(seq=1, present=present, source=np_rng.integers(0, len(SOURCES), size).astype(np.int32),
                   project=np_rng.integers(-1, len(PROJECTS), size).astype(np.int32), occurred=occurred,
                   sources=dict(SOURCES), projects=dict(PROJECTS))


def random_filters(rng):
    kind = rng.choice(["none", "none", "source", "two sources", "project", "since", "until", "mixed", "exclude"])
    if kind == "source":
        return Filters(sources=frozenset([rng.choice(list(SOURCES))]))
    if kind == "two sources":
        return Filters(sources=frozenset(rng.sample(list(SOURCES), 2)))
    if kind == "project":
        return Filters(project=rng.choice([*PROJECTS, "nowhere"]))
    if kind == "since":
        return Filters(since=NOW - timedelta(days=rng.randrange(1, 700)))
    if kind == "until":
        return Filters(until=NOW - timedelta(days=rng.randrange(1, 700)))
    if kind == "mixed":
        return Filters(sources=frozenset([rng.choice(list(SOURCES))]), project=rng.choice(list(PROJECTS)),
                       since=NOW - timedelta(days=rng.randrange(30, 700)))
    if kind == "exclude":
        return Filters(exclude_id=rng.randrange(1, 50))
    return Filters()


def random_parts(rng, catalog, filters, terms):
    """Parts of one index: `terms` terms, long lists of small parts (common words) and short
    lists of large ones (rare words); some scored "by FTS5" (only the items that pass the
    filters), some out of order (postings since a base), some with equal parts (ties)."""
    size = len(catalog.present)
    found = []
    for _ in range(terms):
        share = rng.choice([0.002, 0.01, 0.05, 0.2, 0.45])
        count = max(1, int(size * share * rng.uniform(0.5, 1.5)))
        items = np.array(sorted(rng.sample(range(1, size), min(count, size - 1))), dtype=np.int64)
        idf = max(1e-6, np.log((size - len(items) + 0.5) / (len(items) + 0.5)))
        tf = np.array([rng.choice([1, 1, 1, 2, 3, 5, 9]) for _ in items], dtype=np.float64)
        values = idf * (tf * 2.2) / (tf + 1.2 * rng.uniform(0.6, 1.6))
        if rng.random() < 0.3:
            values = np.round(values, 1) + 1e-3    # many equal parts
        if rng.random() < 0.3:                      # scored by FTS5: the filters were in the statement
            keep = catalog.passes(items, filters)
            items, values = items[keep], values[keep]
        if rng.random() < 0.2:                      # postings with changes since the base: not in order
            order = np.array(rng.sample(range(len(items)), len(items)), dtype=np.int64)
            items, values = items[order], values[order]
        if len(items):
            found.append((items, values))
    return ranking.Parts(tuple(found), catalog, filters)


def options(rng):
    record_weight, original_weight = rng.choice([(1.0, 2.0), (1.0, 2.0), (1.0, 0.0), (0.0, 1.0), (0.7, 0.3)])
    return {"now_us": micros(NOW), "depth": rng.choice([1, 5, 10, 50, 50, 200]), "record_weight": record_weight,
            "original_weight": original_weight, "recency_weight": rng.choice([0.0, 0.3, 0.3, 1.0]),
            "half_life_days": rng.choice([30.0, 90.0, 90.0, 1e-4])}   # 1e-4: every factor 0, every score 0


def compare(rng, size):
    catalog = random_catalog(rng, size)
    filters = random_filters(rng)
    opts = options(rng)
    record = random_parts(rng, catalog, filters, rng.randrange(1, 5)) if opts["record_weight"] else ranking.Parts()
    original = random_parts(rng, catalog, filters, rng.randrange(1, 6)) if opts["original_weight"] else ranking.Parts()
    everything = ranking.fuse(record.relevance(), original.relevance(), **opts)
    bounded = ranking._bounded(record, original, **opts)
    assert ranking.fuse_parts(record, original, **opts) == everything
    if bounded is not None:
        assert bounded == everything
    return bounded is not None, len(everything)


@pytest.mark.parametrize("size", [300, 3_000])
def test_bounded_fusion_ranks_as_adding_every_item_up(size):
    rng = random.Random(size)
    proved = ranked = 0
    for _ in range(1_200 if size < 1000 else 400):
        bounded, rows = compare(rng, size)
        proved += bounded
        ranked += rows > 0
    assert proved > 0.3 * ranked   # the bound serves, so it is what is compared


def test_a_filter_that_removes_an_index_best_item_is_ranked_by_the_best_that_passes():
    rng = random.Random(7)
    catalog = random_catalog(rng, 2_000)
    items = np.arange(1, 2_000, dtype=np.int64)
    items = items[catalog.present[items]]
    values = np.linspace(0.1, 5.0, len(items))      # the highest part: the last item
    outside = int(items[-1])
    source = next(name for name, code in SOURCES.items() if code != catalog.source[outside])
    filters = Filters(sources=frozenset([source]))
    record = ranking.Parts(((items, values),), catalog, filters)
    original = ranking.Parts(((items[::3], values[::3] * 2),), catalog, filters)
    opts = {"now_us": micros(NOW), "depth": 50, "record_weight": 1.0, "original_weight": 2.0,
            "recency_weight": 0.3, "half_life_days": 90.0}
    everything = ranking.fuse(record.relevance(), original.relevance(), **opts)
    assert outside not in [row.id for row in everything] and len(everything) == 50
    assert ranking._bounded(record, original, **opts) == everything


def test_when_every_score_is_zero_every_item_is_ranked_and_only_matching_items_come_back():
    """Every recency factor 0 (a half-life of seconds, full recency weight): the bar would be 0
    and let in items that match nothing; the bound steps aside and `fuse` ranks."""
    rng = random.Random(11)
    catalog = random_catalog(rng, 1_000)
    filters = Filters()
    record = random_parts(rng, catalog, filters, 2)
    original = random_parts(rng, catalog, filters, 3)
    opts = {"now_us": micros(NOW), "depth": 50, "record_weight": 1.0, "original_weight": 2.0,
            "recency_weight": 1.0, "half_life_days": 1e-4}
    everything = ranking.fuse(record.relevance(), original.relevance(), **opts)
    assert everything and all(row.score == 0 and row.matched_in for row in everything)
    assert ranking._bounded(record, original, **opts) is None
    assert ranking.fuse_parts(record, original, **opts) == everything
