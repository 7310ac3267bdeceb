"""Creates the FTS5 mirror of items (owned by library.store) with the configured tokenizer."""

from django.db import migrations


def create(apps, schema_editor):
    from library import store

    store.create_index(using=schema_editor.connection.alias)


def drop(apps, schema_editor):
    from library import store

    schema_editor.execute(f"DROP TABLE IF EXISTS {store.FTS_TABLE}")


class Migration(migrations.Migration):
    dependencies = [("library", "0001_initial")]
    operations = [migrations.RunPython(create, drop)]
