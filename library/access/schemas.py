"""The shapes of answers, shared by the JSON API (OpenAPI) and MCP (structured tool output),
so both describe exactly what `library.search` returns."""

from ninja import Schema


class ItemRow(Schema):
    id: int
    key: str
    title: str
    summary: str
    project: str | None
    source: str
    trust: str
    occurred_at: str
    score: float | None = None


class SearchRow(ItemRow):
    matched_in: list[str]
    snippet: str


class SearchOut(Schema):
    query: str
    match: str | None
    original_match: str | None
    records_only: bool
    results: list[SearchRow]


class Atom(Schema):
    kind: str
    text: str


class ItemOut(Schema):
    id: int
    key: str
    source: str
    original_ref: str
    title: str
    summary: str
    questions: list[str]
    atoms: list[Atom]
    project: str | None
    trust: str
    occurred_at: str
    ingested_at: str
    updated_at: str
    text_hash: str
    hints: dict
    summarizer: str
    input_tokens: int
    output_tokens: int
    original: str | None = None


class LaterOut(Schema):
    item_id: int
    matched_by: str
    heading: str
    results: list[ItemRow]


class TimelineOut(Schema):
    results: list[ItemRow]


class InjectionOut(Schema):
    project: str | None
    context: str


class SessionStartIn(Schema):
    cwd: str | None = None
    session_id: str | None = None
    project: str | None = None
    git_remote: str | None = None


class FirstPromptIn(Schema):
    prompt: str
    session_id: str | None = None
    cwd: str | None = None
    project: str | None = None
    git_remote: str | None = None


class UploadOut(Schema):
    source: str
    session_id: str
    agent: str
    version: int
    entries: int
    size: int
    replaced: bool


class ErrorOut(Schema):
    detail: str


def later_dict(result):
    return {**result.as_dict(), "heading": result.heading}
