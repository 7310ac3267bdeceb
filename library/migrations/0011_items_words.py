"""Creates the record word index (issue 15; owned by library.store) and fills it from the
items already stored, printing its progress (about 10,000 items a second)."""

from django.db import migrations

from library.migrations._indexes import rebuild_with_progress


def create(apps, schema_editor):
    rebuild_with_progress(schema_editor, "words")


def drop(apps, schema_editor):
    from library import store

    store.drop_words_index(using=schema_editor.connection.alias)


class Migration(migrations.Migration):
    dependencies = [("library", "0010_summarizer_settings")]
    operations = [migrations.RunPython(create, drop)]
