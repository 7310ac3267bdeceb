"""What the fast search needs of every item besides its words — whether it exists, its
source, its project and its date — as arrays in this process, indexed by item id.

A search filters and dates every item that matches at once over these arrays, instead of a
query per item (`Filters` read as arrays; the same Filters as SQL serve timeline, later and
the exhaustive search, and the differential test holds the two readings equal).

The arrays follow the items through `item_changes` (every item write, in order, logged by
`library.store` in the writing transaction): a search reads the changes its snapshot holds
since the version it starts from and applies them to a copy, so that a version, once made,
never changes and every search sees the items as of its own snapshot. This process keeps the
last few versions; the first search (and one that finds the changes it needs pruned by
`jezero optimize`) reads every item once.
"""

import threading
from dataclasses import dataclass

import numpy as np

from library.filters import micros
from library.indexes import CHANGES

KEPT = 4   # versions kept (searches that run while items are written may need an older one)


@dataclass(frozen=True)
class Catalog:
    """The items as of change `seq`: by id, whether it exists, its source and project (codes
    into `sources` and `projects`; -1 for none) and its date (microseconds since 1970)."""

    seq: int
    present: np.ndarray
    source: np.ndarray
    project: np.ndarray
    occurred: np.ndarray
    sources: dict          # name -> code
    projects: dict

    def passes(self, items, filters):
        """Which of `items` (int64 ids) exist and pass `filters` (bool array)."""
        inside = items < len(self.present)
        ids = np.where(inside, items, 0)
        keep = inside & self.present[ids]
        if filters.sources is not None:
            codes = [self.sources[name] for name in filters.sources if name in self.sources]
            keep &= np.isin(self.source[ids], np.array(codes, dtype=np.int32))
        if filters.project is not None:
            keep &= self.project[ids] == self.projects.get(filters.project, -2)
        if filters.since is not None:
            keep &= self.occurred[ids] >= micros(filters.since)
        if filters.until is not None:
            keep &= self.occurred[ids] < micros(filters.until)
        if filters.exclude_id is not None:
            keep &= items != filters.exclude_id
        return keep

    def dates(self, items):
        """The dates of these (existing) items, microseconds since 1970."""
        return self.occurred[items]


def dates_of(texts):
    """Microseconds since 1970 of dates as the database holds them (text 'YYYY-MM-DD
    HH:MM:SS[.ffffff]', UTC: read them with CAST(occurred_at AS TEXT))."""
    return np.array(list(texts), dtype="datetime64[us]").astype(np.int64)


_versions = []
_lock = threading.Lock()


def forget_versions():
    """Drop this process's versions (a database rolled back under it: tests)."""
    with _lock:
        _versions.clear()


def current(cursor):
    """The catalog as of this snapshot (call inside `postings.reading`)."""
    # Each bound in its own sub-select: SQLite finds a lone max() or min() of the key at one
    # end of its b-tree, but both in one SELECT make it scan every change (100,000 are kept).
    cursor.execute(f"SELECT coalesce((SELECT max(seq) FROM {CHANGES}), 0), (SELECT min(seq) FROM {CHANGES}), "
                   f"(SELECT seq FROM sqlite_sequence WHERE name = %s)", [CHANGES])
    top, oldest, counter = cursor.fetchone()
    top = max(top, counter or 0)   # every change may have been pruned: the counter remains
    pruned = (oldest - 1) if oldest is not None else top   # changes up to here are gone
    with _lock:
        fitting = [version for version in _versions if pruned <= version.seq <= top]
        start = max(fitting, key=lambda version: version.seq, default=None)
    if start is not None and start.seq == top:
        return start
    made = _load(cursor, top) if start is None else _apply(cursor, start, top)
    with _lock:
        if all(version.seq != made.seq for version in _versions):
            _versions.append(made)
            _versions.sort(key=lambda version: version.seq)
            del _versions[:-KEPT]
    return made


def _load(cursor, seq):
    cursor.execute("SELECT id, source, project, CAST(occurred_at AS TEXT) FROM items")
    rows = cursor.fetchall()
    return _made(seq, _empty(max((row[0] for row in rows), default=0) + 1), {}, {}, rows, ())


def _apply(cursor, start, top):
    cursor.execute(f"SELECT c.item, i.source, i.project, CAST(i.occurred_at AS TEXT) FROM "
                   f"(SELECT DISTINCT item FROM {CHANGES} WHERE seq > %s AND seq <= %s) AS c "
                   f"LEFT JOIN items AS i ON i.id = c.item", [start.seq, top])
    found = cursor.fetchall()
    rows = [row for row in found if row[1] is not None]
    size = max([len(start.present), *(row[0] + 1 for row in rows)])
    arrays = _empty(size)
    for name, array in arrays.items():
        array[:len(start.present)] = getattr(start, name)
    return _made(top, arrays, dict(start.sources), dict(start.projects), rows, [row[0] for row in found])


def _empty(size):
    return {"present": np.zeros(size, dtype=bool), "source": np.full(size, -1, dtype=np.int32),
            "project": np.full(size, -1, dtype=np.int32), "occurred": np.zeros(size, dtype=np.int64)}


def _made(seq, arrays, sources, projects, rows, removed):
    """A new version: `arrays` (fresh copies) with `removed` ids cleared and `rows`
    (id, source, project, occurred_at) written."""
    if removed:
        gone = np.array(removed, dtype=np.int64)
        arrays["present"][gone[gone < len(arrays["present"])]] = False
    if rows:
        ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        arrays["present"][ids] = True
        arrays["source"][ids] = [sources.setdefault(row[1], len(sources)) for row in rows]
        arrays["project"][ids] = [-1 if row[2] is None else projects.setdefault(row[2], len(projects))
                                  for row in rows]
        arrays["occurred"][ids] = dates_of(row[3] for row in rows)
    return Catalog(seq, sources=sources, projects=projects, **arrays)
