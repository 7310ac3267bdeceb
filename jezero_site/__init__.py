"""Jezero's Django project: settings, URLs, ASGI/WSGI entry points and the `jezero` command.

Importing this package puts a current SQLite in place of the interpreter's own (see
`jezero_site.sqlite`), so it must stay the first thing any entry point imports.
"""

from jezero_site.sqlite import use_bundled_sqlite

use_bundled_sqlite()

from jezero_site.memory import keep_freed_memory  # noqa: E402

keep_freed_memory()

from library import __version__  # noqa: E402, F401  (the product's version; after the SQLite swap)
