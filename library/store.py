"""The full-text mirror of items: the only code that writes the FTS5 table `items_fts`.

Columns `title, summary, questions, atoms, project`, rowid = item id (SPEC §7). Questions
are joined with "\\n", atoms' texts with "\\n" (kinds are not indexed), a missing project is
"". Those exact strings matter: BM25 counts tokens, so the index must hold exactly them.

Writers call `sync_items` / `sync_ids` / `forget` inside the transaction that changes the
items (the `Item` model and its queryset do this for every ORM write). `rebuild` recreates
the table with the configured tokenizer, `check` compares it with the items and runs FTS5's
own integrity check, `optimize` merges the index segments. The read side (`library.search`)
only reads the table, with the names and weights defined here.
"""

import logging
import re
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DatabaseError, connections, transaction

logger = logging.getLogger(__name__)

FTS_TABLE = "items_fts"
COLUMNS = ("title", "summary", "questions", "atoms", "project")
BM25_WEIGHTS = (2.0, 1.0, 1.5, 1.5, 0.5)
_BATCH = 500


def configured_tokenizer():
    return settings.JEZERO["storage"]["tokenizer"]


def min_term_length(tokenizer=None):
    """3 for a trigram tokenizer (it cannot look up fewer characters), else 1."""
    words = (tokenizer or configured_tokenizer()).split()
    return 3 if "trigram" in words else 1


def fts_row(item):
    """The exact text indexed for an item, in column order."""
    questions = "\n".join(item.questions or [])
    atoms = "\n".join(atom["text"] for atom in (item.atoms or []))
    return (item.title, item.summary, questions, atoms, item.project or "")


def _ddl(tokenizer):
    # The tokenizer comes from the validated configuration (jezero_site.config allows only
    # words and double-quoted strings), never from a request; it cannot hold a single quote.
    columns = ", ".join(COLUMNS)
    return f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5({columns}, tokenize = '{tokenizer}')"


def _insert_sql():
    marks = ", ".join("%s" for _ in range(len(COLUMNS) + 1))
    return f"INSERT INTO {FTS_TABLE}(rowid, {', '.join(COLUMNS)}) VALUES ({marks})"


def _table_exists(cursor, name):
    cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [name])
    return cursor.fetchone() is not None


def recorded_tokenizer(using="default"):
    """The tokenizer the index was built with — read from the table's own definition, so it
    cannot disagree with the index — or None when there is no index yet."""
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = %s", [FTS_TABLE])
        row = cursor.fetchone()
    if row is None:
        return None
    match = re.search(r"tokenize\s*=\s*'([^']*)'", row[0])
    return match.group(1) if match else "unicode61"  # FTS5's default when none is named


# --- writes ------------------------------------------------------------------------------

def sync_items(items, using="default"):
    """Replace the FTS rows of these (saved) items. Call inside the items' transaction."""
    rows = [(item.pk, *fts_row(item)) for item in items]
    if not rows:
        return
    with connections[using].cursor() as cursor:
        for start in range(0, len(rows), _BATCH):
            batch = rows[start:start + _BATCH]
            ids = [row[0] for row in batch]
            marks = ", ".join("%s" for _ in ids)
            cursor.execute(f"DELETE FROM {FTS_TABLE} WHERE rowid IN ({marks})", ids)
            cursor.executemany(_insert_sql(), batch)


def sync_ids(ids, using="default"):
    """Re-read these items and replace their FTS rows (after a queryset update)."""
    from library.models import Item

    for start in range(0, len(ids), _BATCH):
        chunk = ids[start:start + _BATCH]
        sync_items(Item.objects.using(using).filter(pk__in=chunk).only(
            "pk", "title", "summary", "questions", "atoms", "project"), using=using)


def forget(ids, using="default"):
    """Remove the FTS rows of these item ids. Call inside the items' transaction."""
    with connections[using].cursor() as cursor:
        for start in range(0, len(ids), _BATCH):
            chunk = list(ids[start:start + _BATCH])
            marks = ", ".join("%s" for _ in chunk)
            cursor.execute(f"DELETE FROM {FTS_TABLE} WHERE rowid IN ({marks})", chunk)


def create_index(tokenizer=None, using="default"):
    """Create the empty FTS table (migrations call this) with `tokenizer` (default: configured)."""
    tokenizer = tokenizer or configured_tokenizer()
    with connections[using].cursor() as cursor:
        cursor.execute(_ddl(tokenizer))


def ensure_index(using="default"):
    """Idempotent: create the table when missing; empty it when the items table is empty.

    Returns True when it changed anything.
    """
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        if not _table_exists(cursor, "items"):
            return False
        if not _table_exists(cursor, FTS_TABLE):
            create_index(using=using)
            return True
        cursor.execute("SELECT EXISTS (SELECT 1 FROM items)")
        if cursor.fetchone()[0]:
            return False
        cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {FTS_TABLE})")
        if not cursor.fetchone()[0]:
            return False
        cursor.execute(f"DELETE FROM {FTS_TABLE}")
        return True


def rebuild(tokenizer=None, using="default", progress=None):
    """Drop and recreate the FTS table from the items, with `tokenizer` (default: the
    configured one). One transaction: readers see the old index until it commits.

    Returns the number of rows indexed. `progress(done, total)` is called per batch.
    """
    from library.models import Item

    tokenizer = tokenizer or configured_tokenizer()
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {FTS_TABLE}")
        create_index(tokenizer, using=using)
        total = Item.objects.using(using).count()
        done = 0
        items = Item.objects.using(using).order_by("pk").only(*("pk",) + COLUMNS)
        batch = []
        for item in items.iterator(chunk_size=2_000):
            batch.append((item.pk, *fts_row(item)))
            if len(batch) >= 2_000:
                cursor.executemany(_insert_sql(), batch)
                done += len(batch)
                batch = []
                if progress:
                    progress(done, total)
        if batch:
            cursor.executemany(_insert_sql(), batch)
            done += len(batch)
        if progress:
            progress(done, total)
    logger.info("fts rebuilt rows=%d tokenizer=%r", done, tokenizer)
    return done


def optimize(using="default"):
    """Merge the index's b-trees into one (FTS5 `optimize`). Idempotent; safe while reading."""
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('optimize')")


# --- verification ------------------------------------------------------------------------

@dataclass
class CheckReport:
    items: int = 0
    indexed: int = 0
    tokenizer: str | None = None
    configured_tokenizer: str | None = None
    missing: list = field(default_factory=list)     # item ids without an FTS row
    extra: list = field(default_factory=list)       # FTS rowids without an item
    different: list = field(default_factory=list)   # ids whose FTS text differs
    problems: list = field(default_factory=list)    # one line each

    @property
    def ok(self):
        return not self.problems

    def as_dict(self):
        return {
            "ok": self.ok, "items": self.items, "indexed": self.indexed,
            "tokenizer": self.tokenizer, "configured_tokenizer": self.configured_tokenizer,
            "missing": self.missing, "extra": self.extra, "different": self.different,
            "problems": self.problems,
        }


def _shown(ids, limit=20):
    text = ", ".join(str(i) for i in ids[:limit])
    return text + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def check(using="default"):
    """Compare items with their FTS rows (count and content), run FTS5's integrity check and
    compare the index's tokenizer with the configured one. Never changes anything."""
    from library.models import Item

    report = CheckReport(configured_tokenizer=configured_tokenizer())
    report.tokenizer = recorded_tokenizer(using)
    with connections[using].cursor() as cursor:
        if not _table_exists(cursor, FTS_TABLE):
            report.problems.append(f"the full-text table {FTS_TABLE} is missing: run `jezero reindex`")
            return report
        report.items = Item.objects.using(using).count()
        cursor.execute(f"SELECT count(*) FROM {FTS_TABLE}")
        report.indexed = cursor.fetchone()[0]

        expected = (
            (item.pk, fts_row(item))
            for item in Item.objects.using(using).order_by("pk").only(*("pk",) + COLUMNS).iterator(chunk_size=2_000)
        )
        cursor.execute(f"SELECT rowid, {', '.join(COLUMNS)} FROM {FTS_TABLE} ORDER BY rowid")
        actual = ((row[0], tuple(row[1:])) for row in iter(cursor.fetchone, None))
        _merge_compare(expected, actual, report)

        try:
            cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('integrity-check', 1)")
        except DatabaseError as exc:  # e.g. "fts5: corruption found reading blob …"
            report.problems.append(f"FTS5 integrity-check failed: {exc}")

    if report.items != report.indexed:
        report.problems.append(f"{report.items} items but {report.indexed} rows in {FTS_TABLE}")
    if report.missing:
        report.problems.append(f"items without an index row: {_shown(report.missing)}")
    if report.extra:
        report.problems.append(f"index rows without an item: {_shown(report.extra)}")
    if report.different:
        report.problems.append(f"items whose index text differs: {_shown(report.different)}")
    if report.tokenizer != report.configured_tokenizer:
        report.problems.append(
            f"the index was built with tokenizer {report.tokenizer!r} but storage.tokenizer is "
            f"{report.configured_tokenizer!r}: run `jezero reindex`"
        )
    return report


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
