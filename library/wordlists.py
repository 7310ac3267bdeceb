"""Impact-ordered lists of the original-text index's common words (issue 15), kept beside it.

FTS5 ranks by scoring every row a term matches: a word that 20,000 originals hold costs
20,000 BM25 evaluations (about 0.8 µs each) whatever the page asks for. So for each word more
than LIST_FLOOR items hold (and at most half of them: BM25 gives a word that common no
weight), this module keeps the LIST_LENGTH items where the word weighs most — the term's part
of BM25 without its idf, `tf·(k1+1) / (tf + k1·(1 − b + b·|D|/avgdl))` — in an
index-ordered side table. The fused search reads a common word's best items from it (a
bounded read, however many items hold the word) and scores only the rarer words through FTS5
(`library.search`). The lists are a cache of what the index says: a missing list means the
word is scored through FTS5 as before, never a wrong answer.

Two tables, owned here and written only through `library.store` (which keeps the indexes):

- `items_original_common` — one row per common word: `id`, `term` (as the index holds it),
  `held` (how many items hold it), and for a listed word `avgdl` (the average original
  length its impacts were computed with) and `floor` (every item holding the word with a
  higher impact is in its list). A word held by more than half the library has no list
  (`avgdl` NULL); its row says how common it is without counting its postings.
- `items_original_lists` — `(word, impact, item_id)`, the impact quantised to 1/IMPACT_SCALE
  (primary key: a word's best items are one index range, read backwards), with an index on
  `item_id` so that a deleted item leaves every list at once.

`refresh` (from `store.optimize`, daily, and `store.rebuild`) finds the common words through
the index's vocabulary, builds missing lists from FTS5's own BM25 (exact), trims long ones
and drops words that are no longer common. Between refreshes, `add` puts new originals in the
lists they qualify for (tokenised here as `unicode61` does: `terms.index_tokens`) and counts
them in `held`; `forget` takes items out. A word that becomes common between refreshes is
scored through FTS5 until the next one. The lists exist only for the `unicode61` tokenizer
(a stemming or custom tokenizer would need its own tokenisation here): with another, the
tables stay empty and the search scores every word through FTS5.
"""

import logging
import math
from collections import Counter

from django.db import connections

logger = logging.getLogger(__name__)

COMMON_TABLE = "items_original_common"
LISTS_TABLE = "items_original_lists"
LIST_FLOOR = 1_000      # a word more items hold than this is read through its list
LIST_LENGTH = 1_000     # the items kept per word: five candidate pools
WEIGHTLESS_SHARE = 0.5  # a word more than this share of the library holds has no list (no weight)
IMPACT_SCALE = 10_000   # impacts (0 to k1+1) kept as integers: two bytes a row
K1, B = 1.2, 0.75       # FTS5's bm25() constants
LABEL = "common-word lists"
BUILD_BATCH = 50        # lists built per transaction


def create(cursor):
    """Create the two tables (idempotent)."""
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {COMMON_TABLE} (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE, "
                   f"held INTEGER NOT NULL, avgdl REAL, floor INTEGER)")
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {LISTS_TABLE} (word INTEGER NOT NULL, impact INTEGER NOT NULL, "
                   f"item_id INTEGER NOT NULL, PRIMARY KEY (word, impact, item_id)) WITHOUT ROWID")
    cursor.execute(f"CREATE INDEX IF NOT EXISTS {LISTS_TABLE}_item ON {LISTS_TABLE}(item_id)")


def drop(cursor):
    cursor.execute(f"DROP TABLE IF EXISTS {LISTS_TABLE}")
    cursor.execute(f"DROP TABLE IF EXISTS {COMMON_TABLE}")


def clear(cursor):
    cursor.execute(f"DELETE FROM {LISTS_TABLE}")
    cursor.execute(f"DELETE FROM {COMMON_TABLE}")


def supported(tokenizer):
    """Whether this module tokenises like `tokenizer` (FTS5 `unicode61`, default options)."""
    words = (tokenizer or "").split()
    return bool(words) and words[0] == "unicode61" and all(
        word in ("remove_diacritics", "0", "1", "2") for word in words[1:])


def exists(cursor):
    cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [COMMON_TABLE])
    return cursor.fetchone() is not None


def impact(tf, length, avgdl):
    """A word's part of BM25 in one original, without its idf (FTS5's formula), quantised."""
    part = tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avgdl))
    return round(part * IMPACT_SCALE)


def idf(rows, held):
    """FTS5's idf for a word `held` by that many of `rows` rows (never below 1e-6)."""
    value = math.log((rows - held + 0.5) / (held + 0.5))
    return value if value > 0 else 1e-6


def averages(cursor):
    """(rows, tokens) of the original-text index as FTS5 counts them for BM25: its averages
    record (rowid 1 of `_data`): the row count, then the token count of its one column."""
    from library import store

    cursor.execute(f"SELECT block FROM {store.ORIGINAL_TABLE}_data WHERE id = 1")
    row = cursor.fetchone()
    if not row or not row[0]:
        return 0, 0
    rows, offset = store.varint(row[0], 0)
    tokens, _ = store.varint(row[0], offset)
    return rows, tokens


# --- writes (from library.store, inside the items' transaction) ------------------------------------

def _words(cursor):
    cursor.execute(f"SELECT term, id, avgdl, floor FROM {COMMON_TABLE}")
    return {term: (word, avgdl, floor) for term, word, avgdl, floor in cursor.fetchall()}


def add(cursor, rows):
    """Count new originals [(item id, indexed text)] in the common words they hold and put
    them in the lists they qualify for. Nothing to do (and no tokenising) before any word is
    common."""
    from library import terms

    if not rows or not exists(cursor):
        return
    words = _words(cursor)
    if not words:
        return
    held, listed = Counter(), []
    for item_id, text in rows:
        tokens = terms.index_tokens(text)
        length = len(tokens)
        for term, tf in Counter(tokens).items():
            known = words.get(term)
            if known is None:
                continue
            word, avgdl, floor = known
            held[word] += 1
            if avgdl is not None:
                value = impact(tf, length, avgdl)
                if value > floor:
                    listed.append((word, value, item_id))
    if listed:
        cursor.executemany(f"INSERT OR REPLACE INTO {LISTS_TABLE}(word, impact, item_id) VALUES (%s, %s, %s)", listed)
    if held:
        cursor.executemany(f"UPDATE {COMMON_TABLE} SET held = held + %s WHERE id = %s",
                           [(count, word) for word, count in held.items()])


def forget(cursor, ids):
    """Take these items out of every list. (`held` is not counted down: the text is gone;
    the next `refresh` recounts.)"""
    if ids and exists(cursor):
        marks = ", ".join("%s" for _ in ids)
        cursor.execute(f"DELETE FROM {LISTS_TABLE} WHERE item_id IN ({marks})", list(ids))


def stray_items(cursor):
    """Ids the lists hold that no item has (for `store.check`)."""
    if not exists(cursor):
        return []
    cursor.execute(f"SELECT DISTINCT item_id FROM {LISTS_TABLE} WHERE item_id NOT IN (SELECT id FROM items) "
                   f"ORDER BY item_id")
    return [row[0] for row in cursor.fetchall()]


# --- refresh (from store.optimize and store.rebuild) --------------------------------------------------

def _build(cursor, word, term, rows, tokens):
    """Fill one word's list from FTS5's BM25 (a query of that word alone: -idf × impact)."""
    from library import store

    table = store.ORIGINAL_TABLE
    phrase = '"' + term.replace('"', '""') + '"'
    cursor.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH %s", [phrase])
    held = cursor.fetchone()[0]
    weight = idf(rows, held)
    cursor.execute(f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH %s ORDER BY rank LIMIT %s",
                   [phrase, LIST_LENGTH])
    best = [(word, round(-score / weight * IMPACT_SCALE), item_id) for item_id, score in cursor.fetchall()]
    cursor.execute(f"DELETE FROM {LISTS_TABLE} WHERE word = %s", [word])
    cursor.executemany(f"INSERT OR REPLACE INTO {LISTS_TABLE}(word, impact, item_id) VALUES (%s, %s, %s)", best)
    floor = best[-1][1] if held > len(best) and best else -1
    cursor.execute(f"UPDATE {COMMON_TABLE} SET held = %s, avgdl = %s, floor = %s WHERE id = %s",
                   [held, tokens / rows, floor, word])


def refresh(using="default", progress=None):
    """Bring the lists in step with the original-text index: list every word held by more
    than LIST_FLOOR items and at most half of them, drop the others, rebuild a list grown
    past twice LIST_LENGTH, recount `held`. The lists are built BUILD_BATCH words to a
    transaction, so writers wait for one batch, not the whole refresh. Returns {"words":
    listed words, "built": lists built now}. `progress(done, total)` is called per batch."""
    from django.db import transaction

    from library import store

    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        create(cursor)
        if not supported(store.recorded_original_tokenizer(using)):
            clear(cursor)
            return {"words": 0, "built": 0}
        rows, _tokens = averages(cursor)
        cursor.execute(f"SELECT term, doc FROM {store.ORIGINAL_VOCAB} WHERE doc > %s", [LIST_FLOOR])
        common = dict(cursor.fetchall())
        cursor.execute(f"SELECT term, id, avgdl FROM {COMMON_TABLE}")
        known = {term: (word, avgdl) for term, word, avgdl in cursor.fetchall()}
        gone = [known[term][0] for term in known if term not in common]
        for start in range(0, len(gone), 500):
            chunk = gone[start:start + 500]
            marks = ", ".join("%s" for _ in chunk)
            cursor.execute(f"DELETE FROM {LISTS_TABLE} WHERE word IN ({marks})", chunk)
            cursor.execute(f"DELETE FROM {COMMON_TABLE} WHERE id IN ({marks})", chunk)
        cursor.execute(f"SELECT word, count(*) FROM {LISTS_TABLE} GROUP BY word")
        lengths = dict(cursor.fetchall())
        wanted = []
        for term, doc in common.items():
            if term in known:
                word = known[term][0]
                cursor.execute(f"UPDATE {COMMON_TABLE} SET held = %s WHERE id = %s", [doc, word])
            else:
                cursor.execute(f"INSERT INTO {COMMON_TABLE}(term, held) VALUES (%s, %s)", [term, doc])
                word = cursor.lastrowid
            if doc > WEIGHTLESS_SHARE * rows:
                cursor.execute(f"DELETE FROM {LISTS_TABLE} WHERE word = %s", [word])
                cursor.execute(f"UPDATE {COMMON_TABLE} SET avgdl = NULL, floor = NULL WHERE id = %s", [word])
            elif term not in known or known[term][1] is None or lengths.get(word, 0) > 2 * LIST_LENGTH:
                wanted.append((word, term))
    for start in range(0, len(wanted), BUILD_BATCH):
        with transaction.atomic(using=using), connections[using].cursor() as cursor:
            rows, tokens = averages(cursor)
            for word, term in wanted[start:start + BUILD_BATCH]:
                _build(cursor, word, term, rows, tokens)
        if progress:
            progress(min(start + BUILD_BATCH, len(wanted)), len(wanted))
    listed = sum(1 for doc in common.values() if doc <= WEIGHTLESS_SHARE * rows)
    logger.info("word lists refreshed listed=%d built=%d dropped=%d", listed, len(wanted), len(gone))
    return {"words": listed, "built": len(wanted)}


# --- reads (library.search) ------------------------------------------------------------------------

def index_rows(using="default"):
    """How many rows FTS5 counts in the original-text index (the `N` of its idf)."""
    with connections[using].cursor() as cursor:
        return averages(cursor)[0]


def common_words(tokens, using="default"):
    """{token: (word id, held, listed)} for the tokens that are common words."""
    tokens = list(dict.fromkeys(tokens))
    if not tokens:
        return {}
    marks = ", ".join("%s" for _ in tokens)
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT term, id, held, avgdl IS NOT NULL FROM {COMMON_TABLE} WHERE term IN ({marks})", tokens)
        return {term: (word, held, bool(listed)) for term, word, held, listed in cursor.fetchall()}
