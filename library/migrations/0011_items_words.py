"""Creates the record word index (docs/design.md "The indexes") and fills it from the items already stored,
printing its progress (about 10,000 items a second): the record's five columns as the record
index holds them, CJK characters spaced, with the digest of the record text `jezero check`
compares; the tokenizer is `storage.original_tokenizer`. Frozen SQL and the frozen
`_v1_indexes`: this migration does not run today's code (its vocabulary comes with 0012,
its postings with 0014, `secure-delete` with 0016)."""

from django.db import migrations

from library.migrations._v1_indexes import configured_tokenizer, drop_fts, fill, words_row


def create(apps, schema_editor):
    tokenizer = configured_tokenizer("original_tokenizer")
    with schema_editor.connection.cursor() as cursor:
        drop_fts(cursor, "items_words")   # one made by the post-migrate check of a partly migrated, empty library
        cursor.execute(f"CREATE VIRTUAL TABLE items_words USING fts5(title, summary, questions, atoms, project, "
                       f"digest UNINDEXED, content = '', contentless_delete = 1, contentless_unindexed = 1, "
                       f"tokenize = '{tokenizer}')")
        fill(cursor, "record word index", "title, summary, questions, atoms, project", 2_000, words_row,
             "INSERT INTO items_words(rowid, title, summary, questions, atoms, project, digest) "
             "VALUES (%s, %s, %s, %s, %s, %s, %s)")


def drop(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        drop_fts(cursor, "items_words")


class Migration(migrations.Migration):
    dependencies = [("library", "0010_summarizer_settings")]
    operations = [migrations.RunPython(create, drop)]
