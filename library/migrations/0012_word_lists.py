"""Created the record word index's vocabulary and, until migration 0014 replaced them with
the postings of common terms, the common-word lists (nothing of them is made any more: 0014
drops them)."""

from django.db import migrations


def create(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE name = 'items_words_vocab'")
        if cursor.fetchone() is None:
            cursor.execute("CREATE VIRTUAL TABLE items_words_vocab USING fts5vocab(items_words, 'row')")


def drop(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS items_words_vocab")


class Migration(migrations.Migration):
    dependencies = [("library", "0011_items_words")]
    operations = [migrations.RunPython(create, drop)]
