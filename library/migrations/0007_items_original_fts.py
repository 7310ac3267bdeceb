"""Creates the original-text index (docs/design.md "The indexes") and its vocabulary, and fills the index from the
items already stored, printing its progress: on a large library this takes a while. Each
item's redacted original, CJK characters spaced, with the digest `jezero check` compares;
the tokenizer is `storage.original_tokenizer`. Frozen SQL and the frozen `_v1_indexes`: this
migration does not run today's code (its postings come with 0014, `secure-delete` with 0016)."""

from django.db import migrations

from library.migrations._v1_indexes import configured_tokenizer, drop_fts, fill, original_row


def _drop(cursor):
    cursor.execute("DROP TABLE IF EXISTS items_original_vocab")
    drop_fts(cursor, "items_original_fts")


def create(apps, schema_editor):
    tokenizer = configured_tokenizer("original_tokenizer")
    with schema_editor.connection.cursor() as cursor:
        _drop(cursor)   # one made by the post-migrate check of a partly migrated, empty library
        cursor.execute(f"CREATE VIRTUAL TABLE items_original_fts USING fts5(text, digest UNINDEXED, content = '', "
                       f"contentless_delete = 1, contentless_unindexed = 1, tokenize = '{tokenizer}')")
        cursor.execute("CREATE VIRTUAL TABLE items_original_vocab USING fts5vocab(items_original_fts, 'row')")
        fill(cursor, "original-text index", "original", 500, original_row,
             "INSERT INTO items_original_fts(rowid, text, digest) VALUES (%s, %s, %s)")


def drop(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        _drop(cursor)


class Migration(migrations.Migration):
    dependencies = [("library", "0006_jobs")]
    operations = [migrations.RunPython(create, drop)]
