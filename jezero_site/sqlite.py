"""Makes `import sqlite3` give a SQLite that has FTS5's `trigram remove_diacritics 1`.

That option needs SQLite >= 3.45; many systems (Debian 12 has 3.40) ship older. The wheels
`pysqlite3-binary` (Linux x86_64) and `sqlean.py` (aarch64, macOS) bundle a current SQLite
with the same DB-API as the standard module. Django's sqlite backend does
`from sqlite3 import dbapi2`, so the swap has to happen in `sys.modules` before that backend
is first imported: a backend subclass that only replaces `Database` keeps the old library
for everything Django does behind its back (introspection, test databases, Huey).
"""

import importlib
import sys

# The candidates, best first: (package, its DB-API module).
_BUNDLED = (("pysqlite3", "pysqlite3.dbapi2"), ("sqlean", "sqlean.dbapi2"))


def use_bundled_sqlite():
    """Install the first bundled SQLite found as `sqlite3`; returns its module name or None.

    Idempotent. When none is installed the standard library's module stays; the system
    check `jezero.E001` then says what is missing if the configured tokenizer needs more.
    """
    for package, dbapi in _BUNDLED:
        try:
            pkg = importlib.import_module(package)
            mod = importlib.import_module(dbapi)
        except ImportError:
            continue
        sys.modules["sqlite3"] = pkg
        sys.modules["sqlite3.dbapi2"] = mod
        return package
    return None
