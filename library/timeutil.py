"""Dates in and out: parsing what people and agents type, and the one output format.

Everything stored is UTC. A bare date or a datetime without an offset is read as UTC
(SPEC §7); output is ISO 8601 with a `Z`.
"""

from datetime import UTC, date, datetime, time

from library.errors import BadInput


def parse_when(value, name="date"):
    """A datetime (aware, UTC) from a datetime, a date, or an ISO 8601 string; None stays None.

    Raises BadInput naming `name` when the string is not ISO 8601.
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
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


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
