"""Which items a read may see: the caller's allowed sources and the `source`, `project`,
`since` and `until` a search, `later` or `timeline` asks for, as one value (`Filters`).

One definition, read two ways: as SQL over `items` (alias i) by timeline, later, the
records-only search and the exhaustive search (`Filters.sql`), and as arrays over the
item catalog by the fast search (`library.catalog`); the differential test holds them equal.
A source outside the caller's globs does not exist for that caller.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatchcase

from django.db import connection

from library.errors import BadInput
from library.timeutil import parse_when
from library.vocabulary import SOURCE_GLOB_RE

ALL_SOURCES = ("*",)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def micros(moment):
    """Microseconds since 1970 of an aware datetime (exact: integer arithmetic)."""
    return (moment - EPOCH) // _MICROSECOND


@dataclass(frozen=True)
class Filters:
    """The items a read may see. `sources`: the source names allowed (None: every source);
    `since` inclusive and `until` exclusive, aware UTC datetimes; `empty`: nothing can match
    (a source the caller may not read, or no source allowed)."""

    sources: frozenset | None = None
    project: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    exclude_id: int | None = None
    empty: bool = False

    @property
    def narrows(self):
        """Whether anything narrows the library (else every item passes)."""
        return (self.sources is not None or self.project is not None or self.since is not None
                or self.until is not None or self.exclude_id is not None)

    @property
    def sql(self):
        """The conditions on `items AS i`, "" for none (params: `params`)."""
        return self._sql()[0]

    @property
    def params(self):
        return self._sql()[1]

    def _sql(self):
        conditions, params = [], []
        if self.sources is not None:
            names = sorted(self.sources)
            conditions.append(f"i.source IN ({', '.join('%s' for _ in names)})" if len(names) != 1 else "i.source = %s")
            params.extend(names)
        if self.project is not None:
            conditions.append("i.project = %s")
            params.append(self.project)
        adapt = connection.ops.adapt_datetimefield_value
        if self.since is not None:
            conditions.append("i.occurred_at >= %s")
            params.append(adapt(self.since))
        if self.until is not None:
            conditions.append("i.occurred_at < %s")
            params.append(adapt(self.until))
        if self.exclude_id is not None:
            conditions.append("i.id <> %s")
            params.append(self.exclude_id)
        return " AND ".join(conditions), params


NOTHING = Filters(empty=True)


def build(allowed_sources, *, project=None, source=None, since=None, until=None, exclude_id=None):
    """The Filters of a read: the caller's allowed-source globs and what it asks for. Raises
    BadInput for a `since` or `until` that is not a date."""
    allowed = visible_sources(allowed_sources)
    if source is not None:
        if allowed is not None and source not in allowed:
            return NOTHING
        allowed = frozenset([source])
    elif allowed is not None and not allowed:
        return NOTHING
    return Filters(sources=None if allowed is None else frozenset(allowed), project=project,
                   since=parse_when(since, "since"), until=parse_when(until, "until"), exclude_id=exclude_id)


def visible_sources(allowed_sources):
    """The library's source names that these globs allow (case-sensitive), or None for all.

    A glob of exactly "*" short-cuts to None so the common case costs no query.
    """
    globs = list(allowed_sources or ())
    if "*" in globs:
        return None
    if not globs:
        return set()
    return {name for name in library_sources() if any(fnmatchcase(name, glob) for glob in globs)}


def library_sources():
    """Every distinct source name, found by skipping through the index (one probe per name)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH RECURSIVE s(name) AS ("
            " SELECT min(source) FROM items"
            " UNION ALL SELECT (SELECT min(source) FROM items WHERE source > s.name) FROM s"
            " WHERE s.name IS NOT NULL)"
            " SELECT name FROM s WHERE name IS NOT NULL"
        )
        return [row[0] for row in cursor.fetchall()]


def source_names(allowed_sources):
    """The library's source names these globs allow, sorted: what a caller may filter by (the
    pages' source lists)."""
    allowed = visible_sources(allowed_sources)
    return library_sources() if allowed is None else sorted(allowed)


def is_visible(source, allowed_sources):
    return any(fnmatchcase(source, glob) for glob in allowed_sources or ())


def parse_globs(value, what="--sources"):
    """Allowed-source globs (a client's, a person's) from names separated by commas or a list;
    returns the list, in order, without duplicates. Each glob is made of what a source name
    holds and the glob characters `* ? [ ] !`. Raises BadInput naming `what` and the first
    glob that is not one (`agent-* mail-*`, a space for a comma, say)."""
    globs = [part.strip() for part in value.split(",")] if isinstance(value, str) else list(value or [])
    globs = [glob for glob in globs if glob != ""]
    for glob in globs:
        if not isinstance(glob, str) or not SOURCE_GLOB_RE.match(glob):
            raise BadInput(f"{what}: {glob!r} is not a source name or glob (letters, digits, '.', '_', '-' "
                           "and the wildcards * ? [ ])")
    return list(dict.fromkeys(globs))
