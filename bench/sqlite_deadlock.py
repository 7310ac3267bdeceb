#!/usr/bin/env python
"""Reproducer: threads that open and close connections to one WAL database deadlock in SQLite 3.51.1.

Found by bench/serve.py: a `jezero serve` worker froze (gunicorn WORKER TIMEOUT after 30 s) under
concurrent API requests. Each Django request under ASGI runs in its own thread and opens and
closes its own connection; in SQLite 3.51.1's unix VFS, `unixIsSharingShmNode()` (reached from
`sqlite3_close` → `sqlite3WalClose` → `unixLock`) takes the per-inode mutex and then the global
VFS mutex, while `sqlite3_open_v2` → `unixOpen` → `findReusableFd()` takes them in the opposite
order: an ABBA deadlock (see rusqlite/rusqlite#1860, gitbutlerapp/gitbutler#13026). pysqlite3
closes without releasing the GIL, so the whole process stops, not only the two threads.

    .venv/bin/python bench/sqlite_deadlock.py              # the bundled SQLite (as Jezero uses it)
    .venv/bin/python bench/sqlite_deadlock.py --stdlib     # the interpreter's own sqlite3, for comparison
    .venv/bin/python bench/sqlite_deadlock.py --lock       # connect/close under one process-wide lock
    .venv/bin/python bench/sqlite_deadlock.py --lock --drop   # connect under the lock, connections dropped
    .venv/bin/python bench/sqlite_deadlock.py --lock --drop --lock-finalizer   # … and closed by a locked __del__

Exit status 0: no hang within --seconds; 1: hung while a thread held the GIL (faulthandler's
watchdog, a C thread, prints every thread's Python stack and exits: "Timeout (0:00:10)!");
3: hung without holding the GIL.
"""

import argparse
import faulthandler
import os
import shutil
import tempfile
import threading
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--stdlib", action="store_true", help="the interpreter's sqlite3, not the bundled one")
    parser.add_argument("--lock", action="store_true", help="serialise connect() and close() with one lock")
    parser.add_argument("--drop", action="store_true",
                        help="never call close(): drop the connection, as happens to a thread's connection when "
                             "the thread ends (pysqlite3's finalizer closes it, outside any lock)")
    parser.add_argument("--lock-finalizer", action="store_true",
                        help="with --lock: connections made by a Connection subclass whose __del__ closes under the lock")
    args = parser.parse_args()
    if args.lock_finalizer and not args.lock:
        parser.error("--lock-finalizer needs --lock")
    if not args.stdlib:
        import harness  # noqa: F401  (puts the repository on sys.path)

        import jezero_site  # noqa: F401  (puts the bundled SQLite in place of sqlite3)
    import sqlite3

    folder = tempfile.mkdtemp(prefix="sqlite-deadlock-")
    path = os.path.join(folder, "t.sqlite3")
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE t(x)")
    con.execute("INSERT INTO t VALUES (1)")
    con.commit()
    con.close()
    print(f"SQLite {sqlite3.sqlite_version} ({sqlite3.__name__}), {args.threads} threads, "
          f"lock={'yes' if args.lock else 'no'}, close={'dropped' if args.drop else 'close()'}", flush=True)

    lock = threading.RLock() if args.lock else None  # re-entrant: a finalizer may run while it is held
    factory = sqlite3.Connection
    if args.lock_finalizer:
        class LockedClose(sqlite3.Connection):
            """A connection whose finalizer closes it under the lock (before pysqlite3's own close)."""

            def __del__(self):
                with lock:
                    self.close()

        factory = LockedClose
    cycles = [0]
    stop = threading.Event()

    def churn():  # what a Django request does: connect, init_command, a read, close
        while not stop.is_set():
            if lock:
                with lock:
                    c = sqlite3.connect(path, timeout=30, factory=factory)
            else:
                c = sqlite3.connect(path, timeout=30, factory=factory)
            c.execute("PRAGMA journal_mode=WAL")
            c.execute("SELECT x FROM t").fetchall()
            if args.drop:
                del c  # the last reference: closed here by the finalizer, whatever lock connect() takes
            elif lock:
                with lock:
                    c.close()
            else:
                c.close()
            cycles[0] += 1

    faulthandler.dump_traceback_later(10, exit=True)  # armed before the threads: the GIL may never return
    threads = [threading.Thread(target=churn, daemon=True) for _ in range(args.threads)]
    for thread in threads:
        thread.start()
    start, last, stuck = time.monotonic(), -1, False
    while time.monotonic() - start < args.seconds:
        time.sleep(2)
        if cycles[0] == last:
            stuck = True  # stuck while holding the GIL is caught by the watchdog; stuck without it, here
            break
        last = cycles[0]
        faulthandler.dump_traceback_later(10, exit=True)
    faulthandler.cancel_dump_traceback_later()
    if stuck:
        print(f"HUNG after {cycles[0]:,} open/close cycles", flush=True)
        faulthandler.dump_traceback(all_threads=True)
        os._exit(3)
    print(f"no hang: {cycles[0]:,} open/close cycles in {time.monotonic() - start:.0f} s", flush=True)
    stop.set()
    for thread in threads:
        thread.join(5)
    shutil.rmtree(folder, ignore_errors=True)
    os._exit(0)


if __name__ == "__main__":
    main()
