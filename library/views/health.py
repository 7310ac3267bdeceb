"""Plain HTTP views. /health is the only one that answers without a login."""

from django.db import DatabaseError, connection
from django.http import JsonResponse

import library
from library import indexes
from library.ingest import scheduling, sources


def health(request):
    """Version, database reachable, FTS present, worker heartbeat age in seconds (null when
    the worker never ran), and how many uploaded sessions wait under a source that no upload
    connector reads (they would never become items; the Sources page names them). 503 when
    the database cannot be read."""
    body = {"version": library.__version__, "database": False, "fts": False, "worker_heartbeat_age": None,
            "uploads_without_connector": None}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT name FROM sqlite_master WHERE name = %s", [indexes.RECORD_TABLE])
            body["fts"] = cursor.fetchone() is not None
        age = scheduling.heartbeat_age()
        body["worker_heartbeat_age"] = None if age is None else round(age)
        body["uploads_without_connector"] = sum(waiting.sessions for waiting in sources.waiting_uploads())
        body["database"] = True
    except DatabaseError:
        return JsonResponse({**body, "status": "error"}, status=503)
    body["status"] = "ok" if body["fts"] else "degraded"
    return JsonResponse(body, status=200 if body["fts"] else 503)
