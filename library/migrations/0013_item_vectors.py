"""Creates the item vectors of the search by meaning (docs/design.md "Meaning") and makes them for every item
already stored, printing progress. Frozen: the tables in SQL and the embedding of the frozen
`_v1_vectors` (the packaged wordllama model); this migration does not run today's
`library.meaning`."""

from django.db import migrations

from library.migrations import _v1_vectors


def create(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        _v1_vectors.create(cursor)
        _v1_vectors.fill(cursor)


def drop(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        _v1_vectors.drop(cursor)


class Migration(migrations.Migration):
    dependencies = [("library", "0012_word_lists")]
    operations = [migrations.RunPython(create, drop)]
