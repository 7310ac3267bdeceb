"""The full-text indexes of items: the only code that writes `items_fts`, `items_words` and
`items_original_fts` (their names and shapes: `library.indexes`).

Three FTS5 tables, rowid = item id, all kept in step with the items by this module alone:

- `items_fts` — the record (docs/design.md "The indexes"): columns `title, summary, questions, atoms, project`.
  Questions are joined with "\\n", atoms' texts with "\\n" (kinds are not indexed), a missing
  project is "". Those exact strings matter: BM25 counts tokens, so the index must hold
  exactly them. Tokenizer `storage.tokenizer` (trigram by default).
- `items_original_fts` — what was said (docs/design.md "The indexes"): the item's redacted `original`, with a
  word tokenizer (`storage.original_tokenizer`). Contentless (the text already lives in
  `items.original`; a copy would double the library), with `contentless_delete` so rows can
  be replaced, and one stored column, `digest`, the first 16 hex digits of the sha256 of the
  original it indexes: that lets `check` see drift without the text, and lets a write that
  leaves the original alone skip re-tokenising tens of kilobytes. Chinese, Japanese and
  Korean characters are indexed one by one (`tokens.index_text`); the read side matches
  them as two-character phrases.
- `items_words` — the record again, the same five columns and text, with the word tokenizer
  of the original-text index: the fused search reads the record through it. Contentless like
  the original-text index, with a stored `digest` of the record text it indexes.

Beside them, `items_scripts` (`item_id`, `scripts`): the scripts each item is written in
(`tokens.scripts_of` of its title, summary and original), so that the first-prompt rule can
count a word's rarity among the items of its own script (`script_counts`).

The same calls keep, beside the two word indexes, the postings of their common terms
(`library.postings`) and the item vectors of the search by meaning (`library.meaning`), and
log every item write in `item_changes` (the seq the postings and the search's item catalog
follow, `library.catalog`).

Writers call `sync_items` / `sync_ids` / `forget` inside the transaction that changes the
items (the `Item` model and its queryset do this for every ORM write). `rebuild` recreates
the tables with the configured tokenizers, `check` compares them with the items and runs
FTS5's own integrity check, `optimize` merges their segments and refreshes the postings.
The read side (`library.search`, `library.ranking`) only reads the tables.
"""

import hashlib
import logging
import re
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DatabaseError, connections, transaction

from library import indexes, meaning, postings
from library.indexes import CHANGES, RECORD_COLUMNS, RECORD_TABLE
from library.tokens import SCRIPTS, index_text, scripts_of

logger = logging.getLogger(__name__)

SCRIPTS_TABLE = "items_scripts"
_BATCH = 500


def configured_tokenizer():
    return settings.JEZERO["storage"]["tokenizer"]


def configured_original_tokenizer():
    return settings.JEZERO["storage"]["original_tokenizer"]


def min_term_length(tokenizer=None):
    """3 for a trigram tokenizer (it cannot look up fewer characters), else 1."""
    words = (tokenizer or configured_tokenizer()).split()
    return 3 if "trigram" in words else 1


def fts_row(item):
    """The exact text indexed for an item's record, in column order."""
    questions = "\n".join(item.questions or [])
    atoms = "\n".join(atom["text"] for atom in (item.atoms or []))
    return (item.title, item.summary, questions, atoms, item.project or "")


def words_row(item):
    """The record text the word index holds, in column order (CJK characters spaced)."""
    return tuple(index_text(value) for value in fts_row(item))


def record_digest(item):
    """What the word index records of the record text it indexed."""
    return digest("\x1f".join(fts_row(item)))


def digest(text):
    """What the original index records of the text it indexed (16 hex digits of its sha256)."""
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class _Index:
    table: str
    tokenizer: object          # () -> the configured tokenizer spec
    label: str                 # for messages: "record index", "original-text index"
    name: str                  # the CheckReport attribute and `rebuild(only=)` value
    setting: str               # the configuration key of its tokenizer
    word_index: object = None  # its `indexes.WordIndex` (the two word indexes)


RECORD_INDEX = _Index(RECORD_TABLE, configured_tokenizer, "record index", "record", "storage.tokenizer")
WORDS_INDEX = _Index(indexes.WORDS.table, configured_original_tokenizer, indexes.WORDS.label, indexes.WORDS.name,
                     "storage.original_tokenizer", indexes.WORDS)
ORIGINAL_INDEX = _Index(indexes.ORIGINAL.table, configured_original_tokenizer, indexes.ORIGINAL.label,
                        indexes.ORIGINAL.name, "storage.original_tokenizer", indexes.ORIGINAL)
INDEXES = (RECORD_INDEX, WORDS_INDEX, ORIGINAL_INDEX)
MEANING, MEANING_LABEL = "meaning", "item vectors"   # `rebuild(only=)`, the CheckReport attribute; for messages


def secure_delete(cursor, table):
    """Set an FTS5 table's `secure-delete` option (kept in the table): a deleted row's tokens
    leave the index at once instead of waiting in old segments for a merge, so that forgotten
    text does not stay in the database file (library.forget)."""
    cursor.execute(f"INSERT INTO {table}({table}, rank) VALUES ('secure-delete', 1)")


def _create(cursor, index, tokenizer):
    # The tokenizer comes from the validated configuration (jezero_site.config allows only
    # words and double-quoted strings), never from a request; it cannot hold a single quote.
    if index is RECORD_INDEX:
        cursor.execute(f"CREATE VIRTUAL TABLE {RECORD_TABLE} USING fts5({', '.join(RECORD_COLUMNS)}, "
                       f"tokenize = '{tokenizer}')")
        secure_delete(cursor, RECORD_TABLE)
        return
    columns = ", ".join(index.word_index.columns)
    cursor.execute(f"CREATE VIRTUAL TABLE {index.table} USING fts5({columns}, digest UNINDEXED, content = '', "
                   f"contentless_delete = 1, contentless_unindexed = 1, tokenize = '{tokenizer}')")
    secure_delete(cursor, index.table)
    cursor.execute(f"CREATE VIRTUAL TABLE {index.word_index.vocab_table} USING fts5vocab({index.table}, 'row')")
    postings.create(cursor, index.word_index, tokenizer)


_RECORD_INSERT = (f"INSERT INTO {RECORD_TABLE}(rowid, {', '.join(RECORD_COLUMNS)}) "
                  f"VALUES ({', '.join('%s' for _ in range(len(RECORD_COLUMNS) + 1))})")
_ORIGINAL_INSERT = f"INSERT INTO {ORIGINAL_INDEX.table}(rowid, text, digest) VALUES (%s, %s, %s)"
_WORDS_INSERT = (f"INSERT INTO {WORDS_INDEX.table}(rowid, {', '.join(RECORD_COLUMNS)}, digest) "
                 f"VALUES ({', '.join('%s' for _ in range(len(RECORD_COLUMNS) + 2))})")


def _words_insert_row(item):
    """_WORDS_INSERT's parameters for an item: its id, record text (CJK spaced) and digest."""
    return (item.pk, *words_row(item), record_digest(item))


def _original_insert_row(item_id, original):
    """_ORIGINAL_INSERT's parameters for an item: its id, original (CJK spaced) and digest."""
    return (item_id, index_text(original or ""), digest(original))


def _drop(cursor, index):
    """Drop an FTS5 table (and what is kept beside it) and any shadow table it leaves behind:
    SQLite 3.51 leaves the `_content` table of a `contentless_unindexed` table."""
    if index.word_index:
        postings.drop(cursor, index.word_index)
        cursor.execute(f"DROP TABLE IF EXISTS {index.word_index.vocab_table}")
    cursor.execute(f"DROP TABLE IF EXISTS {index.table}")
    for shadow in ("data", "idx", "content", "docsize", "config"):
        cursor.execute(f"DROP TABLE IF EXISTS {index.table}_{shadow}")


def table_exists(cursor, name):
    cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [name])
    return cursor.fetchone() is not None


def _recorded(index, using):
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = %s", [index.table])
        row = cursor.fetchone()
    if row is None:
        return None
    found = re.search(r"tokenize\s*=\s*'([^']*)'", row[0])
    return found.group(1) if found else "unicode61"  # FTS5's default when none is named


def recorded_tokenizers(using="default"):
    """{index name: the tokenizer it was built with, or None without it} — read from each
    table's own definition, so it cannot disagree with the index."""
    return {index.name: _recorded(index, using) for index in INDEXES}


def configured_tokenizers():
    """{index name: the tokenizer the configuration asks for}."""
    return {index.name: index.tokenizer() for index in INDEXES}


# --- writes ------------------------------------------------------------------------------

def _delete_rows(cursor, table, ids):
    marks = ", ".join("%s" for _ in ids)
    cursor.execute(f"DELETE FROM {table} WHERE rowid IN ({marks})", list(ids))


def log_changes(cursor, ids):
    """Log that these items were written or removed (`item_changes`); returns the seq of this
    change (every item of one call shares it; one transaction sees all of it or none)."""
    if not ids or not table_exists(cursor, CHANGES):   # not before migration 0014
        return 0
    cursor.executemany(f"INSERT INTO {CHANGES}(item) VALUES (%s)", [(item_id,) for item_id in ids])
    cursor.execute(f"SELECT max(seq) FROM {CHANGES}")
    return cursor.fetchone()[0]


def sync_items(items, using="default"):
    """Replace the index rows of these (saved) items. Call inside the items' transaction.

    A word index's row, and an item's vectors, are rewritten only when the text they hold
    changed (by digest): retagging does not re-tokenise an original, re-summarising does not
    touch it.
    """
    items = [item for item in items if item.pk is not None]
    if not items:
        return
    with connections[using].cursor() as cursor:
        for start in range(0, len(items), _BATCH):
            batch = items[start:start + _BATCH]
            ids = [item.pk for item in batch]
            seq = log_changes(cursor, ids)
            _delete_rows(cursor, RECORD_TABLE, ids)
            cursor.executemany(_RECORD_INSERT, [(item.pk, *fts_row(item)) for item in batch])
            marks = ", ".join("%s" for _ in ids)
            cursor.execute(f"SELECT rowid, digest FROM {WORDS_INDEX.table} WHERE rowid IN ({marks})", ids)
            record_digests = dict(cursor.fetchall())   # {item id: digest of the record text indexed}
            stale_rows = [row for row in map(_words_insert_row, batch) if record_digests.get(row[0]) != row[-1]]
            if stale_rows:
                _delete_rows(cursor, WORDS_INDEX.table, [row[0] for row in stale_rows if row[0] in record_digests])
                cursor.executemany(_WORDS_INSERT, stale_rows)
                postings.note(cursor, indexes.WORDS, seq, written=[(row[0], row[1:-1]) for row in stale_rows])
            said = {item.pk: digest(item.original) for item in batch}   # each original hashed once
            if table_exists(cursor, SCRIPTS_TABLE):   # not before migration 0017
                cursor.executemany(f"INSERT OR REPLACE INTO {SCRIPTS_TABLE}(item_id, scripts) VALUES (%s, %s)",
                                   [(item.pk, item_scripts(item)) for item in batch])
            if meaning.exists(cursor):   # not before migration 0013
                vector_digests = meaning.digests(cursor, ids)   # {item id: digest of the text embedded}
                texts = ((item, meaning.text_of(item)) for item in batch)
                embedded = ((item.pk, said[item.pk] if text is item.original else digest(text), text)
                            for item, text in texts)
                meaning.put(cursor, [row for row in embedded if vector_digests.get(row[0]) != row[1]])

            cursor.execute(f"SELECT rowid, digest FROM {ORIGINAL_INDEX.table} WHERE rowid IN ({marks})", ids)
            original_digests = dict(cursor.fetchall())   # {item id: digest of the original indexed}
            stale_items = [item for item in batch if original_digests.get(item.pk) != said[item.pk]]
            if stale_items:
                _delete_rows(cursor, ORIGINAL_INDEX.table,
                             [item.pk for item in stale_items if item.pk in original_digests])
                rows = [_original_insert_row(item.pk, item.original) for item in stale_items]
                cursor.executemany(_ORIGINAL_INSERT, rows)
                postings.note(cursor, indexes.ORIGINAL, seq, written=[(row[0], (row[1],)) for row in rows])


def item_scripts(item):
    """The scripts bit set of an item (`tokens.scripts_of` of what it says)."""
    return scripts_of(item.title, item.summary, item.original)


def script_counts(using="default"):
    """{script name: how many items are written in it} (`items_scripts`; every item counts
    for Latin)."""
    counts = dict.fromkeys(SCRIPTS, 0)
    with connections[using].cursor() as cursor:
        if not table_exists(cursor, SCRIPTS_TABLE):
            return counts
        cursor.execute(f"SELECT scripts, count(*) FROM {SCRIPTS_TABLE} GROUP BY scripts")
        for bits, count in cursor.fetchall():
            for i, name in enumerate(SCRIPTS):
                if bits & (1 << i):
                    counts[name] += count
    return counts


def fill_scripts(using="default", progress=None):
    """Every item's scripts anew (`rebuild`). Call inside a transaction. Returns how many."""
    from library.models import Item

    done = 0
    with connections[using].cursor() as cursor:
        cursor.execute(f"DELETE FROM {SCRIPTS_TABLE}")
        items = Item.objects.using(using).order_by("pk").only("pk", "title", "summary", "original")
        batch = []
        for item in items.iterator(chunk_size=500):
            batch.append((item.pk, item_scripts(item)))
            if len(batch) >= 500:
                cursor.executemany(f"INSERT INTO {SCRIPTS_TABLE}(item_id, scripts) VALUES (%s, %s)", batch)
                done += len(batch)
                batch = []
        cursor.executemany(f"INSERT INTO {SCRIPTS_TABLE}(item_id, scripts) VALUES (%s, %s)", batch)
        done += len(batch)
    if progress:
        progress(done, done)
    return done


def sync_ids(ids, using="default"):
    """Re-read these items and replace their index rows (after a queryset update)."""
    from library.models import Item

    for start in range(0, len(ids), _BATCH):
        chunk = ids[start:start + _BATCH]
        sync_items(Item.objects.using(using).filter(pk__in=chunk).only("pk", *RECORD_COLUMNS, "original"), using=using)


def forget(ids, using="default"):
    """Remove the index rows of these item ids. Call inside the items' transaction."""
    with connections[using].cursor() as cursor:
        for start in range(0, len(ids), _BATCH):
            chunk = list(ids[start:start + _BATCH])
            seq = log_changes(cursor, chunk)
            for index in INDEXES:
                _delete_rows(cursor, index.table, chunk)
            if table_exists(cursor, SCRIPTS_TABLE):
                marks = ", ".join("%s" for _ in chunk)
                cursor.execute(f"DELETE FROM {SCRIPTS_TABLE} WHERE item_id IN ({marks})", chunk)
            for index in indexes.WORD_INDEXES:
                postings.note(cursor, index, seq, removed=chunk)
            meaning.forget(cursor, chunk)


def ensure_index(using="default"):
    """Idempotent: create a missing index table; empty them all when the items table is empty.

    Returns True when it changed anything. (A missing original-text or word index on a
    non-empty library is left to migrations 0007 and 0011 and `jezero reindex`, which fill
    them with progress.)
    """
    changed = False
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        if not table_exists(cursor, "items"):
            return False
        if not table_exists(cursor, RECORD_TABLE):
            _create(cursor, RECORD_INDEX, configured_tokenizer())
            changed = True
        cursor.execute("SELECT EXISTS (SELECT 1 FROM items)")
        if cursor.fetchone()[0]:
            return changed
        if not meaning.exists(cursor):
            meaning.create(cursor)
            changed = True
        for index in (ORIGINAL_INDEX, WORDS_INDEX):
            if not table_exists(cursor, index.table):
                _create(cursor, index, index.tokenizer())
                changed = True
        for index in INDEXES:
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {index.table})")
            if cursor.fetchone()[0]:
                cursor.execute(f"DELETE FROM {index.table}")
                changed = True
        for index in indexes.WORD_INDEXES:
            postings.clear(cursor, index)
        cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {meaning.TABLE})")
        if cursor.fetchone()[0]:
            meaning.clear(cursor)
            changed = True
        if table_exists(cursor, SCRIPTS_TABLE):
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {SCRIPTS_TABLE})")
            if cursor.fetchone()[0]:
                cursor.execute(f"DELETE FROM {SCRIPTS_TABLE}")
                changed = True
    return changed


def _fill(cursor, index, using, progress):
    from library.models import Item

    total = Item.objects.using(using).count()
    if index is RECORD_INDEX:
        rows = ((item.pk, *fts_row(item)) for item in
                Item.objects.using(using).order_by("pk").only("pk", *RECORD_COLUMNS).iterator(chunk_size=2_000))
        sql, size = _RECORD_INSERT, 2_000
    elif index is WORDS_INDEX:
        rows = (_words_insert_row(item) for item in
                Item.objects.using(using).order_by("pk").only("pk", *RECORD_COLUMNS).iterator(chunk_size=2_000))
        sql, size = _WORDS_INSERT, 2_000
    else:
        rows = (_original_insert_row(pk, original) for pk, original in
                Item.objects.using(using).order_by("pk").values_list("pk", "original").iterator(chunk_size=500))
        sql, size = _ORIGINAL_INSERT, 500
    done, batch = 0, []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            cursor.executemany(sql, batch)
            done += len(batch)
            batch = []
            if progress:
                progress(done, total)
    if batch:
        cursor.executemany(sql, batch)
        done += len(batch)
    if progress:
        progress(done, total)
    return done


def rebuild(tokenizer=None, original_tokenizer=None, using="default", progress=None, only=None):
    """Drop and recreate the indexes from the items with the given tokenizers (default: the
    configured ones; `original_tokenizer` is the word tokenizer of the original-text and the
    record word index). One transaction: readers see the old indexes until it commits.

    `only` is "record", "words" or "original" to rebuild one of them. Returns the number of
    items indexed. `progress(index_label, done, total)` is called per batch.
    """
    wanted = INDEXES if only is None else tuple(index for index in INDEXES if index.name == only)
    if not wanted and only != MEANING:
        raise ValueError(f"rebuild: no index named {only!r}")
    word_tokenizer = original_tokenizer or configured_original_tokenizer()
    tokenizers = {RECORD_INDEX: tokenizer or configured_tokenizer(), ORIGINAL_INDEX: word_tokenizer,
                  WORDS_INDEX: word_tokenizer}
    done = 0
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        for index in wanted:
            _drop(cursor, index)
            _create(cursor, index, tokenizers[index])
            step = (lambda d, t, label=index.label: progress(label, d, t)) if progress else None
            done = _fill(cursor, index, using, step)
            logger.info("fts rebuilt table=%s rows=%d tokenizer=%r", index.table, done, tokenizers[index])
            if index.word_index:
                postings.refresh(index.word_index, tokenizers[index], using,
                                 (lambda d, t, label=f"{postings.LABEL} ({index.label})": progress(label, d, t))
                                 if progress else None)
        if only is None:
            fill_scripts(using)
        if only in (None, MEANING):
            done = fill_vectors(using, (lambda d, t: progress(MEANING_LABEL, d, t)) if progress else None)
    return done


def fill_vectors(using="default", progress=None):
    """Make every item's vectors anew (`library.meaning`; migration 0013 and `rebuild`). Call
    inside a transaction. Returns how many items it embedded."""
    from library.models import Item

    total = Item.objects.using(using).count()
    done, batch = 0, []
    with connections[using].cursor() as cursor:
        meaning.create(cursor)
        meaning.clear(cursor)
        items = (Item.objects.using(using).order_by("pk").only("pk", *RECORD_COLUMNS, "original")
                 .iterator(chunk_size=200))
        for item in items:
            text = meaning.text_of(item)
            batch.append((item.pk, digest(text), text))
            if len(batch) >= 200:
                meaning.put(cursor, batch)
                done += len(batch)
                batch = []
                if progress:
                    progress(done, total)
        meaning.put(cursor, batch)
        done += len(batch)
    if progress:
        progress(done, total)
    return done


CHANGES_KEPT = 100_000   # item changes kept past what every base holds (library.catalog reads them)


MERGE_PAGES = 1_000   # pages of an index (about 4 KB each) that `optimize` merges per transaction


def optimize(using="default"):
    """Merge each index's b-trees into one (`merge_index`), then refresh the postings of
    both word indexes (`postings.refresh`: returns its report) and forget the oldest item
    changes. Idempotent; safe while reading and writing.

    An item change is forgotten once every base holds it and CHANGES_KEPT newer ones exist: a
    server process brings its item catalog up to date from the changes since it last looked,
    and reads every item again only when those are gone."""
    for table in (index.table for index in INDEXES):
        merge_index(table, using)
    report = postings.refresh_all({index.name: _recorded(index, using) for index in INDEXES if index.word_index}, using)
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        if table_exists(cursor, CHANGES):
            cursor.execute(f"SELECT coalesce(max(seq), 0) FROM {CHANGES}")
            last = cursor.fetchone()[0]
            cursor.execute(f"DELETE FROM {CHANGES} WHERE seq <= %s",
                           [min(postings.base_seq(cursor), last - CHANGES_KEPT)])
    return report


def merge_index(table, using="default"):
    """Merge an FTS5 table's b-trees into one, as its `optimize` command does, but in steps of
    MERGE_PAGES pages, each its own short transaction (FTS5's `merge` command: the first step
    with a negative count, which puts every b-tree on one level and starts merging them all;
    the next ones positive, which go on with that merge, until a step changes nothing). One
    `optimize` would be one transaction as large as the index: writers would wait on it for
    minutes on a large library, and the write-ahead log and the file would each grow by the
    index's size before it ended. Merged pages are freed as the merge goes. A stopped merge
    goes on at the next call."""
    count = -MERGE_PAGES
    while True:
        with transaction.atomic(using=using), connections[using].cursor() as cursor:
            raw = connections[using].connection
            before = raw.total_changes
            cursor.execute(f"INSERT INTO {table}({table}, rank) VALUES ('merge', %s)", [count])
            if raw.total_changes - before < 2:   # nothing left to merge (FTS5's own test)
                return
        count = MERGE_PAGES


FORGOTTEN = "forgotten_seq"   # store_state: the item change of the last forget (library.forget)


def note_forgotten(using="default"):
    """Record that items were forgotten: the postings' refresh is due until every base was
    made after it (their bases list item ids and counts of common words, no text)."""
    from library.models import StoreState

    with connections[using].cursor() as cursor:
        if not table_exists(cursor, CHANGES):
            return
        cursor.execute(f"SELECT coalesce(max(seq), 0) FROM {CHANGES}")
        seq = cursor.fetchone()[0]
    StoreState.objects.using(using).update_or_create(key=FORGOTTEN, defaults={"value": str(seq)})


def postings_due(using="default"):
    """Whether a refresh of the postings would speed searching up: a word index of more than
    `postings.POSTED` items has no base yet (a new or upgraded library: every term is scored
    by FTS5 until then, as exactly and more slowly), or more than 2 % of its items (and more
    than POSTED) changed since its base (each search reads those from the fresh table)."""
    from library.models import StoreState

    with connections[using].cursor() as cursor:
        if any(postings.due(cursor, index) for index in indexes.WORD_INDEXES if table_exists(cursor, index.table)):
            return True
        forgotten = StoreState.objects.using(using).filter(key=FORGOTTEN).values_list("value", flat=True).first()
        return forgotten is not None and postings.holds_before(cursor, int(forgotten))


# --- verification ------------------------------------------------------------------------

@dataclass
class IndexReport:
    """How one index compares with the items."""

    table: str
    label: str
    rows: int = 0
    tokenizer: str | None = None
    configured_tokenizer: str | None = None
    missing: list = field(default_factory=list)     # item ids without a row
    extra: list = field(default_factory=list)       # rowids without an item
    different: list = field(default_factory=list)   # ids whose indexed text differs

    def as_dict(self):
        return {"table": self.table, "rows": self.rows, "tokenizer": self.tokenizer,
                "configured_tokenizer": self.configured_tokenizer, "missing": self.missing,
                "extra": self.extra, "different": self.different}


@dataclass
class CheckReport:
    items: int = 0
    record: IndexReport = None
    words: IndexReport = None
    original: IndexReport = None
    meaning: IndexReport = None
    problems: list = field(default_factory=list)    # one line each

    @property
    def ok(self):
        return not self.problems

    # The record index's figures, under the names `jezero check` has always printed.
    @property
    def indexed(self):
        return self.record.rows

    @property
    def tokenizer(self):
        return self.record.tokenizer

    @property
    def missing(self):
        return self.record.missing

    @property
    def extra(self):
        return self.record.extra

    @property
    def different(self):
        return self.record.different

    def as_dict(self):
        return {
            "ok": self.ok, "items": self.items, "indexed": self.indexed, "tokenizer": self.tokenizer,
            "configured_tokenizer": self.record.configured_tokenizer, "missing": self.missing,
            "extra": self.extra, "different": self.different,
            "original_index": self.original.as_dict(), "record_word_index": self.words.as_dict(),
            "item_vectors": self.meaning.as_dict(), "problems": self.problems,
        }


def _shown(ids, limit=20):
    text = ", ".join(str(i) for i in ids[:limit])
    return text + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def check(using="default"):
    """Compare the items with each index (count and content — the contentless ones by
    digest), run FTS5's integrity check on each and compare each index's tokenizer with the
    configured one. Never changes anything."""
    from library.models import Item

    report = CheckReport(items=Item.objects.using(using).count())
    for index in INDEXES:
        part = IndexReport(index.table, index.label, tokenizer=_recorded(index, using),
                           configured_tokenizer=index.tokenizer())
        setattr(report, index.name, part)
        with connections[using].cursor() as cursor:
            if not table_exists(cursor, index.table):
                report.problems.append(f"the {index.label} ({index.table}) is missing: run `jezero reindex`")
                continue
            if index.word_index and not table_exists(cursor, index.word_index.vocab_table):
                report.problems.append(f"the {index.label}'s vocabulary ({index.word_index.vocab_table}) is missing: "
                                       "run `jezero reindex`")
            cursor.execute(f"SELECT count(*) FROM {index.table}")
            part.rows = cursor.fetchone()[0]
            by_id = Item.objects.using(using).order_by("pk")
            if index is RECORD_INDEX:
                expected = ((item.pk, fts_row(item)) for item in
                            by_id.only("pk", *RECORD_COLUMNS).iterator(chunk_size=2_000))
                cursor.execute(f"SELECT rowid, {', '.join(RECORD_COLUMNS)} FROM {RECORD_TABLE} ORDER BY rowid")
                actual = ((row[0], tuple(row[1:])) for row in iter(cursor.fetchone, None))
            elif index is WORDS_INDEX:
                expected = ((item.pk, record_digest(item)) for item in
                            by_id.only("pk", *RECORD_COLUMNS).iterator(chunk_size=2_000))
                cursor.execute(f"SELECT rowid, digest FROM {WORDS_INDEX.table} ORDER BY rowid")
                actual = iter(cursor.fetchone, None)
            else:
                expected = ((pk, digest(original)) for pk, original in
                            by_id.values_list("pk", "original").iterator(chunk_size=500))
                cursor.execute(f"SELECT rowid, digest FROM {ORIGINAL_INDEX.table} ORDER BY rowid")
                actual = iter(cursor.fetchone, None)
            _merge_compare(expected, actual, part)
            try:
                cursor.execute(f"INSERT INTO {index.table}({index.table}, rank) VALUES ('integrity-check', 1)")
            except DatabaseError as exc:  # e.g. "fts5: corruption found reading blob …"
                report.problems.append(f"FTS5 integrity-check of the {index.label} failed: {exc}")

        if report.items != part.rows:
            report.problems.append(f"{report.items} items but {part.rows} rows in {index.table}")
        if part.missing:
            report.problems.append(f"items without a row in the {index.label}: {_shown(part.missing)}")
        if part.extra:
            report.problems.append(f"rows in the {index.label} without an item: {_shown(part.extra)}")
        if part.different:
            report.problems.append(f"items whose {index.label} text differs: {_shown(part.different)}")
        if part.tokenizer != part.configured_tokenizer:
            report.problems.append(
                f"the {index.label} was built with tokenizer {part.tokenizer!r} but {index.setting} is "
                f"{part.configured_tokenizer!r}: run `jezero reindex`"
            )
    _check_vectors(report, using)
    _check_scripts(report, using)
    for index in indexes.WORD_INDEXES:
        with connections[using].cursor() as cursor:
            if table_exists(cursor, index.table):
                report.problems.extend(f"{line}: run `jezero reindex --only {index.name}`"
                                       for line in postings.problems(cursor, index))
    return report


def _check_vectors(report, using):
    """The item vectors against the items, by the digest of the text embedded, and the model
    that made them."""
    from library.models import Item

    part = report.meaning = IndexReport(meaning.TABLE, MEANING_LABEL, configured_tokenizer=meaning.MODEL)
    with connections[using].cursor() as cursor:
        if not meaning.exists(cursor):
            report.problems.append(f"the {MEANING_LABEL} ({meaning.TABLE}) are missing: run `jezero reindex`")
            return
        part.tokenizer = meaning.recorded_model(cursor)
        cursor.execute(f"SELECT count(*) FROM {meaning.TABLE}")
        part.rows = cursor.fetchone()[0]
        expected = ((item.pk, digest(meaning.text_of(item))) for item in Item.objects.using(using).order_by("pk")
                    .only("pk", *RECORD_COLUMNS, "original").iterator(chunk_size=500))
        _merge_compare(expected, meaning.index_rows(cursor), part)
    if part.missing:
        report.problems.append(f"items without vectors: {_shown(part.missing)}; run `jezero reindex --only meaning`")
    if part.extra:
        report.problems.append(f"vectors without an item: {_shown(part.extra)}; run `jezero reindex --only meaning`")
    if part.different:
        report.problems.append(f"items whose vectors were made from another text: {_shown(part.different)}; "
                               "run `jezero reindex --only meaning`")
    if part.tokenizer != meaning.MODEL:
        report.problems.append(f"the {MEANING_LABEL} were made by {part.tokenizer!r}, this version uses "
                               f"{meaning.MODEL!r}: run `jezero reindex --only meaning`")


def _check_scripts(report, using):
    """Each item's scripts against what it says."""
    from library.models import Item

    part = IndexReport(SCRIPTS_TABLE, "scripts of the items")
    with connections[using].cursor() as cursor:
        if not table_exists(cursor, SCRIPTS_TABLE):
            report.problems.append(f"the scripts of the items ({SCRIPTS_TABLE}) are missing: run `jezero migrate`")
            return
        expected = ((item.pk, item_scripts(item)) for item in Item.objects.using(using).order_by("pk")
                    .only("pk", "title", "summary", "original").iterator(chunk_size=500))
        cursor.execute(f"SELECT item_id, scripts FROM {SCRIPTS_TABLE} ORDER BY item_id")
        _merge_compare(expected, iter(cursor.fetchone, None), part)
    wrong = sorted(part.missing + part.extra + part.different)
    if wrong:
        report.problems.append(f"items whose scripts are missing or wrong: {_shown(wrong)}; run `jezero reindex`")


def _merge_compare(expected, actual, report):
    """Walk two id-ordered streams at once, recording missing, extra and different ids."""
    exp, act = next(expected, None), next(actual, None)
    while exp is not None or act is not None:
        if act is None or (exp is not None and exp[0] < act[0]):
            report.missing.append(exp[0])
            exp = next(expected, None)
        elif exp is None or act[0] < exp[0]:
            report.extra.append(act[0])
            act = next(actual, None)
        else:
            if exp[1] != act[1]:
                report.different.append(exp[0])
            exp, act = next(expected, None), next(actual, None)
