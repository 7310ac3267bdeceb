"""Creates the item vectors of the search by meaning (issue 16; owned by library.meaning) and
makes one for every item already stored, printing progress."""

from django.db import migrations

from library.migrations._indexes import rebuild_with_progress


def create(apps, schema_editor):
    rebuild_with_progress(schema_editor, only="meaning")


def drop(apps, schema_editor):
    from library import meaning

    with schema_editor.connection.cursor() as cursor:
        meaning.drop(cursor)


class Migration(migrations.Migration):
    dependencies = [("library", "0012_word_lists")]
    operations = [migrations.RunPython(create, drop)]
