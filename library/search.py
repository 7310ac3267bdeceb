"""The read side: `search`, `later`, `timeline`, `get_item` (docs/design.md "How search ranks",
"Later", "Timeline"), the catalog of `sources` and `projects`, and the word look-ups of the
first-prompt rule (`items_with_words`, `words_in_items`, `script_counts`).

One implementation for every adapter: the CLI, the JSON API, MCP and the web pages call
these functions and only render what they return. Each takes the caller's allowed-source
globs (`ALL_SOURCES` for people on the command line); a source outside them does not exist
for that caller (`library.filters`). No model is involved: same library + same query → same
answer. The fused ranking itself is `library.ranking`'s; `search(..., exhaustive=True)`
computes it the slow, obviously right way (docs/design.md "How search ranks").

User text reaches FTS5 only through `terms.build_match_query`, `ranking.ask` and
`tokens.phrase` (the first-prompt rule's words), which quote every term, and always as a
bound parameter. The tables' names are `library.indexes`'.
"""

from dataclasses import dataclass, replace
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.utils import timezone

from library import filters as reads
from library import indexes, ranking, records, snippets, store, terms, tokens
from library.errors import BadInput, NotFound
from library.filters import ALL_SOURCES  # noqa: F401  (callers have always found it here)
from library.timeutil import from_db, iso

TIMELINE_DEFAULT_LIMIT = 20
LATER_DEFAULT_LIMIT = 5
LATER_POOL = 50
LATER_MIN_SHARE = 0.3
LATER_CLOSEST = 2
MATCHED_BY_SUBJECT = "subject"
MATCHED_BY_TIMELINE = "project_timeline"
LATER_HEADINGS = {
    MATCHED_BY_SUBJECT: "NEWER ON THIS SUBJECT",
    MATCHED_BY_TIMELINE: "NEWER IN THIS PROJECT (by date, not by subject)",
}

_ROW_COLUMNS = "id, key, title, summary, project, source, trust, occurred_at"


@dataclass(frozen=True)
class Hit:
    """One result row (docs/design.md "Result rows"). `score` is None for rows listed by date, not relevance.

    Search results also say where the query matched (`matched_in`: "record" and/or
    "original", docs/design.md "Result rows") and carry a `snippet` showing why: an excerpt of the original
    around the match when the original matched, else of the record; the matched words sit
    between SNIPPET_START and SNIPPET_END (`plain_snippet` drops them).
    """

    id: int
    key: str
    title: str
    summary: str
    project: str | None
    source: str
    trust: str
    occurred_at: datetime
    score: float | None = None
    matched_in: tuple = ()
    snippet: str = ""

    def as_dict(self):
        return {
            "id": self.id, "key": self.key, "title": self.title, "summary": self.summary,
            "project": self.project, "source": self.source, "trust": self.trust,
            "occurred_at": iso(self.occurred_at), "score": self.score,
        }

    def search_dict(self):
        """A search result for agents: the row, `matched_in` and the plain-text snippet."""
        return {**self.as_dict(), "matched_in": list(self.matched_in), "snippet": plain_snippet(self.snippet)}


@dataclass(frozen=True)
class SearchResult:
    query: str
    match: str | None               # what the record was searched for: the MATCH expression of the record
                                    # index (records_only) or of the record word index (None: nothing)
    hits: list
    original_match: str | None = None  # the original-text index's (None in records-only mode)
    records_only: bool = False
    newest: bool = False               # every term was common: the newest matches, by date
    waiting: str | None = None         # nothing found, but uploads are on their way (`waiting`)

    @property
    def hint(self):
        """Why there are no results when the query had nothing to look up (None otherwise)."""
        if self.newest:
            return ("every word of this query is common in the library: the newest items that hold them are listed, "
                    "not ranked by relevance; add a distinctive word — a name, identifier, error or file name")
        if self.match is None and self.original_match is None:
            if self.records_only:
                return ("nothing to search for: the records are searched for terms of 3 or more characters; "
                        "use distinctive words or a \"quoted phrase\"")
            return ("nothing to search for: the query holds only common words (the, why, how …); use two to five "
                    "distinctive words — names, identifiers, errors, file names")
        if not self.hits and self.waiting:
            return self.waiting
        return None

    def as_dict(self):
        return {"query": self.query, "match": self.match, "original_match": self.original_match,
                "records_only": self.records_only, "results": [h.search_dict() for h in self.hits], "hint": self.hint}


@dataclass(frozen=True)
class LaterResult:
    item_id: int
    matched_by: str
    hits: list

    @property
    def heading(self):
        return LATER_HEADINGS[self.matched_by]

    def as_dict(self):
        return {"item_id": self.item_id, "matched_by": self.matched_by,
                "results": [h.as_dict() for h in self.hits]}


build_match_query = terms.build_match_query

# --- limits, scoring, filters ----------------------------------------------------------------

def clamp_limit(limit, default):
    """A missing, null, zero or negative limit means `default`; any limit is capped at
    `search.max_limit`. Raises BadInput for something that is not an integer."""
    if limit is None:
        return min(default, _search_config()["max_limit"])
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise BadInput(f"limit: {limit!r} is not an integer")
    if limit <= 0:
        limit = default
    return min(limit, _search_config()["max_limit"])


def search_default_limit():
    """How many results a search gives when the caller asks for no number
    (`search.default_limit`; `timeline` and `later` default to TIMELINE_DEFAULT_LIMIT and
    LATER_DEFAULT_LIMIT). Every adapter describes these, never a number of its own."""
    return _search_config()["default_limit"]


def recency_factor(age_days, weight=None, half_life_days=None):
    """The multiplier applied to relevance: 1.0 for age 0, never below 1 - weight."""
    config = _search_config()
    weight = config["recency_weight"] if weight is None else weight
    half_life_days = config["recency_half_life_days"] if half_life_days is None else half_life_days
    decay = 0.5 ** (max(age_days, 0.0) / half_life_days)
    return (1.0 - weight) + weight * decay


def _search_config():
    return settings.JEZERO["search"]


def candidate_pool():
    """How many rows search ranks at most (pages beyond it are empty)."""
    return _search_config()["candidate_pool"]


def _hit(row, score=None):
    return Hit(id=row[0], key=row[1], title=row[2], summary=row[3], project=row[4],
               source=row[5], trust=row[6], occurred_at=from_db(row[7]), score=score)


# --- search ------------------------------------------------------------------------------
#
# Both stages run in one statement. Stage 1 keeps the best `candidate_pool` rows by BM25 with
# the filters in the same WHERE; the filters read the covering index `items_filter` (id,
# source, project, occurred_at), never the wide item rows. Stage 2 multiplies each
# candidate's relevance by its recency factor, sorts (ties: newer, then higher id) and keeps
# `limit`, still reading only that index; only the rows kept are read in full. This is the
# formula of `recency_factor`, evaluated by SQLite (bench/RESULTS.md has the figures that
# moved it out of Python).

def _ranked(expression, filters, *, limit, recency_weight=None, now=None, offset=0):
    """Stage 1 + stage 2: the Hits of the record index's MATCH `expression` sorted by score
    (ties: newer first, then higher id), from `offset` (pages of the web app; only the
    candidate pool is ever ranked)."""
    if expression is None or filters.empty:
        return []
    config = _search_config()
    weight = config["recency_weight"] if recency_weight is None else recency_weight
    fts = indexes.RECORD_TABLE
    weights = ", ".join(f"{w:.1f}" for w in indexes.RECORD_WEIGHTS)
    join = where = ""
    if filters.sql:
        join = f"CROSS JOIN items AS i INDEXED BY items_filter ON i.id = {fts}.rowid"
        where = f"AND {filters.sql}"
    matching = (f"SELECT {fts}.rowid AS id, -bm25({fts}, {weights}) AS relevance FROM {fts} {join}"
                f" WHERE {fts} MATCH %s {where} ORDER BY bm25({fts}, {weights}) LIMIT %s")
    params = [expression, *filters.params, config["candidate_pool"]]
    sql = (
        f"WITH candidates AS ({matching}),"
        f" ranked AS ("
        f" SELECT c.id, f.occurred_at, c.relevance * ((1.0 - %s) + %s *"
        f"  pow(0.5, max(julianday(%s) - julianday(f.occurred_at), 0.0) / %s)) AS score"
        f" FROM candidates AS c JOIN items AS f INDEXED BY items_filter ON f.id = c.id"
        f" ORDER BY score DESC, f.occurred_at DESC, c.id DESC LIMIT %s OFFSET %s)"
        f" SELECT {', '.join('i.' + c for c in _ROW_COLUMNS.split(', '))}, r.score"
        f" FROM ranked AS r JOIN items AS i ON i.id = r.id"
        f" ORDER BY r.score DESC, r.occurred_at DESC, r.id DESC"
    )
    now_text = connection.ops.adapt_datetimefield_value(now or timezone.now())
    params = [*params, weight, weight, now_text, config["recency_half_life_days"], limit, offset]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [_hit(row, row[8]) for row in cursor.fetchall()]


SNIPPET_START, SNIPPET_END = snippets.START, snippets.END  # the web app turns them into <mark>
plain_snippet = snippets.plain


def search(query, *, allowed_sources, project=None, source=None, since=None, limit=None, now=None, offset=0,
           records_only=False, exhaustive=False):
    """Search the library: the fused ranking (docs/design.md "How search ranks") of the record and the original-text
    index (`library.ranking`), or with `records_only` exactly the record ranking (docs/design.md "The record ranking"),
    score for score.

    Returns a SearchResult whose hits carry `matched_in` and a snippet. A query with nothing
    to look up gives no results (`match` and `original_match` None). `offset` skips ranked
    results (the web app's pages): a search ranks at most `search.candidate_pool` results.
    `exhaustive` computes the same ranking by having FTS5 score every matching item (the
    reference the default is tested against; slower). Raises BadInput for a query past
    `terms.clean_query`'s caps, a bad `since` or `limit`.
    """
    limit = clamp_limit(limit, search_default_limit())
    offset = max(int(offset or 0), 0)
    query = terms.clean_query(query)
    record_expression = build_match_query(query)
    filters = reads.build(allowed_sources, project=project, source=source, since=since)
    if records_only:
        hits = _ranked(record_expression, filters, limit=limit, now=now, offset=offset)
        ids = [hit.id for hit in hits]
        record_snippets = _record_snippets(record_expression, ids) if ids else {}
        hits = [replace(hit, matched_in=(ranking.RECORD,), snippet=record_snippets.get(hit.id, "")) for hit in hits]
        return SearchResult(query=query, match=record_expression, hits=hits, records_only=True,
                            waiting=None if hits or offset else waiting(allowed_sources))
    depth = max(min(offset + limit, candidate_pool()), 0)
    fused = ranking.rank(query, filters, depth=depth, now=now, exhaustive=exhaustive)
    page = fused.rows[offset:offset + limit]
    by_id = _rows_by_id([row.id for row in page]) if page else {}
    hits = [replace(_hit(by_id[row.id], row.score), matched_in=row.matched_in) for row in page if row.id in by_id]
    return SearchResult(query=query, match=fused.record.shown if fused.record else None,
                        original_match=fused.original.shown if fused.original else None, newest=fused.newest,
                        hits=_explained(hits, query, record_expression, fused),
                        waiting=None if hits or offset else waiting(allowed_sources))


def waiting(allowed_sources):
    """Why a read of these sources finds nothing yet although sessions were uploaded to them
    (`library.ingest.scheduling.waiting`): one sentence, or None."""
    from library.ingest import scheduling

    return scheduling.waiting(allowed_sources)


def _rows_by_id(ids):
    """{item id: its result row} of these items."""
    marks = ", ".join("%s" for _ in ids)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_ROW_COLUMNS} FROM items AS i WHERE i.id IN ({marks})", list(ids))
        return {row[0]: row for row in cursor.fetchall()}


def _explained(hits, query, record_expression, ranked=None):
    """The hits with their snippets: an excerpt of the original where the original index
    found them, else the record's fragment (the record index's, for `record_expression`).
    `ranked`: the Ranking, whose original texts and windows of the query's terms are not read
    or scanned again."""
    if not hits:
        return hits
    with_original = [hit.id for hit in hits if ranking.ORIGINAL_TEXT in hit.matched_in]
    read, windows = (ranked.originals, ranked.windows) if ranked is not None else ({}, {})
    originals = {**ranking.originals_of([i for i in with_original if i not in read]), **read}
    words = terms.original_terms(query)
    excerpts = {item_id: snippets.excerpt(originals.get(item_id) or "", words, at=windows.get(item_id))
                for item_id in with_original}
    wanting = [hit.id for hit in hits if not excerpts.get(hit.id) and ranking.RECORD in hit.matched_in]
    record_snippets = _record_snippets(record_expression, wanting) if wanting else {}
    return [replace(hit, snippet=excerpts.get(hit.id) or record_snippets.get(hit.id, "")) for hit in hits]


def _record_snippets(expression, ids):
    """{item id: the record index's snippet of the item for the MATCH `expression`}."""
    if expression is None:
        return {}
    fts = indexes.RECORD_TABLE
    marks = ", ".join("%s" for _ in ids)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rowid, snippet({fts}, -1, %s, %s, '…', 64) FROM {fts} "
                       f"WHERE {fts} MATCH %s AND rowid IN ({marks})", [SNIPPET_START, SNIPPET_END, expression, *ids])
        return dict(cursor.fetchall())


# --- the words items hold (the first-prompt rule, docs/design.md "The first-prompt rule") ----------

_script_counts_cache = (None, None)   # (item change seq, script counts): counts change only when items do


def forget_script_counts():
    """Drop this process's script counts (a database rolled back under it: tests)."""
    global _script_counts_cache
    _script_counts_cache = (None, None)


def script_counts():
    """{script: how many items of the whole library are written in it} (`store.script_counts`),
    read again only after an item was written or deleted (every write is an item change)."""
    global _script_counts_cache
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT max(coalesce((SELECT max(seq) FROM {indexes.CHANGES}), 0), "
                       f"coalesce((SELECT seq FROM sqlite_sequence WHERE name = %s), 0))", [indexes.CHANGES])
        seq = cursor.fetchone()[0]
    seen, counts = _script_counts_cache
    if seen != seq or counts is None:
        counts = store.script_counts()
        _script_counts_cache = (seq, counts)
    return counts


def _word_expression(word):
    """A whole word (or a CJK two-character phrase) of the word indexes."""
    found = tokens.index_tokens(word)
    return tokens.phrase(found) if found else None


def items_with_words(words, *, at_most):
    """{word: ids of the items whose record or original holds it as a whole word} for each
    word held by at most `at_most[word]` items of the whole library; commoner words are left
    out. Each look-up reads at most `at_most[word] + 1` rows per index, so a common word costs
    no more than a rare one."""
    out = {}
    with connection.cursor() as cursor:
        for word in words:
            expression, most = _word_expression(word), at_most[word]
            if expression is None:
                continue
            ids = set()
            for table in (indexes.WORDS.table, indexes.ORIGINAL.table):
                cursor.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH %s LIMIT %s", [expression, most + 1])
                ids.update(row[0] for row in cursor.fetchall())
                if len(ids) > most:
                    break
            if ids and len(ids) <= most:
                out[word] = ids
    return out


def words_in_items(ids, words):
    """{item id: the words (of `words`) its record or original holds as whole words}."""
    out = {item_id: set() for item_id in ids}
    if not ids:
        return out
    marks = ", ".join("%s" for _ in ids)
    with connection.cursor() as cursor:
        for word in words:
            expression = _word_expression(word)
            if expression is None:
                continue
            for table in (indexes.WORDS.table, indexes.ORIGINAL.table):
                cursor.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH %s AND rowid IN ({marks})",
                               [expression, *ids])
                for (item_id,) in cursor.fetchall():
                    out[item_id].add(word)
    return out


def hits_for(ids, *, allowed_sources):
    """The rows of these items that the caller may read, in the order given."""
    filters = reads.build(allowed_sources)
    if filters.empty or not ids:
        return []
    marks = ", ".join("%s" for _ in ids)
    where = f"AND {filters.sql}" if filters.sql else ""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_ROW_COLUMNS} FROM items AS i WHERE i.id IN ({marks}) {where}",
                       [*ids, *filters.params])
        rows = {row[0]: row for row in cursor.fetchall()}
    return [_hit(rows[item_id]) for item_id in ids if item_id in rows]


# --- timeline -----------------------------------------------------------------------------

def timeline(*, allowed_sources, project=None, source=None, since=None, until=None, limit=None,
             exclude_id=None, offset=0):
    """Items newest first (ties: higher id first), filtered like search (docs/design.md "Timeline")."""
    limit = clamp_limit(limit, TIMELINE_DEFAULT_LIMIT)
    filters = reads.build(allowed_sources, project=project, source=source, since=since, until=until,
                       exclude_id=exclude_id)
    if filters.empty:
        return []
    where = f"WHERE {filters.sql}" if filters.sql else ""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_ROW_COLUMNS} FROM items AS i {where} "
                       "ORDER BY occurred_at DESC, id DESC LIMIT %s OFFSET %s",
                       [*filters.params, limit, max(int(offset or 0), 0)])
        return [_hit(row) for row in cursor.fetchall()]


def sources(*, allowed_sources):
    """Every source the caller may read with its item count, newest date and trust, most
    recent first (one query)."""
    filters = reads.build(allowed_sources)
    if filters.empty:
        return []
    where = f"WHERE {filters.sql}" if filters.sql else ""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT i.source, count(*), max(i.occurred_at), min(i.trust) FROM items AS i {where} "
                       f"GROUP BY i.source ORDER BY max(i.occurred_at) DESC, i.source", filters.params)
        return [{"source": name, "count": count, "latest": from_db(latest), "trust": trust}
                for name, count, latest, trust in cursor.fetchall()]


def projects(*, allowed_sources):
    """Every project with its item count and newest date, most recent first (one query)."""
    filters = reads.build(allowed_sources)
    if filters.empty:
        return []
    where = f"AND {filters.sql}" if filters.sql else ""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT i.project, count(*), max(i.occurred_at) FROM items AS i WHERE i.project IS NOT NULL "
                       f"{where} GROUP BY i.project ORDER BY max(i.occurred_at) DESC, i.project", filters.params)
        return [{"project": name, "count": count, "latest": from_db(latest)} for name, count, latest in cursor.fetchall()]


# --- items and later ------------------------------------------------------------------------

def _visible_item(item_id, allowed_sources):
    from library.models import Item

    if isinstance(item_id, bool) or not isinstance(item_id, int):
        raise BadInput(f"item id: {item_id!r} is not an integer")
    item = Item.objects.filter(pk=item_id).first()
    if item is None or not reads.is_visible(item.source, allowed_sources):
        raise NotFound(f"item {item_id} not found")
    return item


def get_item(item_id, *, allowed_sources, include_original=False):
    """Every field of the item (docs/design.md "Items") as a dict; `original` only on request.

    Raises NotFound for a missing item and for one outside the caller's sources alike.
    """
    return records.item_dict(_visible_item(item_id, allowed_sources), include_original=include_original)


def later(item_id, *, allowed_sources, query=None, limit=None, now=None):
    """Newer items on the same subject as this one (docs/design.md "Later"), as a LaterResult.

    1. Search `query` (or the item's title) within the item's project (or, without one, its
       source), at or after the item's time, 50 results by pure relevance.
    2. Drop the item; keep hits at >= 30 % of the best relevance (best measured with the item).
    3. Keep the 2 most relevant, fill up to `limit` with the newest of the rest.
    4. Newest first → matched_by "subject".
    5. Nothing left → the newest items after it in its project/source timeline,
       matched_by "project_timeline".
    Raises NotFound like get_item.
    """
    limit = clamp_limit(limit, LATER_DEFAULT_LIMIT)
    item = _visible_item(item_id, allowed_sources)
    scope = {"project": item.project} if item.project else {"source": item.source}
    subject = terms.clean_query(query) if query and query.strip() else item.title
    filters = reads.build(allowed_sources, since=item.occurred_at, **scope)
    hits = _ranked(build_match_query(subject), filters, limit=LATER_POOL, recency_weight=0.0, now=now)
    if hits:
        bar = LATER_MIN_SHARE * hits[0].score
        fair = [hit for hit in hits if hit.id != item.pk and hit.score >= bar]
        if fair:
            closest = fair[:LATER_CLOSEST]
            newest = sorted(fair[LATER_CLOSEST:], key=_newest_first)[: max(limit - len(closest), 0)]
            chosen = sorted(closest + newest, key=_newest_first)[:limit]
            return LaterResult(item_id=item.pk, matched_by=MATCHED_BY_SUBJECT, hits=chosen)
    context = timeline(allowed_sources=allowed_sources, since=item.occurred_at, limit=limit,
                       exclude_id=item.pk, **scope)
    return LaterResult(item_id=item.pk, matched_by=MATCHED_BY_TIMELINE, hits=context)


def _newest_first(hit):
    return (-hit.occurred_at.timestamp(), -hit.id)
