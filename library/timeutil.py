"""Dates in and out: parsing what people and agents type, and the one output format.

Everything stored is UTC. A bare date or a datetime without an offset is read as UTC
(docs/design.md "Filters"); output is ISO 8601 with a `Z`.
"""

from datetime import UTC, date, datetime, time

from library.errors import BadInput

# The dates any caller may give (a filter, an imported record's time): wide enough for any
# real record, narrow enough that no offset or arithmetic on them can leave datetime's range.
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)   # exclusive
RANGE_TEXT = "1900-01-01 to 2199-12-31"


def parse_when(value, name="date"):
    """A datetime (aware, UTC) from a datetime, a date, or an ISO 8601 string; None stays None.

    Raises BadInput naming `name` when the string is not ISO 8601, or the moment is outside
    EARLIEST..LATEST.
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime.combine(value, time.min)
    elif isinstance(value, str):
        text = value.strip()
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise BadInput(f"{name}: {value!r} is not an ISO 8601 date or datetime") from None
    else:
        raise BadInput(f"{name}: {value!r} is not an ISO 8601 date or datetime")
    try:
        parsed = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except OverflowError:   # an offset that moves it past year 1 or 9999
        parsed = None
    if parsed is None or not EARLIEST <= parsed < LATEST:
        raise BadInput(f"{name}: {value!r} is out of range ({RANGE_TEXT})")
    return parsed


def iso(value):
    """`2026-11-29T20:40:13Z` (microseconds when there are any); None stays None."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def from_db(value):
    """A timestamp read with a raw cursor (UTC without an offset; Django's converter may
    already have made it a naive datetime) → aware datetime."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC)
