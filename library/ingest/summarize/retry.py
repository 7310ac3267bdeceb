"""The retry policy for model calls (docs/design.md "Calls and retries"), the only one: the SDKs' own retries are off.

Network errors (refused, reset, timed out) and HTTP 408, 409, 429 and 5xx are retried, up
to `MAX_ATTEMPTS` calls in all, waiting 2, 4, 8 and 16 seconds plus up to one second of
random jitter, or the server's `Retry-After` when that is longer. Anything else fails at
once. A `Retry-After` beyond `MAX_RETRY_AFTER` is not waited for: a worker thread would sit
idle for it, and the next run tries the document again anyway.

The loop is tenacity's; the sleep function and the jitter source are passed in so tests
can record the waits instead of sleeping them.
"""

import logging
import random
import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from tenacity import Retrying, retry_if_exception, stop_after_attempt

from library.ingest.summarize.base import SummaryError

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
FIRST_WAIT = 2.0        # then doubled: 2, 4, 8, 16
MAX_JITTER = 1.0
MAX_RETRY_AFTER = 60.0
RETRYABLE_STATUSES = frozenset({408, 409, 429})


def is_retryable_status(status):
    return status in RETRYABLE_STATUSES or status >= 500


def backoff(attempt, uniform):
    """The wait after failed attempt number `attempt` (1-based), before any Retry-After."""
    return FIRST_WAIT * 2 ** (attempt - 1) + uniform(0, MAX_JITTER)


def parse_retry_after(headers, now=None):
    """Seconds from `retry-after-ms` or `Retry-After` (seconds or an HTTP date), else None."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


def api_error(exc, sdk, provider):
    """The `SummaryError` for an exception raised by the `anthropic` or `openai` SDK.

    Both SDKs share the shape: `APIConnectionError` (and its `APITimeoutError`) for network
    failures, `APIStatusError` with `status_code` and `response` for HTTP errors. The
    message names the status and the API's error type, never its free-text message,
    which some servers fill with the request they rejected.
    """
    if isinstance(exc, sdk.APIConnectionError):
        kind = "timed out" if isinstance(exc, sdk.APITimeoutError) else "could not connect"
        return SummaryError(f"{provider}: the call {kind}", retryable=True)
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        detail = _error_type(exc.body)
        message = f"{provider}: HTTP {status} {type(exc).__name__}" + (f" ({detail})" if detail else "")
        if not is_retryable_status(status):
            return SummaryError(message)
        return SummaryError(message, retryable=True, retry_after=parse_retry_after(exc.response.headers))
    return SummaryError(f"{provider}: {type(exc).__name__}")


def call_with_retries(call, *, sleep=time.sleep, uniform=random.uniform, label="summarizer",
                      max_attempts=MAX_ATTEMPTS):
    """Run `call()` under the policy; return `(its result, attempts made)`. `max_attempts`
    of 1 makes one call and no retry (the Settings page's test of the summariser).

    `call` raises `SummaryError`; a retryable one is tried again while attempts remain and
    the server's Retry-After is acceptable. The error that ends the loop is re-raised with
    its `attempts` set.
    """
    def wait(state):
        error = state.outcome.exception()
        return max(backoff(state.attempt_number, uniform), error.retry_after or 0.0)

    def should_retry(error):
        return (isinstance(error, SummaryError) and error.retryable
                and (error.retry_after is None or error.retry_after <= MAX_RETRY_AFTER))

    def before_sleep(state):
        log.warning("model call failed, retrying label=%s attempt=%d wait=%.1fs error=%s",
                    label, state.attempt_number, state.upcoming_sleep, state.outcome.exception())

    retrying = Retrying(stop=stop_after_attempt(max_attempts), wait=wait, retry=retry_if_exception(should_retry),
                        sleep=sleep, before_sleep=before_sleep, reraise=True)
    attempt = None
    try:
        for attempt in retrying:
            with attempt:
                result = call()
    except SummaryError as error:
        error.attempts = attempt.retry_state.attempt_number
        raise
    return result, attempt.retry_state.attempt_number


def _error_type(body):
    # Anthropic keeps the whole body, {"error": {"type": "rate_limit_error", ...}}; OpenAI
    # keeps only the inner {"code": ..., "type": ...}.
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict):
        for key in ("type", "code"):
            value = error.get(key)
            if isinstance(value, str) and len(value) <= 64:
                return value
    return None
