"""WSGI entry point, for servers without ASGI (MCP needs ASGI; prefer asgi.py)."""

import os

import jezero_site  # noqa: F401  (puts the bundled SQLite in place first)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jezero_site.settings")

from django.core.wsgi import get_wsgi_application  # noqa: E402

application = get_wsgi_application()
