"""Django's SQLite backend, with opening and closing connections serialised in the process.

SQLite 3.51.1 (the bundled build) can deadlock when one thread opens a connection to a WAL
database while another closes one to the same file: `unixOpen` → `findReusableFd` and
`sqlite3_close` → `unixIsSharingShmNode` take the per-inode and global VFS mutexes in
opposite orders, and pysqlite3 holds the GIL while closing, so the whole server process
stops (bench/sqlite_deadlock.py reproduces it; bench/serve.py found it as a frozen worker
under concurrent API requests). Opening and closing are rare next to queries, so one lock
around both costs nothing measurable and removes the deadlock.
"""

import threading

from django.db.backends.sqlite3 import base

CONNECT_LOCK = threading.Lock()


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        with CONNECT_LOCK:
            return super().get_new_connection(conn_params)

    def _close(self):
        with CONNECT_LOCK:
            return super()._close()
