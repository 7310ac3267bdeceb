"""The summariser's contract: what goes in, what comes out, and the two ways it fails.

A provider takes a `SummaryRequest` and returns a `Summary` holding a checked `Record`, or
raises `SummaryError`. `NotConfigured` is raised earlier, when a provider is built without
something it needs, so that a connector run can refuse to start with a message that says
what to set. Nothing here imports an SDK.
"""

from dataclasses import dataclass

from library.errors import NotConfigured  # noqa: F401  (part of the summariser's contract)


@dataclass(frozen=True)
class SummaryRequest:
    document: str                  # the segment's rendered, already-redacted text
    title_hint: str | None = None  # the source's title, may end with " (part n/m)"
    context: str | None = None     # one line: source name + connector metadata
    blocks: tuple = ()             # ((role, text), ...) of the segment, for the extractive provider


@dataclass(frozen=True)
class Record:
    """A checked answer: title and summary are non-empty, atoms have known kinds."""

    title: str
    summary: str
    questions: list[str]
    atoms: list[dict]              # [{"kind": one of ATOM_KINDS, "text": str}]
    project: str | None            # a slug, or None


@dataclass(frozen=True)
class Summary:
    record: Record
    summarizer: str                # "anthropic:<model>", "openai:<model>", "command:<model>", "extractive"
    input_tokens: int
    output_tokens: int
    attempts: int                  # 1 + retries


class SummaryError(Exception):
    """The document could not be summarised; its unit's cursor must stay.

    The message is safe to log: it never holds document text or the model's answer.
    `retryable` says the failure was of a transient kind (network, HTTP 408/409/429/5xx),
    so it was retried until the attempts ran out; `attempts` counts the calls made and the
    token counts are what those calls cost (a bad answer still costs its tokens).
    """

    def __init__(self, message, *, retryable=False, retry_after=None, attempts=1, input_tokens=0, output_tokens=0):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after  # seconds the server asked us to wait, if it said
        self.attempts = attempts
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens


class Summarizer:
    """One provider, built once per run and shared by the run's worker threads.

    `summarize()` is thread-safe: it keeps no per-call state on the instance. It returns a
    `Summary` or raises `SummaryError`; it never raises anything else for a bad answer or
    a failed call. `close()` releases the provider's HTTP connections (idempotent).
    """

    name: str

    def summarize(self, request: SummaryRequest) -> Summary:
        raise NotImplementedError

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
