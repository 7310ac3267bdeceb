"""Frozen code of the migrations that create and fill the full-text indexes (0002, 0007, 0011),
version 1; a module whose name starts with `_` is not a migration.

Never change this module: a migration must do on a user's upgrade what it did when it was
written, whatever today's `library.store` does. What a later version indexes differently
gets a migration of its own (with a `_v2_…` module if it needs code). Copied as they stood
when the migrations were frozen (2026-12-02, at 4cb9f5a) from `library.tokens.index_text`,
`library.store` (`digest`, `fts_row`, `words_row`, `record_digest`, the insert statements, the
dropping of an FTS5 table) and `library/migrations/_indexes.py` (the progress lines): what an
upgrade from the first release has run since 0011 came (5e936b8; before it, for a few hours,
0007 left private-use characters in the text it indexed). The tables' SQL is that of today's
tables, which no migration has changed since. It reads the items with SQL, never a model.
"""

import hashlib
import json
import re
import sys
import time

from django.conf import settings

# The configuration's defaults when this was written (jezero_site.config).
DEFAULT_TOKENIZERS = {"tokenizer": "trigram remove_diacritics 1", "original_tokenizer": "unicode61 remove_diacritics 2"}

# Han ideographs (with extensions and compatibility forms), kana, Hangul and CJK punctuation.
CJK_CHARS = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31ff\u3200-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
_CJK_RE = re.compile(f"[{CJK_CHARS}]")
_CJK_ONE_RE = re.compile(f"([{CJK_CHARS}])")
_PRIVATE_RE = re.compile("[\ue000-\uf8ff]")
FTS5_SHADOWS = ("data", "idx", "content", "docsize", "config")


def configured_tokenizer(key):
    """The tokenizer `storage.<key>` names in the configuration (validated at start-up: words
    and double-quoted strings only, never a single quote), or its default of then."""
    storage = getattr(settings, "JEZERO", {}).get("storage", {})
    return storage.get(key) or DEFAULT_TOKENIZERS[key]


def index_text(text):
    """The text a word index tokenizes: every CJK character standing alone, private-use
    characters as spaces."""
    if _PRIVATE_RE.search(text):
        text = _PRIVATE_RE.sub(" ", text)
    return _CJK_ONE_RE.sub(r" \1 ", text) if _CJK_RE.search(text) else text


def digest(text):
    """16 hex digits of the sha256 of a text: what a contentless index records of it."""
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()[:16]


def record_text(title, summary, questions, atoms, project):
    """The record's five columns as indexed, from the stored values (questions and atoms as
    the JSON the items table holds): questions and atoms' texts joined by newlines, no
    project as ""."""
    questions = "\n".join(json.loads(questions) or [])
    atoms = "\n".join(atom["text"] for atom in (json.loads(atoms) or []))
    return (title, summary, questions, atoms, project or "")


def original_row(item_id, original):
    """A row of the original-text index: (rowid, text, digest)."""
    return (item_id, index_text(original or ""), digest(original))


def words_row(item_id, title, summary, questions, atoms, project):
    """A row of the record word index: (rowid, five columns, digest of the record text)."""
    record = record_text(title, summary, questions, atoms, project)
    return (item_id, *(index_text(value) for value in record), digest("\x1f".join(record)))


def drop_fts(cursor, table):
    """Drop an FTS5 table and any shadow table it leaves behind (SQLite 3.51 leaves the
    `_content` table of a `contentless_unindexed` table)."""
    cursor.execute(f"DROP TABLE IF EXISTS {table}")
    for shadow in FTS5_SHADOWS:
        cursor.execute(f"DROP TABLE IF EXISTS {table}_{shadow}")


def progress_printer(label):
    """`progress(done, total)` printing `  <label>: done/total items (s)` at most every 2 s."""
    started = time.monotonic()
    shown = {"at": 0.0}

    def progress(done, total):
        now = time.monotonic()
        if total and (done == total or now - shown["at"] >= 2.0):
            shown["at"] = now
            sys.stdout.write(f"\n  {label}: {done:,}/{total:,} items ({now - started:.0f} s)")
            sys.stdout.flush()

    return progress


def each_batch(cursor, columns, size):
    """The items' `columns` (after `id`), `size` rows at a time in id order."""
    last = 0
    while True:
        cursor.execute(f"SELECT id, {columns} FROM items WHERE id > %s ORDER BY id LIMIT %s", [last, size])
        rows = cursor.fetchall()
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def fill(cursor, label, columns, size, make_row, insert):
    """Write a row made by `make_row(id, *columns)` for every item with `insert`, printing
    progress under `label`. Returns how many items it indexed."""
    progress = progress_printer(label)
    cursor.execute("SELECT count(*) FROM items")
    total = cursor.fetchone()[0]
    done = 0
    for rows in each_batch(cursor, columns, size):
        cursor.executemany(insert, [make_row(*row) for row in rows])
        done += len(rows)
        progress(done, total)
    return done
