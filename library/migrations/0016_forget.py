"""Forgetting for good (library.forget): tombstones of forgotten units with their segments'
hashes, the forget log; and the `secure-delete` option on every FTS5 table, so that deleted
text leaves the index at once. Frozen SQL for the option: this migration runs no code of
today's `store`."""

import django.utils.timezone
from django.db import migrations, models

FTS_TABLES = ("items_fts", "items_words", "items_original_fts", "items_words_fresh", "items_original_fts_fresh")


def secure_delete(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for table in FTS_TABLES:
            cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [table])
            if cursor.fetchone():
                cursor.execute(f"INSERT INTO {table}({table}, rank) VALUES ('secure-delete', 1)")


class Migration(migrations.Migration):
    dependencies = [("library", "0015_people")]

    operations = [
        migrations.CreateModel(
            name="Tombstone",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("source", models.CharField(max_length=200)),
                ("unit_id", models.CharField(max_length=1024)),
                ("forgotten_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={"db_table": "tombstones"},
        ),
        migrations.AddConstraint(
            model_name="tombstone",
            constraint=models.UniqueConstraint(fields=("source", "unit_id"), name="tombstone_unique"),
        ),
        migrations.CreateModel(
            name="ForgottenSegment",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("text_hash", models.CharField(db_index=True, max_length=64)),
                ("tombstone", models.ForeignKey(on_delete=models.deletion.CASCADE, related_name="segments",
                                                to="library.tombstone")),
            ],
            options={"db_table": "tombstone_hashes"},
        ),
        migrations.CreateModel(
            name="ForgetLog",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("at", models.DateTimeField(default=django.utils.timezone.now)),
                ("by", models.CharField(max_length=150)),
                ("how", models.CharField(max_length=20)),
                ("units", models.PositiveIntegerField(default=0)),
                ("items", models.PositiveIntegerField(default=0)),
            ],
            options={"db_table": "forget_log", "ordering": ["-at", "-id"]},
        ),
        migrations.RunPython(secure_delete, migrations.RunPython.noop),
    ]
