"""Replaces the common-word lists (migration 0012) with the postings of common terms and the
log of item changes (`library.postings`, `library.catalog`): the tables, empty. The postings
are made from the indexes by the next `jezero optimize` (`jezero init` and the worker start
one when a library of more than a thousand items has none); until then every term is scored
by FTS5, as exactly and more slowly. Frozen SQL: this migration does not run today's code."""

import re

from django.db import migrations

WORD_INDEXES = (
    ("words", "items_words", ("title", "summary", "questions", "atoms", "project")),
    ("original", "items_original_fts", ("text",)),
)


def _tokenizer(cursor, table):
    cursor.execute("SELECT sql FROM sqlite_master WHERE name = %s", [table])
    row = cursor.fetchone()
    if row is None:
        return None
    found = re.search(r"tokenize\s*=\s*'([^']*)'", row[0])
    return found.group(1) if found else "unicode61"


def create(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for table in ("items_original_fts", "items_words"):
            cursor.execute(f"DROP TABLE IF EXISTS {table}_lists")
            cursor.execute(f"DROP TABLE IF EXISTS {table}_common")
        cursor.execute("CREATE TABLE IF NOT EXISTS item_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                       "item INTEGER NOT NULL)")
        cursor.execute("CREATE TABLE IF NOT EXISTS search_postings_runs (id INTEGER PRIMARY KEY AUTOINCREMENT)")
        cursor.execute("CREATE TABLE IF NOT EXISTS search_postings (name TEXT PRIMARY KEY, generation INTEGER NOT "
                       "NULL, seq INTEGER NOT NULL, tracking INTEGER NOT NULL, current INTEGER NOT NULL)")
        for name, table, columns in WORD_INDEXES:
            tokenizer = _tokenizer(cursor, table)
            if tokenizer is None:
                continue
            cursor.execute("INSERT OR IGNORE INTO search_postings (name, generation, seq, tracking, current) "
                           "VALUES (%s, 0, 0, 0, 0)", [name])
            cursor.execute(f"CREATE TABLE IF NOT EXISTS {table}_postings (generation INTEGER NOT NULL, term TEXT NOT "
                           f"NULL, held INTEGER NOT NULL, items BLOB, freqs BLOB, PRIMARY KEY (generation, term))")
            cursor.execute(f"CREATE TABLE IF NOT EXISTS {table}_lengths (generation INTEGER PRIMARY KEY, "
                           f"lengths BLOB NOT NULL)")
            cursor.execute(f"CREATE TABLE IF NOT EXISTS {table}_changed (item INTEGER PRIMARY KEY, "
                           f"seq INTEGER NOT NULL)")
            cursor.execute(f"CREATE INDEX IF NOT EXISTS {table}_changed_seq ON {table}_changed(seq)")
            cursor.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {table}_fresh USING fts5({', '.join(columns)}, "
                           f"content = '', contentless_delete = 1, tokenize = '{tokenizer}')")
            cursor.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {table}_fresh_instances "
                           f"USING fts5vocab({table}_fresh, 'instance')")
            cursor.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {table}_instances USING fts5vocab({table}, 'instance')")


def drop(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for _name, table, _columns in WORD_INDEXES:
            for suffix in ("_fresh_instances", "_instances"):
                cursor.execute(f"DROP TABLE IF EXISTS {table}{suffix}")
            cursor.execute(f"DROP TABLE IF EXISTS {table}_fresh")
            for suffix in ("_postings", "_lengths", "_changed"):
                cursor.execute(f"DROP TABLE IF EXISTS {table}{suffix}")
        cursor.execute("DROP TABLE IF EXISTS search_postings")
        cursor.execute("DROP TABLE IF EXISTS search_postings_runs")
        cursor.execute("DROP TABLE IF EXISTS item_changes")


class Migration(migrations.Migration):
    dependencies = [("library", "0013_item_vectors")]
    operations = [migrations.RunPython(create, drop)]
