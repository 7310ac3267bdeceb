"""ASGI entry point (gunicorn `-k asgi`)."""

import os

import jezero_site  # noqa: F401  (puts the bundled SQLite in place first)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jezero_site.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

application = get_asgi_application()
