"""Creates the record word index (issue 15; owned by library.store) and fills it from the
items already stored, printing its progress (about 10,000 items a second)."""

import sys
import time

from django.db import migrations


def create(apps, schema_editor):
    from library import store

    started = time.monotonic()
    shown = {"at": 0.0}

    def progress(label, done, total):
        now = time.monotonic()
        if total and (done == total or now - shown["at"] >= 2.0):
            shown["at"] = now
            sys.stdout.write(f"\n  {label}: {done:,}/{total:,} items ({now - started:.0f} s)")
            sys.stdout.flush()

    store.rebuild(using=schema_editor.connection.alias, only="words", progress=progress)


def drop(apps, schema_editor):
    from library import store

    store.drop_words_index(using=schema_editor.connection.alias)


class Migration(migrations.Migration):
    dependencies = [("library", "0010_summarizer_settings")]
    operations = [migrations.RunPython(create, drop)]
