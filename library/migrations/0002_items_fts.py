"""Creates the record index `items_fts` (docs/design.md "The indexes"), empty (the items table is new), with the
configured tokenizer (`storage.tokenizer`). Frozen SQL: this migration does not run today's
code (`library.store` keeps the index from here on; `secure-delete` comes with 0016)."""

from django.db import migrations

from library.migrations._v1_indexes import configured_tokenizer, drop_fts


def create(apps, schema_editor):
    tokenizer = configured_tokenizer("tokenizer")
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"CREATE VIRTUAL TABLE items_fts USING fts5(title, summary, questions, atoms, project, "
                       f"tokenize = '{tokenizer}')")


def drop(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        drop_fts(cursor, "items_fts")


class Migration(migrations.Migration):
    dependencies = [("library", "0001_initial")]
    operations = [migrations.RunPython(create, drop)]
