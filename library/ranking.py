"""The fused ranking of `search()` (docs/design.md "How search ranks"), computed
two ways that give the same answer: exhaustively by FTS5 (`exhaustive=True`, the reference),
or from the postings of common terms and the item catalog (the default).

1. **What each word index is asked** (`ask`, the same for both ways): the query's terms
   (`terms.original_terms`: common question words dropped, Chinese, Japanese and Korean as
   two-character phrases), each as the index's expression (in the record, a word of three
   letters or more is a prefix). A term of several tokens each of which more than COMMON
   items hold (a quoted phrase of common words, `file.py`, a pair of common CJK characters)
   is looked up as its words, as if typed without quotes: FTS5 would seek through their whole
   position lists to find it. A one-token term that more than COMMON items and at least half
   the index's rows hold is *left out*: bm25 gives it no weight (FTS5's idf is then 1e-6),
   yet scoring it would cost a pass over half the library.
2. **Relevance**: for every item that passes the filters, each index's bm25 over the terms
   it scores, as FTS5 computes it. The reference asks FTS5 for all of them in one statement
   (`-bm25()` over the terms OR-ed, the filters in the same WHERE). The default adds up each
   term's part: a common term's from its postings (`library.postings`, numpy, FTS5's own
   formula and order of operations, so the same bits), any other term's from FTS5 (one
   statement per term: a rare term costs little), and filters over the catalog
   (`library.catalog`).
3. **Fusion** (`fuse`): each index's relevance divided by its best, weighted
   (`search.record_weight`, `search.original_weight`) and summed, times the recency factor;
   ties go to the newer item, then the higher id. Items that hold only left-out words follow,
   newest first (all of them, when every term was left out: `newest`).
4. **Meaning** re-ranks the best RERANK_DEPTH (`rerank`), as before.
5. **Closeness** re-ranks the best CLOSE_DEPTH (`closer`): each gains `search.proximity_weight`
   times the share of the query's terms that the densest snippet-wide window of what was said
   holds (`snippets.window`, the window the snippet shows), times its recency factor.
"""

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from django.conf import settings
from django.db import connection
from django.utils import timezone

from library import catalog, meaning, postings, snippets, terms
from library.filters import micros
from library.indexes import K1, ORIGINAL, WORDS, B
from library.tokens import index_tokens, phrase

RECORD, ORIGINAL_TEXT, MEANING = WORDS.role, ORIGINAL.role, "meaning"   # where a result matched
# The two rules of the ranking (`ask`) act on terms more items hold than this: below it,
# scoring a term that half the index holds costs little and its 1e-6 weight still orders the
# items holding only it; a phrase with a rarer token is cheap to find (docs/design.md "How
# search ranks"). A rule of the ranking, not of its speed: bench/recall.py measured it.
COMMON = 1_000
# The first results re-ranked by closeness: the page an agent or a person reads (the default
# limit); each costs reading its original text, which the snippets of those results read anyway.
# bench/recall.py chose it and the weight on half A of its questions (docs/design.md "Closeness").
CLOSE_DEPTH = 10
_DAY_US = 86_400_000_000.0


def _config():
    return settings.JEZERO["search"]


# --- 1. what each index is asked --------------------------------------------------------------------

@dataclass(frozen=True)
class Term:
    """One thing an index looks up: its FTS5 expression and the tokens it holds."""

    expression: str
    tokens: tuple


@dataclass(frozen=True)
class Asked:
    """What one word index is asked: the terms bm25 ranks by (`scored`, in query order) and
    those left out (no weight; their holders follow the ranked items, newest first)."""

    index: object
    scored: tuple = ()
    left_out: tuple = ()
    row_count: int = 0      # the index's row count, as bm25 reads it (N)
    token_count: int = 0    # its token count (all columns)
    matching: bool = False   # some item holds a scored term

    @property
    def shown(self):
        """What bm25 ranks by, as one expression; when every term was left out, those that
        list the newest items (None: nothing to look up)."""
        return " OR ".join(term.expression for term in (self.scored or self.left_out)) or None

    @property
    def expression(self):
        """The MATCH expression bm25 ranks by (None: nothing)."""
        return " OR ".join(term.expression for term in self.scored) or None


def ask(index, query, counts, row_count, token_count):
    """What `index` is asked for `query`; `counts.held(index, term, at_most)` says how many
    items hold a Term (exactly up to `at_most`, else at_most + 1)."""
    wanted = {}
    for word in terms.original_terms(query):
        tokens_of_word = tuple(index_tokens(word))
        if not tokens_of_word:
            continue
        parts = [tokens_of_word]
        if len(tokens_of_word) > 1 and all(
                counts.held(index, Term(f'"{token}"', (token,)), COMMON) > COMMON
                for token in tokens_of_word):   # as its words, as if typed without quotes
            parts = [(token,) for token in tokens_of_word if token not in terms.STOP_WORDS]
        for part in parts:
            expression = index.expression(part)
            wanted.setdefault(expression, Term(expression, part))
    scored, left_out, matching = [], [], False
    enough = max(COMMON, (row_count + 1) // 2)
    for term in wanted.values():
        held = counts.held(index, term, enough if len(term.tokens) == 1 else 0)
        if len(term.tokens) == 1 and held > COMMON and postings.weightless(held, row_count):
            left_out.append(term)
            continue
        scored.append(term)
        matching = matching or held > 0
    return Asked(index, tuple(scored), tuple(left_out), row_count, token_count, matching)


class _Counts:
    """How many items hold a term, from FTS5 (counting stops past `at_most`: a common term
    costs what `at_most` postings cost)."""

    def __init__(self, cursor):
        self.cursor = cursor

    def held(self, index, term, at_most):
        self.cursor.execute(f"SELECT count(*) FROM (SELECT 1 FROM {index.table} WHERE {index.table} MATCH %s "
                            f"LIMIT %s)", [term.expression, at_most + 1])
        return self.cursor.fetchone()[0]

    def postings_of(self, index, term):
        """A term's current Postings, or None: FTS5 scores it."""
        return None


class _PostedCounts(_Counts):
    """`_Counts` from the postings where a term has them: exact, and the Postings kept for
    the scoring; a term the base knows as held by half the index needs no count at all while
    it cannot have fallen below `at_most` since."""

    def __init__(self, cursor, bases):
        super().__init__(cursor)
        self.bases = bases
        self._cache = {}   # {(index name, expression): Postings or None}

    def postings_of(self, index, term):
        base = self.bases.get(index.name)
        if base is None or len(term.tokens) != 1 or index.expression(term.tokens) != term.expression:
            return None
        key = (index.name, term.expression)
        if key not in self._cache:
            token = term.tokens[0]
            if base.term(token) is not None:
                self._cache[key] = postings.current(self.cursor, index, base, token)
            else:
                self._cache[key] = postings.composed(self.cursor, index, base, token)
        return self._cache[key]

    def held(self, index, term, at_most):
        posted = self.postings_of(index, term)
        if posted is not None:
            return min(posted.held, at_most + 1)
        base = self.bases.get(index.name)
        common = base.term(term.tokens[0]) if base is not None and len(term.tokens) == 1 else None
        if common is not None and index.expression(term.tokens) == term.expression:
            if common.held - len(base.changed) > at_most:   # each changed item can have taken one away
                return at_most + 1
        return super().held(index, term, at_most)


# --- 2. relevance ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Relevance:
    """One index's bm25 of the items that pass the filters and hold a scored term: `items`
    (int64 ids, ascending), `scores` (float64), `dates` (microseconds since 1970)."""

    items: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0))
    dates: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


def _idf(row_count, held):
    """FTS5's idf (fts5_aux.c): log((N − n + 0.5) / (n + 0.5)), 1e-6 when not above 0."""
    value = math.log((row_count - held + 0.5) / (held + 0.5))
    return value if value > 0.0 else 1e-6


def part(posted, row_count, token_count):
    """A term's part of bm25 in each item of its Postings, as fts5_aux.c computes it (the
    same operations in the same order: the same bits)."""
    avgdl = float(token_count) / float(row_count)
    freqs = posted.freqs
    return _idf(row_count, posted.held) * ((freqs * (K1 + 1.0)) / (freqs + K1 * ((1 - B) + B * posted.lengths / avgdl)))


def _reference(cursor, asked, filters):
    """Relevance of one index from FTS5 itself: bm25 over the scored terms OR-ed, the filters
    in the same WHERE, every matching row."""
    if asked.expression is None:
        return Relevance()
    table = asked.index.table
    where = f"AND {filters.sql}" if filters.sql else ""
    cursor.execute(f"SELECT {table}.rowid, -bm25({table}{asked.index.bm25}), CAST(i.occurred_at AS TEXT) "
                   f"FROM {table} CROSS JOIN items AS i INDEXED BY items_filter ON i.id = {table}.rowid "
                   f"WHERE {table} MATCH %s {where} ORDER BY {table}.rowid", [asked.expression, *filters.params])
    rows = cursor.fetchall()
    if not rows:
        return Relevance()
    return Relevance(np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows)),
                     np.fromiter((row[1] for row in rows), dtype=np.float64, count=len(rows)),
                     catalog.dates_of(row[2] for row in rows))


@dataclass(frozen=True)
class Parts:
    """One index's relevance before it is added up: each scored term's part of bm25 for the
    items holding it (`terms`: [(item ids, parts)], in query order; a term scored by FTS5
    holds only the items that pass the filters), over the catalog snapshot `catalog_now`.
    `relevance()` adds them up as bm25 does; `fuse_parts` ranks only the items that can rank."""

    terms: tuple = ()
    catalog_now: object = None
    filters: object = None

    def relevance(self):
        """The Relevance: each item's parts added up in query order (as bm25 adds the terms
        up), for the items that pass the filters."""
        if not self.terms:
            return Relevance()
        total, touched = self.summed
        items = np.flatnonzero(touched)
        items = items[self.catalog_now.passes(items, self.filters)]
        return Relevance(items, total[items], self.catalog_now.dates(items))

    @cached_property
    def summed(self):
        """(each item's parts added up in query order, whether it holds a term), by item id
        over the catalog."""
        size = len(self.catalog_now.present)
        total = np.zeros(size)
        touched = np.zeros(size, dtype=bool)
        for items, values in self.terms:
            total[items] += values
            touched[items] = True
        return total, touched


def _parts(cursor, asked, counts, catalog_now, filters):
    """Parts of one index term by term: a term with postings from them, any other from FTS5
    (its bm25 alone is its part; the filters in the statement)."""
    if asked.expression is None:
        return Parts()
    size = len(catalog_now.present)
    found = []
    for term in asked.scored:
        posted = counts.postings_of(asked.index, term)
        if posted is not None:
            items, values = posted.items, part(posted, asked.row_count, asked.token_count)
        else:   # the filters in the statement too: bm25 is then computed for the rows that pass only
            table = asked.index.table
            join = where = ""
            if filters.sql:
                join = f"CROSS JOIN items AS i INDEXED BY items_filter ON i.id = {table}.rowid"
                where = f"AND {filters.sql}"
            cursor.execute(f"SELECT {table}.rowid, -bm25({table}{asked.index.bm25}) FROM {table} {join} "
                           f"WHERE {table} MATCH %s {where}", [term.expression, *filters.params])
            rows = cursor.fetchall()
            items = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            values = np.fromiter((row[1] for row in rows), dtype=np.float64, count=len(rows))
        if not len(items):
            continue
        inside = items < size   # an item the catalog does not know yet is not in this snapshot
        if not inside.all():
            items, values = items[inside], values[inside]
        found.append((items, values))
    return Parts(tuple(found), catalog_now, filters)


# --- 3. fusion -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Ranked:
    """One ranked result: its item, score (0 for an item listed by date), date
    (microseconds), where it matched (`matched_in`) and the recency factor its relevance was
    multiplied by."""

    id: int
    score: float
    date: int
    matched_in: tuple
    factor: float


@dataclass(frozen=True)
class Ranking:
    """A search's ranked items, best first, as deep as asked; what each index looked up;
    the original texts read to rank them and where the query's terms occur in them ({id:
    text}, {id: snippets.Window}: the snippets of those items need them too)."""

    rows: list
    record: Asked | None
    original: Asked | None
    originals: dict = field(default_factory=dict)
    windows: dict = field(default_factory=dict)

    @property
    def newest(self):
        """Every term of the query was left out: the items are listed by date."""
        asked = [a for a in (self.record, self.original) if a is not None]
        return not any(a.matching for a in asked) and any(a.left_out for a in asked)


def fuse(record, original, *, now_us, depth, record_weight, original_weight, recency_weight, half_life_days):
    """The best `depth` Ranked of two Relevances: each divided by its best, weighted and
    summed (record first), times the recency factor (1 − w) + w · 0.5^(age / half life);
    ties newer first, then higher id. Pure."""
    size = max(int(relevance.items[-1]) + 1 for relevance in (record, original) if len(relevance.items)) \
        if len(record.items) or len(original.items) else 0
    if not size:
        return []
    present = np.zeros(size, dtype=bool)   # by id: some index matched the item
    present[record.items] = True
    present[original.items] = True
    ids = np.flatnonzero(present)
    where = np.zeros(size, dtype=np.int64)
    where[ids] = np.arange(len(ids))
    shares = []
    for relevance, weight, name in ((record, record_weight, RECORD), (original, original_weight, ORIGINAL_TEXT)):
        at = where[relevance.items]
        best = relevance.scores.max() if len(relevance.items) else 0.0
        shares.append((name, at, _share(relevance.scores, weight, best), relevance.dates))
    return _best(ids, shares, now_us=now_us, depth=depth, recency_weight=recency_weight, half_life_days=half_life_days)


def _share(scores, weight, best):
    """An index's part of the fused score: its relevance divided by its best, weighted."""
    return (weight * scores) / best if best > 0 else np.zeros(len(scores))


def _factor(dates, now_us, recency_weight, half_life_days):
    """The recency factor (1 − w) + w · 0.5^(age / half life) of items of these dates."""
    age = np.maximum(now_us - dates, 0) / _DAY_US
    return (1.0 - recency_weight) + recency_weight * np.power(0.5, age / half_life_days)


def _best(ids, shares, *, now_us, depth, recency_weight, half_life_days):
    """The best `depth` Ranked of the items `ids` (ascending): `shares` [(index role,
    positions in ids, shares, dates)] summed in that order, times the recency factor; ties
    newer first, then higher id."""
    score, dates, factor, names = _scored(ids, shares, now_us, recency_weight, half_life_days)
    chosen = np.arange(len(ids))
    if len(ids) > depth:
        bar = np.partition(score, len(ids) - depth)[len(ids) - depth]
        chosen = np.flatnonzero(score >= bar)
    order = chosen[np.lexsort((ids[chosen], dates[chosen], score[chosen]))[::-1]][:depth]
    return [Ranked(int(ids[i]), float(score[i]), int(dates[i]),
                   tuple(name for name, inside in names if inside[i]), float(factor[i])) for i in order]


def _scored(ids, shares, now_us, recency_weight, half_life_days):
    """(fused scores, dates, recency factors, [(index role, whether each matched in it)]) of
    the items `ids`, as `_best` ranks them."""
    total = np.zeros(len(ids))
    dates = np.zeros(len(ids), dtype=np.int64)
    names = []
    for name, at, share, when in shares:
        inside = np.zeros(len(ids), dtype=bool)
        total[at] += share
        dates[at] = when
        inside[at] = True
        names.append((name, inside))
    factor = _factor(dates, now_us, recency_weight, half_life_days)
    return total * factor, dates, factor, names


_SLACK = 1e-9   # the bounds are sums of floats in another order than the scores: a margin


def fuse_parts(record, original, **options):
    """`fuse` of two indexes' Parts, the same Ranked: ranking only the items whose bound can
    reach the answer (`_bounded`) or, when that cannot be shown, every item."""
    ranked = _bounded(record, original, **options)
    return ranked if ranked is not None else fuse(record.relevance(), original.relevance(), **options)


def _bounded(record, original, *, now_us, depth, record_weight, original_weight, recency_weight, half_life_days):
    """`fuse`'s answer, ranking (filtering, dating, scoring) only the items that can reach it;
    None when that cannot be shown (docs/design.md "Bounded fusion").

    Each item's relevance in each index is added up for every item at once (`Parts.summed`,
    by item id), and so is a bound of its fused score: c = Σ weight · relevance / best, the
    score before the recency factor, which is at most 1. The items with the highest bounds
    that pass the filters give a bar (the `depth`-th best of their fused scores); an item
    whose bound is below the bar cannot reach the answer, and the answer is ranked from the
    others. Each index's best is the highest relevance that passes the filters, found among
    the highest relevances."""
    if record_weight < 0 or original_weight < 0 or not 0 <= recency_weight <= 1:
        return None
    used = [(parts, weight, name) for parts, weight, name in
            ((record, record_weight, RECORD), (original, original_weight, ORIGINAL_TEXT)) if parts.terms]
    if not used or any(weight <= 0 for _parts, weight, _name in used):
        return None
    catalog_now, filters = used[0][0].catalog_now, used[0][0].filters

    def passing(ids):
        return ids[catalog_now.passes(ids, filters)]

    indexes, bound = [], None
    for parts, weight, name in used:
        total, touched = parts.summed
        best = _best_passing(total, passing)
        if best is None:
            return None
        indexes.append((name, weight, best, total, touched))
        if bound is None:
            bound = np.multiply(total, weight / best)
        else:
            bound += np.multiply(total, weight / best)

    def shares(ids):
        dates = catalog_now.dates(ids)
        out = []
        for name, weight, best, total, touched in indexes:
            at = np.flatnonzero(touched[ids])
            out.append((name, at, _share(total[ids[at]], weight, best), dates[at]))
        return out

    highest = bound.max()
    for share in (0.5, 0.2, 0.05):
        found = passing(np.flatnonzero(bound >= share * highest))
        if len(found) >= depth:
            break
    else:
        return None
    score = _scored(found, shares(found), now_us, recency_weight, half_life_days)[0]
    bar = np.partition(score, len(found) - depth)[len(found) - depth] * (1 - _SLACK)   # their depth-th best
    if not bar > 0:   # (every recency factor 0): the bar would let in items that match nothing
        return None
    ids = passing(np.flatnonzero(bound >= bar))
    return _best(ids, shares(ids), now_us=now_us, depth=depth, recency_weight=recency_weight,
                 half_life_days=half_life_days)


def _best_passing(total, passing):
    """The highest of `total` (relevances by item id) over the items that pass the filters
    (`passing`), or None when none of the highest does."""
    top = int(total.argmax())
    highest = total[top]
    if not highest > 0:
        return None
    if len(passing(np.array([top]))):
        return highest
    for share in (0.5, 0.1):
        found = passing(np.flatnonzero(total >= share * highest))
        if len(found):
            return total[found].max()
    return None


def _listed_by_date(cursor, asked_list, filters, skip, need):
    """Up to `need` items that hold a left-out word of either index (the word itself, also in
    the record: a prefix would make FTS5 merge the lists of every word it begins for each item
    looked at) and are not in `skip`, newest first (then higher id), each with the indexes it
    matched in."""
    lists = []
    for asked in asked_list:
        if asked is None or not asked.left_out:
            continue
        table = asked.index.table
        where = f"{filters.sql} AND " if filters.sql else ""
        cursor.execute(f"SELECT i.id, CAST(i.occurred_at AS TEXT) FROM items AS i WHERE {where}"
                       f"EXISTS (SELECT 1 FROM {table} WHERE {table} MATCH %s AND {table}.rowid = i.id) "
                       f"ORDER BY i.occurred_at DESC, i.id DESC LIMIT %s",
                       [*filters.params, " OR ".join(phrase(term.tokens) for term in asked.left_out), need + len(skip)])
        rows = cursor.fetchall()
        dates = catalog.dates_of(row[1] for row in rows) if rows else []
        lists.append((asked.index.role, [(int(date), row[0]) for row, date in zip(rows, dates, strict=True)]))
    holders = {}
    for role, dated in lists:
        for date, item_id in dated:
            if item_id not in skip:
                holders.setdefault((date, item_id), []).append(role)
    ordered = sorted(holders, reverse=True)[:need]
    return [Ranked(item_id, 0.0, date, tuple(holders[(date, item_id)]), 1.0) for date, item_id in ordered]


# --- 4. meaning ----------------------------------------------------------------------------------------

def rerank(ranked, similarity, *, weight, depth):
    """Ranked rows with the first `depth` re-ranked by meaning: each gains `weight` times its
    similarity (`similarity`: {id: cosine}) scaled from the lowest of them (0) to the highest
    (1), before the recency factor (a row without vectors gains nothing). `matched_in` gains
    "meaning" from `meaning.SHOWN` up. Only rows that the words ranked are re-ranked: the
    rows below `depth`, and those listed by date (score 0), stay as they are, below every row
    above, which only gained. Pure."""
    head = judged(ranked, depth)
    depth = len(head)
    values = [similarity[row.id] for row in head if row.id in similarity]
    if not weight or len(values) < 2 or max(values) <= min(values):
        return ranked
    low, span = min(values), max(values) - min(values)
    out = []
    for row in head:
        share = (similarity[row.id] - low) / span if row.id in similarity else 0.0
        names = (*row.matched_in, MEANING) if share >= meaning.SHOWN else row.matched_in
        out.append(Ranked(row.id, row.score + weight * share * row.factor, row.date, names, row.factor))
    out.sort(key=lambda row: (row.score, row.date, row.id), reverse=True)
    return out + ranked[depth:]


def judged(ranked, depth):
    """The rows `rerank` may move: of the first `depth`, those the words ranked (score above
    0; `ranked` is sorted by score, so they come first)."""
    return [row for row in ranked[:depth] if row.score > 0]


# --- 5. closeness -------------------------------------------------------------------------------------

def closer(ranked, windows, words, *, weight, depth):
    """Ranked rows with the first `depth` that the words ranked re-ranked by closeness: each
    gains `weight` times the share of `words` (the query's terms, at least two) that the
    densest window of its original text holds (`windows`: {id: snippets.Window}; a row
    without one gains nothing), times its recency factor. As in `rerank`, the rows below
    stay below. Pure."""
    head = judged(ranked, depth)
    if not weight or len(words) < 2 or len(head) < 2:
        return ranked
    gained = []
    for row in head:
        held = windows[row.id].count if row.id in windows else 0
        gained.append(Ranked(row.id, row.score + weight * held / len(words) * row.factor, row.date, row.matched_in,
                             row.factor))
    gained.sort(key=lambda row: (row.score, row.date, row.id), reverse=True)
    return gained + ranked[len(head):]


def originals_of(ids):
    """{id: original text} of these items."""
    if not ids:
        return {}
    marks = ", ".join("%s" for _ in ids)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, original FROM items WHERE id IN ({marks})", list(ids))
        return dict(cursor.fetchall())


# --- the whole ------------------------------------------------------------------------------------------

def _flush(cursor):
    """Inside a transaction that wrote, FTS5 keeps its row and token counts in memory until a
    savepoint or the commit: a savepoint makes it write them, so that they can be read."""
    if connection.in_atomic_block:
        cursor.execute("SAVEPOINT jezero_counts")
        cursor.execute("RELEASE jezero_counts")


def asked_and_relevance(query, filters, *, exhaustive=False):
    """({role: Asked}, {role: Relevance}) of the indexes the configured weights use (call
    inside `postings.reading`)."""
    asked, found = _asked_and_found(query, filters, exhaustive=exhaustive)
    return asked, {role: value.relevance() if isinstance(value, Parts) else value for role, value in found.items()}


def _asked_and_found(query, filters, *, exhaustive=False):
    """({role: Asked}, {role: Relevance (exhaustive) or Parts (the default)})."""
    config = _config()
    used = [index for index, weight in ((WORDS, config["record_weight"]), (ORIGINAL, config["original_weight"]))
            if weight]
    asked, found = {}, {}
    with connection.cursor() as cursor:
        _flush(cursor)
        if exhaustive:
            counts = _Counts(cursor)
        else:
            counts = _PostedCounts(cursor, {index.name: postings.base(cursor, index) for index in used})
            catalog_now = catalog.current(cursor) if not filters.empty else None
        for index in used:
            row_count, token_count = postings.averages(cursor, index)
            asked[index.role] = ask(index, query, counts, row_count, token_count)
            if filters.empty:
                found[index.role] = Relevance()
            elif exhaustive:
                found[index.role] = _reference(cursor, asked[index.role], filters)
            else:
                found[index.role] = _parts(cursor, asked[index.role], counts, catalog_now, filters)
    return asked, found


def rank(query, filters, *, depth, now=None, exhaustive=False):
    """The Ranking of `query` for items passing `filters`, `depth` rows deep (fewer when
    fewer items match): the default way, or with `exhaustive` FTS5's own (the reference)."""
    config = _config()
    with postings.reading():
        asked, found = _asked_and_found(query, filters, exhaustive=exhaustive)
        record, original = asked.get(RECORD), asked.get(ORIGINAL_TEXT)
        if filters.empty or not depth:
            return Ranking([], record, original)
        weight, close = config["meaning_weight"], config["proximity_weight"]
        deep = max(depth, meaning.RERANK_DEPTH if weight else 0, CLOSE_DEPTH if close else 0)
        nothing = Relevance() if exhaustive else Parts()
        ranked = (fuse if exhaustive else fuse_parts)(
            found.get(RECORD, nothing), found.get(ORIGINAL_TEXT, nothing),
            now_us=micros(now or timezone.now()), depth=deep, record_weight=config["record_weight"],
            original_weight=config["original_weight"], recency_weight=config["recency_weight"],
            half_life_days=config["recency_half_life_days"])
        if len(ranked) < deep:
            with connection.cursor() as cursor:
                ranked += _listed_by_date(cursor, (record, original), filters, {row.id for row in ranked},
                                          deep - len(ranked))
        head = judged(ranked, meaning.RERANK_DEPTH) if weight else []
        if len(head) > 1 and meaning.applies(query):   # one row has nothing to be re-ranked against
            ranked = rerank(ranked, meaning.similarities(query, [row.id for row in head]), weight=weight,
                            depth=meaning.RERANK_DEPTH)
        words = terms.original_terms(query)
        originals, windows = {}, {}
        if close and len(words) > 1:
            originals = originals_of([row.id for row in judged(ranked, CLOSE_DEPTH)])
            windows = {item_id: snippets.window(text or "", words) for item_id, text in originals.items()}
            ranked = closer(ranked, windows, words, weight=close, depth=CLOSE_DEPTH)
    return Ranking(ranked[:depth], record, original, originals, windows)
