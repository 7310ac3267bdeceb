"""Small text and time helpers every connector uses: text that is safe to hash and store,
the first line of a text, and the times sources write (ISO 8601 strings, epoch numbers).
All are pure functions that never raise for bad input. No Django here.
"""

import math
from datetime import UTC, datetime

# How long `one_line` keeps a line by default: a tool line's detail (docs/design.md "Connectors": one short line).
ONE_LINE_CHARS = 300
_EPOCH_MAX = 4_102_444_800      # 2100-01-01: a larger "seconds" value is garbage (or milliseconds)


def safe_text(text):
    """`text` encodable as UTF-8: JSON may carry lone surrogates (a string cut mid-emoji),
    which would break hashing and storage later; they become U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def whole_words(line, limit):
    """`line` if it fits in `limit` characters, else its first `limit` characters less the word
    the cut falls in, with an ellipsis. Connectors cut before redaction runs: what is kept of a
    word at the cut (a key, a password) is none of it, never its first characters (docs/design.md "Redaction")."""
    if len(line) <= limit:
        return line
    head = line[: limit - 1]
    if not line[limit - 1].isspace():
        space = max(head.rfind(" "), head.rfind("\t"))
        head = head[:space] if space > 0 else ""
    return head.rstrip() + "…"


def one_line(text, limit=ONE_LINE_CHARS):
    """The first non-blank line of `text`, cut between words to `limit` characters (see
    `whole_words`); "" when `text` is not a string."""
    if not isinstance(text, str):
        return ""
    return whole_words(next((part.strip() for part in text.splitlines() if part.strip()), ""), limit)


def parse_time(value):
    """An ISO 8601 string as an aware UTC datetime; naive means UTC; None when unusable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError):   # not ISO 8601, or an offset past year 1 or 9999
        return None


def epoch_time(value, *, millis=False):
    """Epoch seconds (or milliseconds) as an aware UTC datetime; None when unusable (not a
    number, not finite, before 1970 or after 2100)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    seconds = value / 1000 if millis else value
    if not math.isfinite(seconds) or not 0 < seconds < _EPOCH_MAX:
        return None
    return datetime.fromtimestamp(seconds, tz=UTC)
