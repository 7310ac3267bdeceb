"""Creates the common-word lists of the original-text and record word indexes (issue 15;
owned by library.wordlists) and the record word index's vocabulary, and builds the lists
from the indexes, printing progress."""

import sys
import time

from django.db import migrations


def create(apps, schema_editor):
    from library import store, wordlists

    with schema_editor.connection.cursor() as cursor:
        if not store.table_exists(cursor, store.WORDS_VOCAB):
            cursor.execute(f"CREATE VIRTUAL TABLE {store.WORDS_VOCAB} USING fts5vocab({store.WORDS_TABLE}, 'row')")
        for lists in wordlists.ALL:
            wordlists.create(cursor, lists)
    started = time.monotonic()
    shown = {"at": 0.0}

    def progress(label, done, total):
        now = time.monotonic()
        if done == total or now - shown["at"] >= 2.0:
            shown["at"] = now
            sys.stdout.write(f"\n  {label}: {done:,}/{total:,} words ({now - started:.0f} s)")
            sys.stdout.flush()

    wordlists.refresh_all(using=schema_editor.connection.alias, progress=progress)


def drop(apps, schema_editor):
    from library import store, wordlists

    with schema_editor.connection.cursor() as cursor:
        for lists in wordlists.ALL:
            wordlists.drop(cursor, lists)
        cursor.execute(f"DROP TABLE IF EXISTS {store.WORDS_VOCAB}")


class Migration(migrations.Migration):
    dependencies = [("library", "0011_items_words")]
    operations = [migrations.RunPython(create, drop)]
