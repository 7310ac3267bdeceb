"""The shapes of answers, shared by the JSON API (OpenAPI) and MCP (structured tool output),
so both describe exactly what `library.search` returns, and the one error shape.

The answers are plain pydantic models: they are built from dicts, never from ORM objects,
so they need none of ninja's `Schema` attribute resolution, which costs 186 µs to check one
page of ten search results against 21 µs here — paid on every API answer and twice on every
MCP answer (the tool, then the SDK against the output schema). The request bodies stay
ninja `Schema`s. Their JSON Schema, and so the OpenAPI document and the MCP tools' output
schemas, are the same either way."""

from ninja import Schema
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

# A date or date-time as the `since` / `until` filters take it (ISO 8601; UTC without an offset).
ISO_DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$"


class ItemRow(BaseModel):
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
    matched_in: list[str] = Field(description='where it matched: "record", "original" (what was said) and '
                                              '"meaning" (what was said is among the closest to the query\'s meaning)')
    snippet: str


class SearchOut(BaseModel):
    query: str
    match: str | None
    original_match: str | None
    records_only: bool
    results: list[SearchRow]
    hint: str | None = None   # why there are no results, or that common words were listed by date


class AgentSearchRow(SearchRow):
    """A search result as MCP gives it to an agent: without the ranking score, a number no
    model can use (the order says the same)."""

    score: SkipJsonSchema[float | None] = Field(None, exclude=True)


class AgentSearchOut(SearchOut):
    """The search answer as MCP gives it to an agent, whose client (Codex, Claude Code) hands
    the model this JSON: without the FTS5 expressions the query became (`match`,
    `original_match`: internals a model cannot act on) and the scores; the API keeps them."""

    match: SkipJsonSchema[str | None] = Field(None, exclude=True)
    original_match: SkipJsonSchema[str | None] = Field(None, exclude=True)
    results: list[AgentSearchRow]


class Atom(BaseModel):
    kind: str
    text: str


class ItemOut(BaseModel):
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


class LaterOut(BaseModel):
    item_id: int
    matched_by: str
    heading: str
    results: list[ItemRow]


class TimelineOut(BaseModel):
    results: list[ItemRow]
    hint: str | None = Field(None, description="When there are no results although sessions were uploaded: why, and "
                                               "when they become readable.")


class InjectionOut(BaseModel):
    project: str | None
    context: str


_CWD = "The session's working folder: gives the project by the project rules when `project` is left out."
_SESSION = "The agent's session id (not used to choose what is shown)."
_PROJECT = "The project's slug, overriding the project rules."
_REMOTE = "The working folder's git remote URL (a project hint)."


class SessionStartIn(Schema):
    model_config = ConfigDict(extra="forbid")   # a field no hook sends is a mistake: 422 names it

    cwd: str | None = Field(None, description=_CWD)
    session_id: str | None = Field(None, description=_SESSION)
    project: str | None = Field(None, description=_PROJECT)
    git_remote: str | None = Field(None, description=_REMOTE)


class FirstPromptIn(Schema):
    model_config = ConfigDict(extra="forbid")   # a field no hook sends is a mistake: 422 names it

    prompt: str = Field(description="The session's first message, as the person typed it (its beginning is read).")
    session_id: str | None = Field(None, description=_SESSION)
    cwd: str | None = Field(None, description=_CWD)
    project: str | None = Field(None, description=_PROJECT)
    git_remote: str | None = Field(None, description=_REMOTE)


class UploadOut(BaseModel):
    source: str
    session_id: str
    agent: str
    version: int
    entries: int
    size: int
    replaced: bool


class ErrorOut(BaseModel):
    """Every error the JSON API answers, whatever its status (validation errors included)."""

    detail: str = Field(description="What went wrong, in one sentence; for a 422, the parameter or body field "
                                    "named first (`limit: Input should be less than or equal to 50`).")


def later_dict(result):
    return {**result.as_dict(), "heading": result.heading}
