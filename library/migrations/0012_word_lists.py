"""Creates the common-word lists of the original-text index (issue 15; owned by
library.wordlists) and builds them from the index, printing progress."""

import sys
import time

from django.db import migrations


def create(apps, schema_editor):
    from library import wordlists

    with schema_editor.connection.cursor() as cursor:
        wordlists.create(cursor)
    started = time.monotonic()
    shown = {"at": 0.0}

    def progress(done, total):
        now = time.monotonic()
        if done == total or now - shown["at"] >= 2.0:
            shown["at"] = now
            sys.stdout.write(f"\n  {wordlists.LABEL}: {done:,}/{total:,} words ({now - started:.0f} s)")
            sys.stdout.flush()

    wordlists.refresh(using=schema_editor.connection.alias, progress=progress)


def drop(apps, schema_editor):
    from library import wordlists

    with schema_editor.connection.cursor() as cursor:
        wordlists.drop(cursor)


class Migration(migrations.Migration):
    dependencies = [("library", "0011_items_words")]
    operations = [migrations.RunPython(create, drop)]
