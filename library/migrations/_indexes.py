"""What the migrations that add a full-text index share (a module whose name starts with `_`
is not a migration): fill the new index from the items already stored, printing progress."""

import sys
import time


def rebuild_with_progress(schema_editor, only):
    from library import store

    started = time.monotonic()
    shown = {"at": 0.0}

    def progress(label, done, total):
        now = time.monotonic()
        if total and (done == total or now - shown["at"] >= 2.0):
            shown["at"] = now
            sys.stdout.write(f"\n  {label}: {done:,}/{total:,} items ({now - started:.0f} s)")
            sys.stdout.flush()

    store.rebuild(using=schema_editor.connection.alias, only=only, progress=progress)
