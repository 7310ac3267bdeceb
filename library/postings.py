"""The postings of each word index's common terms: every item that holds a term and how often,
kept beside the index so that the fused search scores a common term exactly as FTS5's bm25
would, without FTS5 scoring every item that holds it (docs/design.md "Exact at speed").

FTS5 ranks by scoring every row a term matches (about 0.85 µs a row: a word held by 40,000
items costs 34 ms). bm25 of one term in one item needs only the item's weighted frequency of
the term `f`, the item's length in tokens `D`, the index's row count `N` and token count, and
how many items hold the term `n`; kept as arrays, numpy scores 40,000 items in well under a
millisecond, to the last bit of what FTS5 computes (same formula, same order of operations).

Per word index (`library.indexes`), all written here and only from `library.store`, inside
the transaction that changes the items:

- the **base**, as of the last refresh (a `generation`, and the change `seq` it reflects):
  `<index>_postings` holds, for every *common* token — held by more than POSTED items; in the
  record, a token of 3 letters or more stands for its prefix (`deploy` for `"deploy"*`, the
  items holding any token it begins) — how many items hold it (`held`) and, unless FTS5
  gives it no weight (held by half the index or more), its postings: the item ids (int32,
  ascending) and each one's weighted frequency in half units (uint16, or uint32 when one is
  larger; bm25 counts an instance by its column's weight: 2.0 1.0 1.5 1.5 0.5 in the record);
  `<index>_lengths` holds every item's length in tokens.
- the **changes since**: `<index>_changed` lists every item whose row in the index was
  written or removed after the base; `<index>_fresh` is an FTS5 table with the index's own
  tokenizer and columns holding the current text of those still there (so their frequencies
  are FTS5's own, read through its instance vocabulary).

A term's current postings: the base's without the changed items, plus the fresh table's.
`refresh` (from `store.optimize`, daily, and `store.rebuild`) folds the changes into a new
base: the first time, or after a rebuild, from the index itself (its instance vocabulary, in
one read snapshot while writers go on); after that by merging the base with the fresh table;
a token that became common is read from the index. Readers see one generation or the next,
never a mix: a search reads inside one snapshot (`reading`), and a new generation is made
current in one short transaction. Changes are tracked only while a base exists or is being
made, so a library that was never refreshed writes nothing here.

The postings serve only the `unicode61` family of tokenizers (where the query side names a
term's token as FTS5 does); with another tokenizer there is no base and every term is scored
by FTS5.
"""

import logging
import threading
from bisect import bisect_left
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from django.db import OperationalError, connections, transaction

from library.indexes import CHANGES, MIN_PREFIX, WORD_INDEXES
from library.tokens import prefix_end

logger = logging.getLogger(__name__)

# A token more items hold than this has postings. Below it FTS5 scores a term cheaply enough (at
# most 100 rows: about 0.1 ms); above it, one posting costs numpy ~20 ns against FTS5's ~1.3 µs
# (bm25 and the row fetched). At 100,000 items, postings from 100 rather than 1,000 holders add 3
# million postings to 68 million (docs/design.md "The postings").
POSTED = 100
STATE = "search_postings"
RUNS = "search_postings_runs"   # one row per refresh begun: its id is the generation it makes
BATCH = 200             # terms written per transaction while a refresh makes a new base
LABEL = "postings"


# --- schema (created by migration 0014 and `store.rebuild`) --------------------------------------

def create(cursor, index, tokenizer):
    """Create the tables of one word index's postings (idempotent); `tokenizer` is the index's
    own (its fresh table must tokenize as it does)."""
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {STATE} (name TEXT PRIMARY KEY, generation INTEGER NOT NULL, "
                   f"seq INTEGER NOT NULL, tracking INTEGER NOT NULL, current INTEGER NOT NULL)")
    cursor.execute(f"INSERT OR IGNORE INTO {STATE} (name, generation, seq, tracking, current) VALUES (%s, 0, 0, 0, 0)",
                   [index.name])
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {RUNS} (id INTEGER PRIMARY KEY AUTOINCREMENT)")
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {index.postings_table} (generation INTEGER NOT NULL, "
                   f"term TEXT NOT NULL, held INTEGER NOT NULL, items BLOB, freqs BLOB, "
                   f"PRIMARY KEY (generation, term))")
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {index.lengths_table} (generation INTEGER PRIMARY KEY, "
                   f"lengths BLOB NOT NULL)")
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {index.changed_table} (item INTEGER PRIMARY KEY, seq INTEGER NOT NULL)")
    cursor.execute(f"CREATE INDEX IF NOT EXISTS {index.changed_table}_seq ON {index.changed_table}(seq)")
    # The tokenizer comes from the index's own definition (validated configuration).
    cursor.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {index.fresh_table} USING fts5({', '.join(index.columns)}, "
                   f"content = '', contentless_delete = 1, tokenize = '{tokenizer}')")
    cursor.execute(f"INSERT INTO {index.fresh_table}({index.fresh_table}, rank) VALUES ('secure-delete', 1)")
    cursor.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {index.fresh_instances_table} "
                   f"USING fts5vocab({index.fresh_table}, 'instance')")
    cursor.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {index.instances_table} "
                   f"USING fts5vocab({index.table}, 'instance')")


def drop(cursor, index):
    for table in (index.fresh_instances_table, index.instances_table):
        cursor.execute(f"DROP TABLE IF EXISTS {table}")
    cursor.execute(f"DROP TABLE IF EXISTS {index.fresh_table}")
    for shadow in ("data", "idx", "content", "docsize", "config"):
        cursor.execute(f"DROP TABLE IF EXISTS {index.fresh_table}_{shadow}")
    for table in (index.postings_table, index.lengths_table, index.changed_table):
        cursor.execute(f"DROP TABLE IF EXISTS {table}")
    if _exists(cursor, STATE):   # the run counter stays: a generation number is never used twice
        cursor.execute(f"DELETE FROM {STATE} WHERE name = %s", [index.name])


def clear(cursor, index):
    """Forget the base and the changes (the index was rebuilt or emptied): every term is
    scored by FTS5 until the next refresh."""
    if not _exists(cursor, index.postings_table):
        return
    cursor.execute(f"DELETE FROM {index.postings_table}")
    cursor.execute(f"DELETE FROM {index.lengths_table}")
    cursor.execute(f"DELETE FROM {index.changed_table}")
    cursor.execute(f"DELETE FROM {index.fresh_table}")
    # The generation number is kept: a process that read the old base never takes a new one for it.
    cursor.execute(f"UPDATE {STATE} SET current = 0, seq = 0, tracking = 0 WHERE name = %s", [index.name])


def supported(tokenizer):
    """Whether the query side names a term's token as this FTS5 tokenizer makes it
    (`unicode61`, with or without `remove_diacritics`)."""
    words = (tokenizer or "").split()
    return bool(words) and words[0] == "unicode61" and all(
        word in ("remove_diacritics", "0", "1", "2") for word in words[1:])


def _exists(cursor, name):
    cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [name])
    return cursor.fetchone() is not None


def _last_change(cursor):
    """The seq of the last item change (0 before any, or before migration 0014)."""
    if not _exists(cursor, CHANGES):
        return 0
    cursor.execute(f"SELECT coalesce(max(seq), 0) FROM {CHANGES}")
    return cursor.fetchone()[0]


@dataclass(frozen=True)
class _State:
    generation: int     # the last base made (numbers are never reused)
    seq: int            # the item change its base reflects
    tracking: bool      # changes are noted (a base exists or is being made)
    current: bool       # the base of `generation` is there to be read


def _state(cursor, index):
    """One index's _State, or None before migration 0014 (asked, not looked up first: one
    statement on every search)."""
    try:
        cursor.execute(f"SELECT generation, seq, tracking, current FROM {STATE} WHERE name = %s", [index.name])
    except OperationalError:   # no such table
        return None
    row = cursor.fetchone()
    return None if row is None else _State(row[0], row[1], bool(row[2]), bool(row[3]))


# --- writes (from library.store, inside the items' transaction) -----------------------------------

def note(cursor, index, seq, written=(), removed=()):
    """Items whose row in `index` was just written — [(item id, (column texts…))], the text
    the index was given — or removed (ids), at change `seq`: while a base exists or is being
    made, they are marked changed and the fresh table holds what they hold now."""
    state = _state(cursor, index)
    if not state or not state.tracking:
        return
    ids = [item_id for item_id, _columns in written] + list(removed)
    if not ids:
        return
    _unfresh(cursor, index, ids)
    if written:
        cursor.executemany(f"INSERT INTO {index.fresh_table}(rowid, {', '.join(index.columns)}) "
                           f"VALUES ({', '.join('%s' for _ in range(len(index.columns) + 1))})",
                           [(item_id, *columns) for item_id, columns in written])
    cursor.executemany(f"INSERT OR REPLACE INTO {index.changed_table}(item, seq) VALUES (%s, %s)",
                       [(item_id, seq) for item_id in ids])


def _unfresh(cursor, index, ids):
    """Take these items out of the fresh table (those it holds: a contentless table cannot be
    asked to delete a row it does not have)."""
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        cursor.execute(f"SELECT id FROM {index.fresh_table}_docsize "
                       f"WHERE id IN ({', '.join('%s' for _ in chunk)})", chunk)
        present = [row[0] for row in cursor.fetchall()]
        if present:
            cursor.execute(f"DELETE FROM {index.fresh_table} "
                           f"WHERE rowid IN ({', '.join('%s' for _ in present)})", present)


# --- what FTS5 holds, read through an instance vocabulary ------------------------------------------

def _where(index, token):
    """The vocabulary condition for a token's term: the token itself, or in the record every
    token it begins (as FTS5 reads `"token"*`)."""
    if index.prefix and len(token) >= MIN_PREFIX:
        end = prefix_end(token)
        return ("term >= %s AND term < %s", [token, end]) if end else ("term >= %s", [token])
    return "term = %s", [token]


def _column_halves(index):
    """{column name: twice its bm25 weight} (frequencies are kept in half units)."""
    return {column: round(2 * weight) for column, weight in zip(index.columns, index.weights, strict=True)}


def _counted(cursor, index, vocabulary, token=None, where=None):
    """(item ids ascending, weighted frequencies in half units) of the items a vocabulary
    says hold the token's term (or the terms of a `where` (sql, params) condition)."""
    where, params = where or _where(index, token)
    cursor.execute(f"SELECT doc, col, count(*) FROM {vocabulary} WHERE {where} GROUP BY doc, col ORDER BY doc",
                   params)
    rows = cursor.fetchall()
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    column_halves = _column_halves(index)
    docs = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    weighted = np.fromiter((row[2] * column_halves[row[1]] for row in rows), dtype=np.int64, count=len(rows))
    starts = np.flatnonzero(np.r_[True, docs[1:] != docs[:-1]])
    return docs[starts], np.add.reduceat(weighted, starts)


def varint(data, offset=0):
    """(value, next offset) of the SQLite varint at `offset` in `data` (big-endian groups of
    7 bits; a ninth byte of 8)."""
    value = 0
    for position in range(offset, offset + 8):
        byte = data[position]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, position + 1
    return (value << 8) | data[offset + 8], offset + 9


def doc_length(size_blob):
    """An item's length in tokens (all columns) from its FTS5 `_docsize` blob."""
    total, offset = 0, 0
    while offset < len(size_blob):
        value, offset = varint(size_blob, offset)
        total += value
    return total


def _lengths(cursor, index, ids=None):
    """{item id: length in tokens} of the index's rows (these ids, or all)."""
    if ids is None:
        cursor.execute(f"SELECT id, sz FROM {index.table}_docsize")
        return {item_id: doc_length(size) for item_id, size in cursor.fetchall()}
    out = {}
    ids = [int(item_id) for item_id in ids]
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ", ".join("%s" for _ in chunk)
        cursor.execute(f"SELECT id, sz FROM {index.table}_docsize WHERE id IN ({marks})", chunk)
        out.update((item_id, doc_length(size)) for item_id, size in cursor.fetchall())
    return out


def averages(cursor, index):
    """(row count, token count) as FTS5's bm25 reads them: the index's averages record (rowid 1
    of `_data`): the row count, then each column's token count (summed). A contentless index
    counts a removed row until its segments are merged away, and bm25 uses these numbers as
    they are."""
    cursor.execute(f"SELECT block FROM {index.table}_data WHERE id = 1")
    row = cursor.fetchone()
    if not row or not row[0]:
        return 0, 0
    row_count, offset = varint(row[0], 0)
    token_count = 0
    for _column in range(len(index.columns) + 1):   # the stored digest column counts nothing
        if offset >= len(row[0]):
            break
        count, offset = varint(row[0], offset)
        token_count += count
    return row_count, token_count


def weightless(held, row_count):
    """Whether FTS5's bm25 gives a term that `held` of `row_count` rows hold no weight: its
    idf, log((N − n + 0.5) / (n + 0.5)), is 0 or less (FTS5 then uses 1e-6)."""
    return 2 * held >= row_count


# --- reads (library.ranking) -----------------------------------------------------------------------

@dataclass(frozen=True)
class Postings:
    """A term's current postings in one index: for each item holding it, its weighted
    frequency `freqs` (bm25's f) and its length in tokens `lengths` (bm25's |D|), as float64
    arrays aligned with `items` (int64)."""

    items: np.ndarray
    freqs: np.ndarray
    lengths: np.ndarray

    @property
    def held(self):
        return len(self.items)


class Common(NamedTuple):
    """What a base says of one common token: how many items held it (for a prefix without
    postings, how many held the token itself: at least that many hold the prefix) and whether
    it has postings (not when held by half the index or more)."""

    held: int
    has_postings: bool


@dataclass(frozen=True)
class Base:
    """One index's base as one search sees it: its common tokens ({token: Common}), its items'
    lengths in tokens (by id), and the items changed since (ascending ids, as the search's
    snapshot holds them)."""

    generation: int
    seq: int
    terms: dict
    lengths: np.ndarray
    changed: np.ndarray
    ordered: list = ()     # the terms' tokens in code-point order (the vocabulary's)
    changed_lengths: dict = None   # {changed item: its length in tokens now (0: gone)}
    changed_mask: np.ndarray = None   # by item id below len(lengths): changed since (see `_mask`)

    def term(self, token):
        """The Common of a common token, or None."""
        return self.terms.get(token)


@dataclass
class _CachedBase:
    """What this process keeps of a base between searches (read once per generation), and
    the changed items up to `changed_seq`."""

    generation: int
    seq: int
    terms: dict
    lengths: np.ndarray
    changed: np.ndarray
    changed_seq: int
    ordered: list = ()
    changed_lengths: dict = None
    changed_mask: np.ndarray = None


_cached = {}   # {index name: _CachedBase}
_lock = threading.Lock()


def forget_cached_bases():
    """Drop what this process keeps of the bases (a database rolled back under it: tests)."""
    with _lock:
        _cached.clear()


def base(cursor, index):
    """One index's current base, with the items changed since as this snapshot holds them
    (call inside `reading`), or None when there is none. The terms and lengths are read once
    per generation and process; the changed items since the last search."""
    state = _state(cursor, index)
    if not state or not state.current:
        return None
    generation, seq = state.generation, state.seq
    cursor.execute(f"SELECT coalesce(max(seq), %s) FROM {index.changed_table}", [seq])
    top = cursor.fetchone()[0]
    with _lock:
        cached = _cached.get(index.name)
        if cached is None or cached.generation != generation:
            cursor.execute(f"SELECT term, held, items IS NOT NULL FROM {index.postings_table} WHERE generation = %s",
                           [generation])
            terms = {term: Common(count, bool(has)) for term, count, has in cursor.fetchall()}
            cursor.execute(f"SELECT lengths FROM {index.lengths_table} WHERE generation = %s", [generation])
            row = cursor.fetchone()
            lengths = np.frombuffer(row[0], dtype=np.int32) if row else np.zeros(0, dtype=np.int32)
            cached = _CachedBase(generation, seq, terms, lengths, np.zeros(0, dtype=np.int64), seq, sorted(terms), {})
            _cached[index.name] = cached
        # Writers commit one at a time and each takes a higher seq, so what a snapshot holds of
        # the changed items is exactly the rows up to its highest seq.
        if top == cached.changed_seq:
            changed, sizes = cached.changed, cached.changed_lengths
            if cached.changed_mask is None:
                cached.changed_mask = _mask(changed, len(cached.lengths))
            mask = cached.changed_mask
        else:
            ahead = cached.changed_seq > top   # another search read further: start from the base
            since = seq if ahead else cached.changed_seq
            cursor.execute(f"SELECT item FROM {index.changed_table} WHERE seq > %s AND seq <= %s", [since, top])
            more = np.array([row[0] for row in cursor.fetchall()], dtype=np.int64)
            changed = np.union1d(np.zeros(0, dtype=np.int64) if ahead else cached.changed, more)
            found = _lengths(cursor, index, more)
            sizes = {**({} if ahead else cached.changed_lengths), **{int(i): found.get(int(i), 0) for i in more}}
            mask = _mask(changed, len(cached.lengths))
            if not ahead:
                cached.changed, cached.changed_seq, cached.changed_lengths = changed, top, sizes
                cached.changed_mask = mask
        return Base(generation, seq, cached.terms, cached.lengths, changed, cached.ordered, sizes, mask)


def _mask(changed, size):
    """Whether each item id below `size` is among `changed` (read-only): a base's postings hold
    only such ids, and a lookup in it costs a fifth to a tenth of a binary search a posting."""
    mask = np.zeros(size, dtype=bool)
    mask[changed[changed < size]] = True
    mask.flags.writeable = False
    return mask


def current(cursor, index, base, token):
    """The current Postings of a token with postings in the base (None otherwise): the
    base's, less the items changed since, plus the fresh table's."""
    common = base.term(token)
    if common is None or not common.has_postings:
        return None
    cursor.execute(f"SELECT items, freqs FROM {index.postings_table} WHERE generation = %s AND term = %s",
                   [base.generation, token])
    items_blob, freqs_blob = cursor.fetchone()
    # int64 ids from the start: numpy indexes with them about twice as fast as with int32.
    items = np.frombuffer(items_blob, dtype=np.int32).astype(np.int64)
    halves = np.frombuffer(freqs_blob, dtype=np.uint16 if len(freqs_blob) == 2 * len(items) else np.uint32)
    if len(base.changed):
        keep = ~base.changed_mask[items]
        items, halves = items[keep], halves[keep]
    lengths = base.lengths[items]
    fresh_items, fresh_halves = (_counted(cursor, index, index.fresh_instances_table, token) if len(base.changed)
                                 else ((), ()))
    if len(fresh_items):
        fresh_lengths = np.array([base.changed_lengths[int(item_id)] for item_id in fresh_items], dtype=np.int64)
        items = np.concatenate([items, fresh_items])
        halves = np.concatenate([halves.astype(np.int64), fresh_halves])
        lengths = np.concatenate([lengths.astype(np.int64), fresh_lengths])
    return Postings(items, np.true_divide(halves, 2.0), lengths.astype(np.float64))


def composed(cursor, index, base, token):
    """The current Postings of the prefix `token` in the record word index when it is not a
    common token itself (`execu` of `execute`, `executed`, `execution`…): the postings of the
    common tokens inside it, plus what the index holds of the others (each held by at most
    POSTED items, read through its instance vocabulary). None when a token inside it has no
    postings (held by half the index or more: so is the prefix) or for the original-text
    index (it has no prefixes)."""
    end = prefix_end(token)
    if not index.prefix or len(token) < MIN_PREFIX or end is None:
        return None
    inside = base.ordered[bisect_left(base.ordered, token):bisect_left(base.ordered, end)]
    if not inside:   # every token it begins is held by at most POSTED items: FTS5 scores it cheaply
        return None
    kept = []
    for inner in inside:
        if kept and inner.startswith(kept[-1]):
            continue   # within a prefix already kept
        if not base.terms[inner].has_postings:
            return None
        kept.append(inner)
    parts = [current(cursor, index, base, inner) for inner in kept]
    gaps, start = [], token
    for inner in kept:
        if start < inner:
            gaps.append((start, inner))
        start = prefix_end(inner)
    if start is not None and start < end:
        gaps.append((start, end))
    others = [_counted(cursor, index, index.instances_table, where=("term >= %s AND term < %s", [low, high]))
              for low, high in gaps]
    size = max([0, *(int(part.items.max()) + 1 for part in parts if len(part.items)),
                *(int(items.max()) + 1 for items, _counts in others if len(items))])
    halves = np.zeros(size, dtype=np.int64)
    lengths = np.zeros(size)
    present = np.zeros(size, dtype=bool)
    for part in parts:
        halves[part.items] += np.rint(part.freqs * 2).astype(np.int64)
        lengths[part.items] = part.lengths
        present[part.items] = True
    for items, counted in others:
        halves[items] += counted
        present[items] = True
    items = np.flatnonzero(present)
    unknown = items[lengths[items] == 0]
    if len(unknown):
        lengths[unknown] = _lengths_now(base, unknown)
    return Postings(items.astype(np.int64), halves[items].astype(np.float64) / 2.0, lengths[items])


def _lengths_now(base, items):
    """The lengths in tokens of these items as the index holds them now: the base's for an
    unchanged item, the index's own for a changed one."""
    out = np.zeros(len(items))
    inside = items < len(base.lengths)   # (an item newer than the base is changed)
    steady = inside & ~base.changed_mask[np.where(inside, items, 0)]
    out[steady] = base.lengths[items[steady]]
    if (~steady).any():
        out[~steady] = [base.changed_lengths[int(item_id)] for item_id in items[~steady]]
    return out


def _member(items, sorted_ids):
    """Which of `items` are among `sorted_ids` (ascending)."""
    if not len(sorted_ids):
        return np.zeros(len(items), dtype=bool)
    where = np.searchsorted(sorted_ids, items)
    where[where >= len(sorted_ids)] = 0
    return sorted_ids[where] == items


@contextmanager
def reading(using="default"):
    """One read snapshot for everything a search reads (outside a transaction: BEGIN … COMMIT;
    inside one, the caller's), so that a new base made current meanwhile is seen whole or not
    at all."""
    connection = connections[using]
    if connection.in_atomic_block:
        yield
        return
    connection.ensure_connection()
    raw = connection.connection
    if raw.in_transaction:
        yield
        return
    raw.execute("BEGIN")
    try:
        yield
    finally:
        if raw.in_transaction:
            raw.execute("COMMIT")


# --- refresh (from store.optimize and store.rebuild) ---------------------------------------------------

def _encode(items, halves):
    items = np.asarray(items, dtype=np.int64)
    halves = np.asarray(halves, dtype=np.int64)
    kind = np.uint16 if not len(halves) or halves.max() <= np.iinfo(np.uint16).max else np.uint32
    return items.astype(np.int32).tobytes(), halves.astype(kind).tobytes()


def _base_rows(cursor, index, generation, token):
    cursor.execute(f"SELECT items, freqs FROM {index.postings_table} WHERE generation = %s AND term = %s",
                   [generation, token])
    row = cursor.fetchone()
    items = np.frombuffer(row[0], dtype=np.int32).astype(np.int64)
    halves = np.frombuffer(row[1], dtype=np.uint16 if len(row[1]) == 2 * len(items) else np.uint32).astype(np.int64)
    return items, halves


@contextmanager
def _snapshot(using):
    """A cursor that reads one consistent state of the database: a second connection in a
    read transaction (writers go on), or the caller's own connection inside its transaction
    (a rebuild: what it wrote is not committed yet) or on an in-memory database (tests: a
    second connection to a shared in-memory database locks tables instead)."""
    connection = connections[using]
    if connection.in_atomic_block or connection.is_in_memory_db():
        with connection.cursor() as cursor:
            yield cursor
        return
    connection.ensure_connection()
    params = connection.get_connection_params()
    reader = connection.Database.connect(**params)
    try:
        reader.execute("PRAGMA query_only = 1")
        reader.execute("BEGIN")
        yield _Cursor(reader.cursor())
    finally:
        reader.close()


class _Cursor:
    """A DB-API cursor taking Django's `%s` placeholders (SQLite's are `?`)."""

    def __init__(self, cursor):
        self._cursor = cursor

    def execute(self, sql, params=()):
        self._cursor.execute(sql.replace("%s", "?"), list(params))
        return self

    def fetchone(self):
        return self._cursor.fetchone()

    def fetchall(self):
        return self._cursor.fetchall()


def refresh(index, tokenizer, using="default", progress=None):
    """Make a new base of one index's postings: every common token's postings as the index
    holds them now. Idempotent (the new base equals the old one when nothing changed).
    Readers and writers go on meanwhile. Returns {"terms": tokens with postings, "weightless":
    common tokens without (held by half the index or more), "items": items changed since the
    last base, folded in}. `progress(done, total)` is called per batch of terms."""
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        create(cursor, index, tokenizer)
        if not supported(tokenizer):
            clear(cursor, index)
            return {"terms": 0, "weightless": 0, "items": 0}
        cursor.execute(f"UPDATE {STATE} SET tracking = 1 WHERE name = %s", [index.name])
        state = _state(cursor, index)
        generation = state.generation if state.current else None
        # A number no other refresh has or will have (two may run at once: the worker's and
        # `jezero optimize`; the first to finish makes its base current, the other drops its own).
        cursor.execute(f"INSERT INTO {RUNS} DEFAULT VALUES")
        new = max(cursor.lastrowid, state.generation + 1)
        cursor.execute(f"DELETE FROM {RUNS} WHERE id < %s", [new])
    with _snapshot(using) as reader:
        seq = _last_change(reader)
        row_count, _token_count = averages(reader, index)
        reader.execute(f"SELECT term, doc FROM {index.vocab_table} WHERE doc > %s", [POSTED])
        common_terms = sorted(reader.fetchall())
        reader.execute(f"SELECT term, items IS NOT NULL FROM {index.postings_table} WHERE generation = %s",
                       [generation if generation is not None else -1])
        has_postings = {term: bool(has) for term, has in reader.fetchall()}
        reader.execute(f"SELECT item FROM {index.changed_table} WHERE seq <= %s ORDER BY item", [seq])
        changed = np.array([row[0] for row in reader.fetchall()], dtype=np.int64)
        lengths = _new_lengths(reader, index, generation, changed)
        with transaction.atomic(using=using), connections[using].cursor() as cursor:
            cursor.execute(f"INSERT OR REPLACE INTO {index.lengths_table}(generation, lengths) VALUES (%s, %s)",
                           [new, lengths.astype(np.int32).tobytes()])
        made_posted = quiet = 0
        for start in range(0, len(common_terms), BATCH):
            made = []
            for token, doc in common_terms[start:start + BATCH]:
                # A word's document count is its item count; a prefix is held by at least the
                # items holding the token itself: either way, no weight needs no postings.
                if weightless(doc, row_count):
                    made.append((new, token, doc, None, None))
                    quiet += 1
                    continue
                if has_postings.get(token):
                    items, halves = _merged(reader, index, generation, token, changed)
                else:
                    items, halves = _counted(reader, index, index.instances_table, token)
                if weightless(len(items), row_count):
                    made.append((new, token, len(items), None, None))
                    quiet += 1
                else:
                    made.append((new, token, len(items), *_encode(items, halves)))
                    made_posted += 1
            with transaction.atomic(using=using), connections[using].cursor() as cursor:
                cursor.executemany(f"INSERT INTO {index.postings_table}(generation, term, held, items, freqs) "
                                   f"VALUES (%s, %s, %s, %s, %s)", made)
            if progress:
                progress(min(start + BATCH, len(common_terms)), len(common_terms))
    _install(index, state.generation, new, seq, using)
    logger.info("postings refreshed index=%s generation=%d terms=%d weightless=%d changed_items=%d",
                index.table, new, made_posted, quiet, len(changed))
    return {"terms": made_posted, "weightless": quiet, "items": len(changed)}


def _new_lengths(reader, index, generation, changed):
    """Every item's length in tokens for the new base (int64, by id; 0: no row): the old
    base's, with the changed items' as they are now; on the first base, all of the index's."""
    row = None
    if generation is not None:
        reader.execute(f"SELECT lengths FROM {index.lengths_table} WHERE generation = %s", [generation])
        row = reader.fetchone()
    if row is None:
        sizes = _lengths(reader, index)
        lengths = np.zeros(max(sizes, default=0) + 1, dtype=np.int64)
    else:
        old = np.frombuffer(row[0], dtype=np.int32)
        sizes = _lengths(reader, index, changed)
        lengths = np.zeros(max(len(old) - 1, max(sizes, default=0)) + 1, dtype=np.int64)
        lengths[:len(old)] = old
        lengths[changed[changed < len(lengths)]] = 0
    for item_id, size in sizes.items():
        lengths[item_id] = size
    return lengths


def _merged(reader, index, generation, token, changed):
    """A token's postings in the new base: the old base's less the changed items, plus the
    fresh table's (what the changed items that are still there hold now)."""
    items, halves = _base_rows(reader, index, generation, token)
    if len(changed):
        keep = ~_member(items, changed)
        items, halves = items[keep], halves[keep]
        fresh_items, fresh_halves = _counted(reader, index, index.fresh_instances_table, token)
        if len(fresh_items):
            items = np.concatenate([items, fresh_items])
            halves = np.concatenate([halves, fresh_halves])
            order = np.argsort(items, kind="stable")
            items, halves = items[order], halves[order]
    return items, halves


def _install(index, old, new, seq, using):
    """Make the new base current in one transaction: the changes it holds are no longer
    changes (those made while it was made stay); then drop the old base."""
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        state = _state(cursor, index)
        if state.generation != old:   # another refresh got there first: this one's base is not newer
            cursor.execute(f"DELETE FROM {index.postings_table} WHERE generation = %s", [new])
            cursor.execute(f"DELETE FROM {index.lengths_table} WHERE generation = %s", [new])
            return
        cursor.execute(f"UPDATE {STATE} SET generation = %s, seq = %s, current = 1 WHERE name = %s",
                       [new, seq, index.name])
        cursor.execute(f"SELECT item FROM {index.changed_table} WHERE seq <= %s", [seq])
        _unfresh(cursor, index, [row[0] for row in cursor.fetchall()])
        cursor.execute(f"DELETE FROM {index.changed_table} WHERE seq <= %s", [seq])
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute(f"DELETE FROM {index.postings_table} WHERE generation < %s", [new])
        cursor.execute(f"DELETE FROM {index.lengths_table} WHERE generation < %s", [new])


def refresh_all(tokenizers, using="default", progress=None):
    """`refresh` both word indexes ({index name: tokenizer}); their reports summed.
    `progress(label, done, total)`."""
    total = {"terms": 0, "weightless": 0, "items": 0}
    for index in WORD_INDEXES:
        step = (lambda done, count, label=f"{LABEL} ({index.label})": progress(label, done, count)) if progress else None
        report = refresh(index, tokenizers[index.name], using, step)
        total = {key: total[key] + report[key] for key in total}
    return total


def due(cursor, index):
    """Whether a refresh would speed searching up (`store.postings_due`)."""
    state = _state(cursor, index)
    if state is None:
        return False
    row_count, _token_count = averages(cursor, index)
    if not state.current:
        return row_count > POSTED
    cursor.execute(f"SELECT count(*) FROM {index.changed_table}")
    return cursor.fetchone()[0] > max(POSTED, row_count // 50)


def base_seq(cursor):
    """The oldest change seq any current base reflects (changes up to it are in every base)."""
    if not _exists(cursor, STATE):
        return 0
    cursor.execute(f"SELECT min(seq) FROM {STATE} WHERE current = 1")
    return cursor.fetchone()[0] or 0


def holds_before(cursor, seq):
    """Whether a current base was made before item change `seq` (it may list items removed since)."""
    if not _exists(cursor, STATE):
        return False
    cursor.execute(f"SELECT 1 FROM {STATE} WHERE current = 1 AND seq < %s LIMIT 1", [seq])
    return cursor.fetchone() is not None


# --- verification (store.check) ------------------------------------------------------------------------

def problems(cursor, index):
    """What differs between the postings and the index (one line each): a base term whose
    current item count is not FTS5's, an item whose length is not the index's, a fresh row
    of an item not marked changed."""
    out = []
    state = _state(cursor, index)
    if not state or not state.current:
        return out
    current_base = base(cursor, index)
    for token, (count, has_postings) in sorted(current_base.terms.items()):
        expression = index.expression((token,))
        cursor.execute(f"SELECT count(*) FROM {index.table} WHERE {index.table} MATCH %s", [expression])
        actual = cursor.fetchone()[0]
        if has_postings:
            now = current(cursor, index, current_base, token).held
            if now != actual:
                out.append(f"the {LABEL} of {expression} in the {index.label} name {now} items, the index {actual}")
        elif actual < count - len(current_base.changed):
            out.append(f"the {LABEL} count {expression} in the {index.label} held by at least {count} items, "
                       f"the index by {actual}")
    sizes = _lengths(cursor, index)
    ids = np.array(sorted(sizes), dtype=np.int64)
    if len(current_base.changed):
        ids = ids[~_member(ids, current_base.changed)]
    expected = np.array([sizes[int(item_id)] for item_id in ids], dtype=np.int64)
    known = ids < len(current_base.lengths)
    wrong = ids[~known | (current_base.lengths[np.where(known, ids, 0)] != expected)]
    if len(wrong):
        out.append(f"the {LABEL} of the {index.label} give {len(wrong)} item(s) another length than the index "
                   f"(first: {wrong[0]})")
    cursor.execute(f"SELECT id FROM {index.fresh_table}_docsize "
                   f"WHERE id NOT IN (SELECT item FROM {index.changed_table})")
    stray = [row[0] for row in cursor.fetchall()]
    if stray:
        out.append(f"the {LABEL} of the {index.label} hold a fresh row for {len(stray)} item(s) not marked changed")
    return out
