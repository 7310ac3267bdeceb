"""Domain errors, mapped once per adapter (CLI exit codes now; HTTP statuses and MCP tool
errors later)."""


class LibraryError(Exception):
    """Base class: something the caller asked for cannot be done."""


class BadInput(LibraryError):
    """The caller's input is malformed (a date that is not ISO 8601, a bad record)."""


class NotFound(LibraryError):
    """No such item — or one the caller may not read, which is answered the same way."""
