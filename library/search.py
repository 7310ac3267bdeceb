"""The read side: `build_match_query`, `search`, `later`, `timeline`, `get_item` (SPEC §7–9).

One implementation for every adapter: the CLI, the JSON API, MCP and the web pages call
these functions and only render what they return. Each takes the caller's allowed-source
globs (`ALL_SOURCES` for people on the command line); a source outside them does not exist
for that caller. No model is involved: same library + same query → same answer.

User text reaches FTS5 only through `build_match_query`, which quotes every term, and
always as a bound parameter.
"""

from dataclasses import dataclass, replace
from datetime import datetime
from fnmatch import fnmatchcase
from operator import itemgetter

from django.conf import settings
from django.db import connection
from django.utils import timezone

from library import meaning, records, snippets, store, terms, wordlists
from library.errors import BadInput, NotFound
from library.timeutil import from_db, iso, parse_when

ALL_SOURCES = ("*",)
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
    """One result row (SPEC §7). `score` is None for rows listed by date, not relevance.

    Search results also say where the query matched (`matched_in`: "record" and/or
    "original", SPEC §7a) and carry a `snippet` showing why: an excerpt of the original
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
    match: str | None               # the record index's MATCH expression (None: nothing to look up)
    hits: list
    original_match: str | None = None  # the original-text index's (None in records-only mode)
    records_only: bool = False
    newest: bool = False               # every term was common: the newest matches, by date

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


# --- query building: library.terms (re-exported here, where callers have always found it) ----

split_terms = terms.split_terms
build_match_query = terms.build_match_query

# --- the fused search's first stage (issue 15) -------------------------------------------------
#
# Both lists of the fused search come from word indexes: the record through `items_words`
# (each word looked up as the words it begins, `continu` → `continuous`, much as SPEC §7's
# trigram index matches it), what was said through `items_original_fts`; for both, the common
# words of questions are dropped (`terms.original_terms`). Counting the items that hold a word
# stops at the limit that matters (`store.held_by`), so a common word costs little to count.
#
# In the record list, a term that many items hold makes FTS5 score every row that holds it
# and changes little of the order. So, in a library of more than COMMON_FLOOR / RECORD_SHARE
# items (20,000), the record list ranks by the rarest terms only, while the items holding
# them number at most RECORD_SHARE of the library together; when even the rarest term is
# past that, the list holds the newest items with any term (`newest`), and when the rare
# terms fill less than the pool, the newest items holding a term left out follow (`filler`).
# The original-text list reads a word that more than `wordlists.LIST_FLOOR` items hold from
# that word's impact-ordered list: its LIST_READ best items with their part of BM25, kept
# beside the index (`library.wordlists`), so a common word costs one bounded index range
# instead of a BM25 evaluation per item holding it; FTS5 scores the rarer words; a word more
# than half the library holds is left out (BM25 gives it no weight). `search.
# original_common_share` (a share below 1) adds the record list's budget for the words FTS5
# still scores. bench/recall.py measured these at 100,000 items (`--large`), bench/search.py
# what each costs in time.

RECORD_SHARE = 0.05
COMMON_FLOOR = 1_000    # a term fewer items hold is never left out: scoring it is cheap,
WEIGHTLESS_SHARE = 0.5  # unless more than half the items hold it: then BM25 gives it no weight
# A phrase of common words is read from its words' lists: FTS5 would seek through their whole
# posting lists to find it (a query of "uses the" took 126 ms at 100,000 items). bench/recall.py
# measured what looking it up as a phrase would give back: about one point of recall@1.
PHRASES_AS_WORDS = True
MIN_PREFIX = wordlists.MIN_PREFIX   # a record word of 3 letters or more is looked up as a prefix


def original_share():
    """The share of the library the original-text list may score (1.0: no budget)."""
    return _search_config()["original_common_share"]


@dataclass(frozen=True)
class Lookup:
    """What one index of the fused search is asked: `match` (None: nothing), whether every
    term was common (`newest`: the newest matching items, unranked), and the common terms
    left out (`filler`)."""

    table: str
    match: str | None
    newest: bool = False
    weights: str = ""
    filler: str | None = None   # the common terms left out: their newest items fill a short list
    held: bool = True           # some item holds one of the terms
    listed: tuple = ()          # ((word id, idf), ...): common words read from their lists
    listed_terms: tuple = ()    # those words' expressions
    lists_table: str = ""       # where their lists are (library.wordlists)

    @property
    def scores(self):
        """FTS5 scores its `match` by BM25."""
        return self.match is not None and self.held and not self.newest

    @property
    def ranks(self):
        """It ranks items by BM25 (not: nothing to look up, no item holds a term, newest)."""
        return self.scores or bool(self.listed)

    @property
    def shown(self):
        """Every term it looks up, as one expression (None: nothing)."""
        return " OR ".join(part for part in (self.match, *self.listed_terms) if part) or None


def _phrase(tokens, prefix=False):
    return '"' + " ".join(tokens) + '"' + ("*" if prefix else "")


def _loose(tokens, expression):
    """What lists the newest items holding a term that is left out (`filler`, `newest`): a
    phrase as any of its words. Every word of a phrase left out is held by many items, and
    finding the phrase newest first would seek through their posting lists position by
    position (a filtered query of "from the" took 220 ms at 100,000 items); the items listed
    rank after every scored one anyway."""
    return expression if len(tokens) < 2 else " OR ".join(_phrase([token]) for token in tokens)


def _kept(table, counted, size, share, weights="", loose=None):
    """A Lookup of (expression, item count) pairs, the counts exact up to `counted_limit`.

    The terms that rank: the rarest, then the next rarest while all those kept are held by
    at most `scored_limit` items together (BM25 scores each of those rows; no limit for a
    share of 1), leaving out a term more than half the library holds (no weight). A term no
    item holds stays in the expression: it costs nothing. When even the rarest is past the
    limit, or held by more than half the library and COMMON_FLOOR items (BM25 would score
    them all to rank by nothing), every term is looked up and the newest items listed
    (`newest`). The terms left out are the `filler`. `loose` maps an expression to the one
    that lists its newest holders (`_loose`; default: itself)."""
    loose = loose or {}
    counted = list(dict(counted).items())
    if not counted:
        return Lookup(table, None, weights=weights)
    budget = scored_limit(size, share)
    absent = [expr for expr, count in counted if not count]
    held = sorted((pair for pair in counted if pair[1]), key=lambda pair: pair[1])   # stable: equals in order
    if budget is None:
        budget = float("inf")
    if not held:
        return Lookup(table, " OR ".join(absent), weights=weights, held=False)
    if held[0][1] > budget or held[0][1] > max(WEIGHTLESS_SHARE * size, COMMON_FLOOR):
        return Lookup(table, " OR ".join([loose.get(expr, expr) for expr, _count in held] + absent), newest=True,
                      weights=weights)
    kept, total = [], 0
    for expr, count in held:
        if kept and (total + count > budget or count > WEIGHTLESS_SHARE * size):
            break
        kept.append(expr)
        total += count
    chosen = set(kept)
    left_out = [loose.get(expr, expr) for expr, count in counted if count and expr not in chosen]
    return Lookup(table, " OR ".join([expr for expr, _count in counted if expr in chosen] + absent), weights=weights,
                  filler=" OR ".join(left_out) or None)


def scored_limit(size, share):
    """How many rows BM25 may score for one index's terms in a library of `size` items, or
    None for no limit (a share of 1 or more)."""
    return None if share >= 1 else int(max(share * size, COMMON_FLOOR))


def counted_limit(size, share):
    """How far `_kept` needs each term's item count: past the budget, or past half the
    library without one."""
    budget = scored_limit(size, share)
    return budget if budget is not None else int(WEIGHTLESS_SHARE * size)


def record_lookup(text, size=None):
    """The record word index's Lookup for free text."""
    weights = ", " + ", ".join(f"{w:.1f}" for w in store.BM25_WEIGHTS)
    return _common_read(wordlists.RECORD, text, size, RECORD_SHARE, weights=weights)


def original_lookup(text, size=None):
    """The original-text index's Lookup for free text."""
    return _common_read(wordlists.ORIGINAL, text, size, original_share())


def _common_read(lists, text, size, share, weights=""):
    """The Lookup of one word index for free text, its common words read from their lists.

    A term all of whose words more than `wordlists.LIST_FLOOR` items hold is common: its
    words are read from their lists (each word's best items, weighed by its idf), leaving
    out those that more than half the library holds; a term whose words all are that common
    only fills (`filler`). In what was said, a phrase of common words is read as its words:
    FTS5 would seek through their whole posting lists to find it. In the record, a word of
    MIN_PREFIX letters or more is a prefix and its list is the prefix's; a phrase or a
    shorter word is scored by FTS5. FTS5 scores the other terms (`_lookup`, with the
    budget of `share`), and a common term whose words have no list yet (until the next
    `store.optimize`)."""
    size = store.indexed_items() if size is None else size
    words = [(word, terms.index_tokens(word)) for word in terms.original_terms(text)]
    if lists.prefix:   # the record: only words looked up as prefixes have lists
        eligible = {word for word, tokens in words if len(tokens) == 1 and len(tokens[0]) >= MIN_PREFIX}
    else:
        eligible = {word for word, tokens in words if tokens and (PHRASES_AS_WORDS or len(tokens) == 1)}
    common = wordlists.common_words(lists, [token for word, tokens in words if word in eligible for token in tokens])
    rows = wordlists.index_rows(lists) if common else 0
    rest, listed, listed_terms, left_out = [], {}, [], []
    for word, tokens in words:
        known = [common.get(token) for token in tokens]
        if word not in eligible or any(info is None or info[1] <= wordlists.LIST_FLOOR for info in known):
            rest.append((word, tokens))
            continue
        expression = _phrase(tokens, prefix=True) if lists.prefix else terms.quote_terms([word])
        weighing = [info for info in known if info[1] <= WEIGHTLESS_SHARE * rows]
        if not weighing:
            left_out.append(_loose(tokens, expression))
        elif all(info[2] for info in weighing):
            listed.update((info[0], wordlists.idf(rows, info[1])) for info in weighing)
            listed_terms.append(expression)
        else:
            rest.append((word, tokens))
    lookup = _lookup(lists.index, rest, size, share, prefixes=lists.prefix, weights=weights)
    if not listed and not left_out:
        return lookup
    if not listed and lookup.match is None:   # only words most items hold: list the newest
        return Lookup(lookup.table, " OR ".join(left_out), newest=True, weights=weights)
    filler = [part for part in (lookup.filler, *left_out) if part]
    if lookup.newest:   # the rest past the budget: they fill, the listed words rank
        filler.insert(0, lookup.match)
        lookup = replace(lookup, match=None, newest=False)
    return replace(lookup, filler=" OR ".join(filler) or None, listed=tuple(listed.items()),
                   listed_terms=tuple(listed_terms), lists_table=lists.table)


def _lookup(table, wanted, size, share, *, prefixes, weights=""):
    """The Lookup of one word index for the terms FTS5 scores, [(term, its tokens)] from
    `terms.original_terms` (common words of questions dropped, CJK as bigrams). A term of one token is that word or, with `prefixes`
    and MIN_PREFIX letters or more, every word it begins (`deploy` finds `deployment`,
    `continu` finds `continuous`, as the trigram record index would). A term of several
    tokens is a phrase, counted as held by as many items as its rarest word (an upper bound:
    counting a phrase costs its words' whole posting lists)."""
    def expression(word, tokens):
        if prefixes and len(tokens) == 1 and len(tokens[0]) >= MIN_PREFIX:
            return _phrase(tokens, prefix=True)
        return terms.quote_terms([word])

    asked = [(expression(word, tokens), tokens) for word, tokens in wanted if tokens]
    singles = [expr if len(tokens) == 1 else _phrase([token]) for expr, tokens in asked for token in tokens]
    counts = store.held_by(table, singles, counted_limit(size, share))
    counted = [(expr, counts[expr] if len(tokens) == 1 else min(counts[_phrase([t])] for t in tokens))
               for expr, tokens in asked]
    return _kept(table, counted, size, share, weights=weights,
                 loose={expr: _loose(tokens, expr) for expr, tokens in asked})


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


def visible_sources(allowed_sources):
    """The library's source names that these globs allow (case-sensitive), or None for all.

    A glob of exactly "*" short-cuts to None so the common case costs no query.
    """
    globs = list(allowed_sources or ())
    if "*" in globs:
        return None
    if not globs:
        return set()
    return {name for name in library_sources() if any(fnmatchcase(name, glob) for glob in globs)}


def library_sources():
    """Every distinct source name, found by skipping through the index (one probe per name)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH RECURSIVE s(name) AS ("
            " SELECT min(source) FROM items"
            " UNION ALL SELECT (SELECT min(source) FROM items WHERE source > s.name) FROM s"
            " WHERE s.name IS NOT NULL)"
            " SELECT name FROM s WHERE name IS NOT NULL"
        )
        return [row[0] for row in cursor.fetchall()]


def is_visible(source, allowed_sources):
    return any(fnmatchcase(source, glob) for glob in allowed_sources or ())


@dataclass(frozen=True)
class _Filters:
    """The WHERE conditions on `items` (alias i) shared by search, later and timeline."""

    sql: str
    params: list
    empty: bool = False  # nothing can match (a forbidden source, no allowed source)
    now: str | None = None  # the database's form of "now", for the recency decay


def _filters(allowed_sources, *, project=None, source=None, since=None, until=None, exclude_id=None):
    allowed = visible_sources(allowed_sources)
    conditions, params = [], []
    if source is not None:
        if allowed is not None and source not in allowed:
            return _Filters("", [], empty=True)
        conditions.append("i.source = %s")
        params.append(source)
    elif allowed is not None:
        if not allowed:
            return _Filters("", [], empty=True)
        names = sorted(allowed)
        conditions.append(f"i.source IN ({', '.join('%s' for _ in names)})")
        params.extend(names)
    if project is not None:
        conditions.append("i.project = %s")
        params.append(project)
    adapt = connection.ops.adapt_datetimefield_value
    if since is not None:
        conditions.append("i.occurred_at >= %s")
        params.append(adapt(parse_when(since, "since")))
    if until is not None:
        conditions.append("i.occurred_at < %s")
        params.append(adapt(parse_when(until, "until")))
    if exclude_id is not None:
        conditions.append("i.id <> %s")
        params.append(exclude_id)
    return _Filters(" AND ".join(conditions), params)


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

def _ranked(match, filters, *, limit, recency_weight=None, now=None, offset=0):
    """Stage 1 + stage 2: Hits sorted by score (ties: newer first, then higher id), from
    `offset` (pages of the web app; only the candidate pool is ever ranked)."""
    if match is None or filters.empty:
        return []
    config = _search_config()
    weight = config["recency_weight"] if recency_weight is None else recency_weight
    fts = store.FTS_TABLE
    weights = ", ".join(f"{w:.1f}" for w in store.BM25_WEIGHTS)
    matching, params = _matching(fts, match, filters, f"-bm25({fts}, {weights})", f"bm25({fts}, {weights})",
                                 config["candidate_pool"])
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
           records_only=False):
    """Search the library: SPEC §7a's fused ranking of the record and the original-text
    index, or with `records_only` exactly SPEC §7's record ranking, score for score.

    Returns a SearchResult whose hits carry `matched_in` and a snippet. A query with nothing
    to look up gives no results (`match` and `original_match` None). Raises BadInput for a
    query past `terms.clean_query`'s caps, a bad `since` or `limit`. `offset` skips ranked results (the web app's pages; only the
    candidate pools are ever ranked).
    """
    limit = clamp_limit(limit, _search_config()["default_limit"])
    offset = max(int(offset or 0), 0)
    query = terms.clean_query(query)
    match = build_match_query(query)
    filters = _filters(allowed_sources, project=project, source=source, since=since)
    if records_only:
        hits = _ranked(match, filters, limit=limit, now=now, offset=offset)
        ids = [hit.id for hit in hits]
        record_snippets = _record_snippets(match, ids) if ids else {}
        hits = [replace(hit, matched_in=(RECORD,), snippet=record_snippets.get(hit.id, "")) for hit in hits]
        return SearchResult(query=query, match=match, hits=hits, records_only=True)
    size = store.indexed_items()
    record, original = record_lookup(query, size), original_lookup(query, size)
    hits = _fused(record, original, filters, limit=limit, offset=offset, now=now, query=query)
    newest = (record.newest or original.newest) and not (record.ranks or original.ranks)
    return SearchResult(query=query, match=record.shown, original_match=original.shown, newest=newest,
                        hits=_explained(hits, query, match))


# --- the fused ranking (SPEC §7a) --------------------------------------------------------------
#
# Each index gives its best `candidate_pool` rows by BM25 (the filters in the same WHERE, read
# from the covering index as in `_ranked`), with each row's recency decay computed by SQLite.
# Each list's relevances are divided by that list's best, so that neither index dominates by
# the scale of its BM25 (an original of 60,000 characters scores far above a 600-character
# record), then weighted (`search.record_weight`, `search.original_weight`) and summed; the
# recency factor of stage 2 multiplies the sum. bench/recall.py measured this against
# reciprocal-rank fusion and against each index alone, on extractive and on model-written
# records (bench/RESULTS.md).

RECORD, ORIGINAL, MEANING = "record", "original", "meaning"


def _candidates(lookup, filters):
    """[(id, relevance, occurred_at, decay)] of one index's best rows (a Lookup), best first:
    by BM25; newest first and of relevance 0 when the lookup is `newest` (so that the other
    list's ranking, if it has one, comes first). When the terms that rank fill less than the
    pool, the newest items holding a common term follow, also of relevance 0: a page is never
    shorter for the terms left out."""
    if (lookup.match is None and not lookup.listed) or filters.empty:
        return []
    table, weights = lookup.table, lookup.weights
    if lookup.newest:
        return _listed(table, lookup.match, filters, "0.0", f"{table}.rowid DESC")
    if lookup.listed:
        rows = _with_lists(lookup, filters)
    else:
        rows = _listed(table, lookup.match, filters, f"-bm25({table}{weights})", f"bm25({table}{weights})")
    room = _search_config()["candidate_pool"] - len(rows)
    if lookup.filler and room > 0:
        held = {row[0] for row in rows}
        newest = _listed(table, lookup.filler, filters, "0.0", f"{table}.rowid DESC", limit=room + len(held))
        rows += [row for row in newest if row[0] not in held][:room]
    return rows


# Each candidate's recency decay, computed by SQLite on `items_filter` (alias i): params now,
# half-life.
_DECAY = "pow(0.5, max(julianday(%s) - julianday(i.occurred_at), 0.0) / %s)"


def _matching(table, match, filters, relevance, order, limit):
    """(sql, params): the best `limit` rows (id, relevance) of one MATCH in one order, with the
    filters in the same WHERE (read from the covering index `items_filter`)."""
    join = where = ""
    if filters.sql:
        join = f"CROSS JOIN items AS i INDEXED BY items_filter ON i.id = {table}.rowid"
        where = f"AND {filters.sql}"
    return (f"SELECT {table}.rowid AS id, {relevance} AS relevance FROM {table} {join}"
            f" WHERE {table} MATCH %s {where} ORDER BY {order} LIMIT %s", [match, *filters.params, limit])


def _listed(table, match, filters, relevance, order, limit=None):
    """The candidate rows of one MATCH in one order (`_matching`), with each row's recency
    decay."""
    config = _search_config()
    matching, params = _matching(table, match, filters, relevance, order, limit or config["candidate_pool"])
    sql = (f"WITH candidates AS ({matching})"
           f" SELECT c.id, c.relevance, CAST(i.occurred_at AS TEXT), {_DECAY}"   # text: only compared, never shown
           f" FROM candidates AS c JOIN items AS i INDEXED BY items_filter ON i.id = c.id")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, filters.now, config["recency_half_life_days"]])
        return cursor.fetchall()


def _with_lists(lookup, filters):
    """`_listed` for a Lookup with listed words: the best rows of FTS5's BM25 over the rarer
    words (`match`, filtered) and each listed word's best items with their part of BM25
    (`idf × impact`), summed per item, in one statement. An item outside a word's list gets
    nothing for that word: at most its list's floor, below every item listed."""
    config = _search_config()
    table, weights, pool = lookup.table, lookup.weights, config["candidate_pool"]
    parts, params = [], []
    if lookup.scores:
        matching, more = _matching(table, lookup.match, filters, f"-bm25({table}{weights})",
                                   f"bm25({table}{weights})", pool)
        parts.append(f"SELECT * FROM ({matching})")
        params += more
    for word, weight in lookup.listed:
        parts.append(f"SELECT * FROM (SELECT item_id AS id, impact * %s AS relevance FROM {lookup.lists_table}"
                     f" WHERE word = %s ORDER BY impact DESC LIMIT %s)")
        params += [weight / wordlists.IMPACT_SCALE, word, wordlists.LIST_READ]
    summed = f"SELECT id, sum(relevance) AS relevance FROM ({' UNION ALL '.join(parts)}) GROUP BY id"
    head = f"SELECT c.id, c.relevance, CAST(i.occurred_at AS TEXT), {_DECAY}"
    if filters.sql:   # the filters before the pool is cut: a listed item may fall outside them
        sql = (f"{head} FROM ({summed}) AS c JOIN items AS i INDEXED BY items_filter ON i.id = c.id"
               f" WHERE {filters.sql} ORDER BY c.relevance DESC LIMIT %s")
        params = [filters.now, config["recency_half_life_days"], *params, *filters.params, pool]
    else:
        sql = (f"{head} FROM ({summed} ORDER BY relevance DESC LIMIT %s) AS c"
               f" JOIN items AS i INDEXED BY items_filter ON i.id = c.id ORDER BY c.relevance DESC")
        params = [filters.now, config["recency_half_life_days"], *params, pool]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def fuse(record_rows, original_rows, *, record_weight, original_weight, recency_weight):
    """Combine two candidate lists (`_candidates` rows) into [(id, score, occurred_at,
    matched_in, factor)] sorted by score, ties newer first, then higher id; `factor` is the
    recency factor the relevance was multiplied by. Pure: bench/recall.py calls it too. (Run
    on every search over up to 2 × `candidate_pool` rows: written for speed.)"""
    fused = {}
    for rows, weight, names in ((record_rows, record_weight, (RECORD,)), (original_rows, original_weight, (ORIGINAL,))):
        best = max([row[1] for row in rows], default=0.0)
        for item_id, relevance, occurred_at, decay in rows:
            share = weight * relevance / best if best > 0 else 0.0
            entry = fused.get(item_id)
            if entry is None:
                fused[item_id] = [share, occurred_at, decay, names]
            else:
                entry[0] += share
                entry[3] += names
    keep = 1.0 - recency_weight
    ranked = [(item_id, total * (keep + recency_weight * decay), occurred_at, names, keep + recency_weight * decay)
              for item_id, (total, occurred_at, decay, names) in fused.items()]
    ranked.sort(key=_BY_SCORE, reverse=True)
    return ranked


_BY_SCORE = itemgetter(1, 2, 0)   # score, then newer, then higher id


def rerank(ranked, similarity, *, weight, depth):
    """`fuse` rows with the first `depth` re-ranked by meaning: each gains `weight` times its
    similarity (`similarity`: {id: cosine}) scaled from the lowest of them (0) to the highest
    (1), before the recency factor (a row without vectors gains nothing). `matched_in` gains
    "meaning" from `meaning.SHOWN` up. Only rows that the words ranked are re-ranked: the
    rows below `depth`, and those listed by date (relevance 0: the newest items holding a
    common word), stay as they are, below every row above, which only gained. Pure."""
    head = _judged(ranked, depth)
    depth = len(head)
    known = [similarity[row[0]] for row in head if row[0] in similarity]
    if not weight or len(known) < 2 or max(known) <= min(known):
        return ranked
    low, span = min(known), max(known) - min(known)
    out = []
    for item_id, score, occurred_at, names, factor in head:
        share = (similarity[item_id] - low) / span if item_id in similarity else 0.0
        names = (*names, MEANING) if share >= meaning.SHOWN else names
        out.append((item_id, score + weight * share * factor, occurred_at, names, factor))
    out.sort(key=_BY_SCORE, reverse=True)
    return out + ranked[depth:]


def _judged(ranked, depth):
    """The rows `rerank` may move: of the first `depth`, those the words ranked (relevance
    above 0; `ranked` is sorted by score, so they come first)."""
    return [row for row in ranked[:depth] if row[1] > 0]


def _fused(record, original, filters, *, limit, offset, now, query):
    """The page of fused hits of two Lookups, the best re-ranked by meaning (`rerank`); each
    hit's `matched_in` names the indexes that found it (held it among their best
    `candidate_pool` rows), and "meaning" when its text is among the candidates' closest to
    the query's meaning."""
    if filters.empty or (record.shown is None and original.shown is None):
        return []
    config = _search_config()
    filters = replace(filters, now=connection.ops.adapt_datetimefield_value(now or timezone.now()))
    if not config["original_weight"]:
        original = replace(original, match=None, listed=(), listed_terms=())
    if not config["record_weight"]:
        record = replace(record, match=None, listed=(), listed_terms=())
    # One after the other on this connection: with the common-word lists both look-ups cost a
    # few milliseconds, and a second thread for the original's (as before them) cost more CPU
    # than it saved time (bench: 8.5 against 7.0 ms of CPU per search at 100,000 items).
    record_rows = _candidates(record, filters)
    original_rows = _candidates(original, filters)
    ranked = fuse(record_rows, original_rows, record_weight=config["record_weight"],
                  original_weight=config["original_weight"], recency_weight=config["recency_weight"])
    weight = config["meaning_weight"]
    head = _judged(ranked, meaning.RERANK_DEPTH) if weight else []
    if len(head) > 1 and meaning.applies(query):   # one row has nothing to be re-ranked against
        ranked = rerank(ranked, meaning.similarities(query, [row[0] for row in head]), weight=weight,
                        depth=meaning.RERANK_DEPTH)
    page = ranked[offset:offset + limit]
    if not page:
        return []
    rows = _rows([row[0] for row in page])
    return [replace(_hit(rows[item_id], score), matched_in=names) for item_id, score, _at, names, _factor in page]


def _rows(ids):
    marks = ", ".join("%s" for _ in ids)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_ROW_COLUMNS} FROM items AS i WHERE i.id IN ({marks})", list(ids))
        return {row[0]: row for row in cursor.fetchall()}


def _explained(hits, query, match):
    """The hits with their snippets: an excerpt of the original where the original index
    found them, else the record's fragment."""
    if not hits:
        return hits
    with_original = [hit.id for hit in hits if ORIGINAL in hit.matched_in]
    originals = _originals(with_original) if with_original else {}
    words = terms.original_terms(query)
    excerpts = {item_id: snippets.excerpt(originals.get(item_id, ""), words) for item_id in with_original}
    wanting = [hit.id for hit in hits if not excerpts.get(hit.id) and RECORD in hit.matched_in]
    record_snippets = _record_snippets(match, wanting) if wanting else {}
    return [replace(hit, snippet=excerpts.get(hit.id) or record_snippets.get(hit.id, "")) for hit in hits]


def _originals(ids):
    marks = ", ".join("%s" for _ in ids)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, original FROM items WHERE id IN ({marks})", ids)
        return dict(cursor.fetchall())


def _record_snippets(match, ids):
    if match is None:
        return {}
    fts = store.FTS_TABLE
    marks = ", ".join("%s" for _ in ids)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rowid, snippet({fts}, -1, %s, %s, '…', 64) FROM {fts} "
                       f"WHERE {fts} MATCH %s AND rowid IN ({marks})", [SNIPPET_START, SNIPPET_END, match, *ids])
        return dict(cursor.fetchall())


# --- rare words (the first-prompt rule of SPEC §13 "Precision") --------------------------------

def library_size():
    """How many items the library holds (all sources)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM items")
        return cursor.fetchone()[0]


def items_with_words(words, *, at_most):
    """{word: item ids whose record or original holds it} for each word found in at most
    `at_most` items of the whole library; commoner words are left out. Each look-up reads
    at most `at_most + 1` rows per index, so a common word costs no more than a rare one."""
    out = {}
    with connection.cursor() as cursor:
        for word in words:
            ids = set()
            for table, match in ((store.FTS_TABLE, build_match_query(word)),
                                 (store.ORIGINAL_TABLE, terms.build_original_query(f'"{word}"'))):
                if match is None:
                    continue
                cursor.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH %s LIMIT %s", [match, at_most + 1])
                ids.update(row[0] for row in cursor.fetchall())
                if len(ids) > at_most:
                    break
            if ids and len(ids) <= at_most:
                out[word] = ids
    return out


def hits_for(ids, *, allowed_sources):
    """The rows of these items that the caller may read, in the order given."""
    filters = _filters(allowed_sources)
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
    """Items newest first (ties: higher id first), filtered like search (SPEC §9)."""
    limit = clamp_limit(limit, TIMELINE_DEFAULT_LIMIT)
    filters = _filters(allowed_sources, project=project, source=source, since=since, until=until,
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
    filters = _filters(allowed_sources)
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
    filters = _filters(allowed_sources)
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
    if item is None or not is_visible(item.source, allowed_sources):
        raise NotFound(f"item {item_id} not found")
    return item


def get_item(item_id, *, allowed_sources, include_original=False):
    """Every field of the item (SPEC §1) as a dict; `original` only on request.

    Raises NotFound for a missing item and for one outside the caller's sources alike.
    """
    return records.item_dict(_visible_item(item_id, allowed_sources), include_original=include_original)


def later(item_id, *, allowed_sources, query=None, limit=None, now=None):
    """Newer items on the same subject as this one (SPEC §8), as a LaterResult.

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
    words = terms.clean_query(query) if query and query.strip() else item.title
    filters = _filters(allowed_sources, since=item.occurred_at, **scope)
    hits = _ranked(build_match_query(words), filters, limit=LATER_POOL, recency_weight=0.0, now=now)
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
