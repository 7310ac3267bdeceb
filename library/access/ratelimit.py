"""Requests per minute per client for the API and MCP (docs/design.md "Clients and tokens": 429 when rate-limited).

A sliding window of request times per caller, kept in the server process: each server
worker counts its own requests, so the effective limit is at most workers × the setting —
enough to stop a runaway agent loop without a shared store. `JEZERO_API_RATE_PER_MINUTE`
(default 600; 0 turns it off).
"""

import math
import threading
import time
from collections import defaultdict, deque

from django.conf import settings

from library.errors import RateLimited

WINDOW = 60.0


class SlidingWindow:
    def __init__(self):
        self._hits = defaultdict(deque)
        self._lock = threading.Lock()

    def check(self, key, limit, now=None):
        """Count a request for `key`; raises RateLimited when it is over `limit` per minute."""
        if not limit:
            return
        now = time.monotonic() if now is None else now
        with self._lock:
            hits = self._hits[key]
            while hits and hits[0] <= now - WINDOW:
                hits.popleft()
            if len(hits) >= limit:
                raise RateLimited(max(1, math.ceil(hits[0] + WINDOW - now)))
            hits.append(now)


_window = SlidingWindow()


def check(key):
    _window.check(key, settings.JEZERO_API_RATE_PER_MINUTE)


def reset():
    """Forget every count (tests)."""
    _window._hits.clear()
