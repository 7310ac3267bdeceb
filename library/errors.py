"""Domain errors: what the caller asked for cannot be done, and why. Each adapter maps them
once — the CLI to a one-line message and exit code 1 (`library.cli`), the JSON API to a status
with `{"detail": …}` (`library.access.api`), MCP to a tool error (`library.access.mcp`), the
web pages to a message. The summariser's own `SummaryError` (a document that could not be
summarised: the unit is tried again next run) is not one of these: no caller sees it."""


class LibraryError(Exception):
    """Base class: something the caller asked for cannot be done."""


class BadInput(LibraryError):
    """The caller's input is malformed (a date that is not ISO 8601, a bad record)."""


class InvalidConnector(BadInput):
    """A connector added or edited from the web app or the CLI breaks the schema or a rule;
    `problems` maps each key at fault to what is wrong, for a form to show beside its field."""

    def __init__(self, problems):
        self.problems = dict(problems)
        super().__init__("; ".join(f"{key}: {message}" for key, message in self.problems.items()))


class InvalidSettings(BadInput):
    """Summariser settings given in the web app or the CLI break the schema or a rule;
    `problems` maps each key at fault to what is wrong, for a form to show beside its field."""

    def __init__(self, problems):
        self.problems = dict(problems)
        super().__init__("; ".join(f"{key}: {message}" for key, message in self.problems.items()))


class SummarizerTestFailed(LibraryError):
    """The summariser's test call (Settings → Test, `jezero summarizer test`) did not come back
    with a record; the message says why in plain words (a refused key, an unreachable server)."""


class NotFound(LibraryError):
    """No such item — or one the caller may not read, which is answered the same way."""


class NotConfigured(LibraryError):
    """The summariser needs a model, key or command and has none; the message says what to set."""


class RunRefused(LibraryError):
    """A connector run cannot start: unknown or disabled connector, no model configured, already running."""


class UploadRejected(LibraryError):
    """A device upload cannot be stored; `status` is the HTTP status that says why (413, 422)."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


class RateLimited(LibraryError):
    """A client asked too often; `retry_after` is how many seconds it should wait."""

    def __init__(self, retry_after):
        super().__init__(f"too many requests: try again in {retry_after} s")
        self.retry_after = retry_after
