"""Creates the original-text index (SPEC §7a, owned by library.store) and fills it from the
items already stored, printing its progress: on a large library this takes a while."""

from django.db import migrations

from library.migrations._indexes import rebuild_with_progress


def create(apps, schema_editor):
    rebuild_with_progress(schema_editor, "original")


def drop(apps, schema_editor):
    from library import store

    store.drop_original_index(using=schema_editor.connection.alias)


class Migration(migrations.Migration):
    dependencies = [("library", "0006_jobs")]
    operations = [migrations.RunPython(create, drop)]
