"""Django's SQLite backend, with opening and closing connections serialised in the process.

SQLite 3.51.1 (the bundled build) can deadlock when one thread opens a connection to a WAL
database while another closes one to the same file: `unixOpen` → `findReusableFd` and
`sqlite3_close` → `unixIsSharingShmNode` take the per-inode and global VFS mutexes in
opposite orders, and pysqlite3 holds the GIL while closing, so the whole server process
stops (bench/sqlite_deadlock.py reproduces it; bench/serve.py found it as frozen workers
under concurrent API requests). One lock around opening and every close removes it — every
close includes the ones nobody calls: under ASGI a request's thread can end with its
connection still open, and the connection's finalizer closes it then. `LockedConnection`
makes that finalizer take the lock too. The lock is re-entrant because a finalizer can run
(garbage collection) in a thread that already holds it.

A connection that failed to open (a folder in the database's place, a file the process may
not read) is finalised too, and the driver's `close` on it crashes the process (a
segmentation fault, no message): the finalizer closes only a connection that opened, so the
caller gets the driver's "unable to open database file".
"""

import threading

from django.db.backends.sqlite3 import base

CONNECT_LOCK = threading.RLock()


class LockedConnection(base.Database.Connection):
    """A connection whose finalizer closes it under CONNECT_LOCK, before the driver's own
    (unlocked) close on deallocation would."""

    opened = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.opened = True

    def close(self):
        with CONNECT_LOCK:
            super().close()

    def __del__(self):
        if self.opened:
            self.close()


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self):
        return {**super().get_connection_params(), "factory": LockedConnection}

    def get_new_connection(self, conn_params):
        with CONNECT_LOCK:
            return super().get_new_connection(conn_params)
