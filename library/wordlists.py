"""Impact-ordered lists of the common words of two word indexes (issue 15), kept beside them.

FTS5 ranks by scoring every row a term matches: a word that 20,000 items hold costs 20,000
BM25 evaluations (about 0.8 µs each) whatever the page asks for. So for each word more than
LIST_FLOOR items hold (and at most half of them: BM25 gives a word that common no weight),
this module keeps the LIST_LENGTH items where the word weighs most — the word's part of
BM25 without its idf, `f·(k1+1) / (f + k1·(1 − b + b·|D|/avgdl))`, f the column-weighted
count of the word in the item — in an index-ordered side table. The fused search reads a
common word's best items from it (a bounded read, however many items hold the word) and
scores only the rarer words through FTS5 (`library.search`). The lists are a cache of what
the index says: a missing list means the word is scored through FTS5 as before.

Two sets of lists, ORIGINAL and RECORD:

- ORIGINAL, of the original-text index: a word's list is the items holding that word.
- RECORD, of the record word index, with its column weights (`store.BM25_WEIGHTS`): the
  search looks a record word of three letters or more up as a prefix (`deploy` finds
  `deployment`), so a word's list is the items holding a word it begins — FTS5's own
  `"deploy"*`.

Each set has two tables, owned here and written only through `library.store` (which keeps
the indexes):

- `<index>_common` — one row per common word: `id`, `term` (as the index holds it), `held`
  (how many items hold it), and for a listed word `avgdl` (the average length its impacts
  were computed with) and `floor` (every item holding the word with a higher impact is in
  its list). A word held by more than half the library has no list (`avgdl` NULL); its row
  says how common it is without counting its postings.
- `<index>_lists` — `(word, impact, item_id)`, the impact quantised to 1/IMPACT_SCALE
  (primary key: a word's best items are one index range, read backwards), with an index on
  `item_id` so that a changed or deleted item leaves every list at once.

`refresh` (from `store.optimize`, daily, and `store.rebuild`) finds the common words through
the index's vocabulary (fts5vocab), builds missing lists from FTS5's own BM25 (exact), trims
long ones and drops words that are no longer common. Between refreshes, `add` puts new or
changed items in the lists they qualify for (tokenised here as `unicode61` does:
`terms.index_tokens`) and counts them in `held`; `forget` takes items out. (`held` is not
counted down when an item changes or goes: its old text is gone; the next refresh recounts.)
A word that becomes common between refreshes is scored through FTS5 until the next one. The
lists exist only for the `unicode61` tokenizer (a stemming or custom tokenizer would need
its own tokenisation here): with another, the tables stay empty and every word is scored
through FTS5.
"""

import logging
import math
from collections import Counter
from dataclasses import dataclass

from django.db import connections, transaction

logger = logging.getLogger(__name__)

LIST_FLOOR = 1_000      # a word more items hold than this is read through its list
LIST_LENGTH = 1_000     # the items kept per word: room to lose some between refreshes
LIST_READ = 500         # the items a search reads per word (bench/recall.py: the same recall as 1,000)
WEIGHTLESS_SHARE = 0.5  # a word more than this share of the library holds has no list (no weight)
IMPACT_SCALE = 10_000   # impacts (0 to k1+1, times a column weight) kept as integers
K1, B = 1.2, 0.75       # FTS5's bm25() constants
MIN_PREFIX = 3          # a record word of this many letters or more is a prefix (library.search)
BUILD_BATCH = 50        # lists built per transaction
LABEL = "common-word lists"


@dataclass(frozen=True)
class Lists:
    """The lists of one word index."""

    name: str        # "original" or "record"
    index: str       # the FTS5 table
    vocab: str       # its fts5vocab 'row' table
    columns: int     # indexed columns
    prefix: bool     # a word's list holds the items with a word it begins

    @property
    def common(self):
        return f"{self.index}_common"

    @property
    def table(self):
        return f"{self.index}_lists"

    @property
    def label(self):
        return f"{LABEL} ({self.name})"

    def weights(self):
        from library import store

        return store.BM25_WEIGHTS if self.columns > 1 else (1.0,)

    def expression(self, term):
        """The FTS5 expression whose BM25 a list holds."""
        return '"' + term.replace('"', '""') + '"' + ("*" if self.prefix else "")


# The names are store.ORIGINAL_TABLE / ORIGINAL_VOCAB and WORDS_TABLE / WORDS_VOCAB (store imports
# this module, so they are spelled here; tests/integration/test_word_lists.py checks they agree).
ORIGINAL = Lists("original", "items_original_fts", "items_original_vocab", 1, prefix=False)
RECORD = Lists("record", "items_words", "items_words_vocab", 5, prefix=True)
ALL = (ORIGINAL, RECORD)


def create(cursor, lists):
    """Create the two tables of a set of lists (idempotent)."""
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {lists.common} (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE, "
                   f"held INTEGER NOT NULL, avgdl REAL, floor INTEGER)")
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {lists.table} (word INTEGER NOT NULL, impact INTEGER NOT NULL, "
                   f"item_id INTEGER NOT NULL, PRIMARY KEY (word, impact, item_id)) WITHOUT ROWID")
    cursor.execute(f"CREATE INDEX IF NOT EXISTS {lists.table}_item ON {lists.table}(item_id)")


def drop(cursor, lists):
    cursor.execute(f"DROP TABLE IF EXISTS {lists.table}")
    cursor.execute(f"DROP TABLE IF EXISTS {lists.common}")


def clear(cursor, lists):
    cursor.execute(f"DELETE FROM {lists.table}")
    cursor.execute(f"DELETE FROM {lists.common}")


def supported(tokenizer):
    """Whether this module tokenises like `tokenizer` (FTS5 `unicode61`, default options)."""
    words = (tokenizer or "").split()
    return bool(words) and words[0] == "unicode61" and all(
        word in ("remove_diacritics", "0", "1", "2") for word in words[1:])


def exists(cursor, lists):
    cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [lists.common])
    return cursor.fetchone() is not None


def impact(weighted, length, avgdl):
    """A word's part of BM25 in one item, without its idf (FTS5's formula), quantised:
    `weighted` is its column-weighted count, `length` the item's tokens in all columns."""
    part = weighted * (K1 + 1) / (weighted + K1 * (1 - B + B * length / avgdl))
    return round(part * IMPACT_SCALE)


def idf(rows, held):
    """FTS5's idf for a word `held` by that many of `rows` rows (never below 1e-6)."""
    value = math.log((rows - held + 0.5) / (held + 0.5))
    return value if value > 0 else 1e-6


def averages(cursor, lists):
    """(rows, tokens) of an index as FTS5 counts them for BM25: its averages record (rowid 1
    of `_data`): the row count, then the token count of each column (summed)."""
    from library import store

    cursor.execute(f"SELECT block FROM {lists.index}_data WHERE id = 1")
    row = cursor.fetchone()
    if not row or not row[0]:
        return 0, 0
    rows, offset = store.varint(row[0], 0)
    tokens = 0
    for _column in range(lists.columns):
        count, offset = store.varint(row[0], offset)
        tokens += count
    return rows, tokens


# --- writes (from library.store, inside the items' transaction) ------------------------------------

def _counts(lists, columns, words):
    """({common term: column-weighted count}, tokens in all columns) of one item's indexed
    text (a tuple of column texts)."""
    from library import terms

    counts, length = Counter(), 0
    for text, weight in zip(columns, lists.weights(), strict=True):
        tokens = terms.index_tokens(text)
        length += len(tokens)
        if lists.prefix:
            for token, tf in Counter(tokens).items():
                for end in range(MIN_PREFIX, len(token) + 1):
                    if token[:end] in words:
                        counts[token[:end]] += weight * tf
        else:
            for token, tf in Counter(tokens).items():
                if token in words:
                    counts[token] += weight * tf
    return counts, length


def add(cursor, lists, rows):
    """Count new or changed items [(item id, (column texts…))] in the common words they hold
    and put them in the lists they qualify for. Nothing to do (and no tokenising) before any
    word is common."""
    if not rows or not exists(cursor, lists):
        return
    cursor.execute(f"SELECT term, id, avgdl, floor FROM {lists.common}")
    words = {term: (word, avgdl, floor) for term, word, avgdl, floor in cursor.fetchall()}
    if not words:
        return
    held, listed = Counter(), []
    for item_id, columns in rows:
        counts, length = _counts(lists, columns, words)
        for term, weighted in counts.items():
            word, avgdl, floor = words[term]
            held[word] += 1
            if avgdl is not None:
                value = impact(weighted, length, avgdl)
                if value > floor:
                    listed.append((word, value, item_id))
    if listed:
        cursor.executemany(f"INSERT OR REPLACE INTO {lists.table}(word, impact, item_id) VALUES (%s, %s, %s)", listed)
    if held:
        cursor.executemany(f"UPDATE {lists.common} SET held = held + %s WHERE id = %s",
                           [(count, word) for word, count in held.items()])


def forget(cursor, lists, ids):
    """Take these items out of every list of the set."""
    if ids and exists(cursor, lists):
        marks = ", ".join("%s" for _ in ids)
        cursor.execute(f"DELETE FROM {lists.table} WHERE item_id IN ({marks})", list(ids))


def stray_items(cursor, lists):
    """Ids the lists hold that no item has (for `store.check`)."""
    if not exists(cursor, lists):
        return []
    cursor.execute(f"SELECT DISTINCT item_id FROM {lists.table} WHERE item_id NOT IN (SELECT id FROM items) "
                   f"ORDER BY item_id")
    return [row[0] for row in cursor.fetchall()]


# --- refresh (from store.optimize and store.rebuild) --------------------------------------------------

def _build(cursor, lists, word, term, rows, tokens):
    """Fill one word's list from FTS5's BM25 (a query of that word alone: -idf × impact)."""
    expression = lists.expression(term)
    weights = "".join(f", {w:.1f}" for w in lists.weights()) if lists.columns > 1 else ""
    cursor.execute(f"SELECT count(*) FROM {lists.index} WHERE {lists.index} MATCH %s", [expression])
    held = cursor.fetchone()[0]
    weight = idf(rows, held)
    cursor.execute(f"SELECT rowid, bm25({lists.index}{weights}) AS score FROM {lists.index} "
                   f"WHERE {lists.index} MATCH %s ORDER BY score LIMIT %s", [expression, LIST_LENGTH])
    best = [(word, round(-score / weight * IMPACT_SCALE), item_id) for item_id, score in cursor.fetchall()]
    cursor.execute(f"DELETE FROM {lists.table} WHERE word = %s", [word])
    cursor.executemany(f"INSERT OR REPLACE INTO {lists.table}(word, impact, item_id) VALUES (%s, %s, %s)", best)
    floor = best[-1][1] if held > len(best) and best else -1
    cursor.execute(f"UPDATE {lists.common} SET held = %s, avgdl = %s, floor = %s WHERE id = %s",
                   [held, tokens / rows, floor, word])


def refresh(lists, using="default", progress=None):
    """Bring one set of lists in step with its index: list every word held by more than
    LIST_FLOOR items and at most half of them, drop the others, rebuild a list grown past
    twice LIST_LENGTH, recount `held`. The lists are built BUILD_BATCH words to a
    transaction, so writers wait for one batch, not the whole refresh. Returns {"words":
    listed words, "built": lists built now}. `progress(done, total)` is called per batch."""
    from library import store

    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        create(cursor, lists)
        if not supported(store.recorded_original_tokenizer(using)) or not store.table_exists(cursor, lists.vocab):
            clear(cursor, lists)
            return {"words": 0, "built": 0}
    # Reading the vocabulary walks the whole index (seconds at 100,000 items): outside the
    # write transaction, so that writers do not wait for it. A count it misses is the next
    # refresh's to correct.
    with connections[using].cursor() as cursor:
        rows, _tokens = averages(cursor, lists)
        cursor.execute(f"SELECT term, doc FROM {lists.vocab} WHERE doc > %s", [LIST_FLOOR])
        common = dict(cursor.fetchall())
    if lists.prefix:   # a word too short to be looked up as a prefix has no list
        common = {term: doc for term, doc in common.items() if len(term) >= MIN_PREFIX}
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute(f"SELECT term, id, avgdl FROM {lists.common}")
        known = {term: (word, avgdl) for term, word, avgdl in cursor.fetchall()}
        gone = [known[term][0] for term in known if term not in common]
        for start in range(0, len(gone), 500):
            chunk = gone[start:start + 500]
            marks = ", ".join("%s" for _ in chunk)
            cursor.execute(f"DELETE FROM {lists.table} WHERE word IN ({marks})", chunk)
            cursor.execute(f"DELETE FROM {lists.common} WHERE id IN ({marks})", chunk)
        cursor.execute(f"SELECT word, count(*) FROM {lists.table} GROUP BY word")
        lengths = dict(cursor.fetchall())
        wanted = []
        for term, doc in common.items():
            if term in known:
                word = known[term][0]
                cursor.execute(f"UPDATE {lists.common} SET held = %s WHERE id = %s", [doc, word])
            else:
                cursor.execute(f"INSERT INTO {lists.common}(term, held) VALUES (%s, %s)", [term, doc])
                word = cursor.lastrowid
            if doc > WEIGHTLESS_SHARE * rows:
                cursor.execute(f"DELETE FROM {lists.table} WHERE word = %s", [word])
                cursor.execute(f"UPDATE {lists.common} SET avgdl = NULL, floor = NULL WHERE id = %s", [word])
            elif term not in known or known[term][1] is None or lengths.get(word, 0) > 2 * LIST_LENGTH:
                wanted.append((word, term))
    for start in range(0, len(wanted), BUILD_BATCH):
        with transaction.atomic(using=using), connections[using].cursor() as cursor:
            rows, tokens = averages(cursor, lists)
            for word, term in wanted[start:start + BUILD_BATCH]:
                _build(cursor, lists, word, term, rows, tokens)
        if progress:
            progress(min(start + BUILD_BATCH, len(wanted)), len(wanted))
    listed = sum(1 for doc in common.values() if doc <= WEIGHTLESS_SHARE * rows)
    logger.info("word lists refreshed index=%s listed=%d built=%d dropped=%d", lists.index, listed, len(wanted),
                len(gone))
    return {"words": listed, "built": len(wanted)}


def refresh_all(using="default", progress=None):
    """`refresh` both sets; {"words": …, "built": …} summed. `progress(label, done, total)`."""
    total = {"words": 0, "built": 0}
    for lists in ALL:
        step = (lambda done, count, label=lists.label: progress(label, done, count)) if progress else None
        report = refresh(lists, using, step)
        total = {key: total[key] + report[key] for key in total}
    return total


# --- reads (library.search) ------------------------------------------------------------------------

def index_rows(lists, using="default"):
    """How many rows FTS5 counts in the index (the `N` of its idf)."""
    with connections[using].cursor() as cursor:
        return averages(cursor, lists)[0]


def common_words(lists, tokens, using="default"):
    """{token: (word id, held, listed)} for the tokens that are common words."""
    tokens = list(dict.fromkeys(tokens))
    if not tokens:
        return {}
    marks = ", ".join("%s" for _ in tokens)
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT term, id, held, avgdl IS NOT NULL FROM {lists.common} WHERE term IN ({marks})", tokens)
        return {term: (word, held, bool(listed)) for term, word, held, listed in cursor.fetchall()}
