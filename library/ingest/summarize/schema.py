"""The record schema every provider answers with, and the loose checking of answers.

`RECORD_SCHEMA` is one JSON Schema for all providers: Anthropic gets it as the
`record_summary` tool's input schema, OpenAI-compatible servers as a strict `json_schema`
response format (hence `additionalProperties: false` and every property required, with
`project` nullable), and the others read it in the prompt.

`check_answer()` turns what a cheap model actually sent into a `Record` (docs/design.md "The summariser"): atoms
flattened to "kind: text" strings are recovered, an unknown kind becomes `fact`, lists sent
as JSON-encoded strings are decoded, surplus whitespace is trimmed and questions are cut to
six. A missing title or summary is a `SummaryError` that is not retried. Error messages
name the problem, never the answer's text.
"""

import json
import re

from library.ingest.summarize.base import Record, Summary, SummaryError
from library.vocabulary import ATOM_KINDS, SLUG_RE

TOOL_NAME = "record_summary"
MAX_QUESTIONS = 6

RECORD_SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "A short, specific title."},
        "summary": {"type": "string", "description": "2-5 sentences: the goal, what was done, the outcome."},
        "questions": {
            "type": "array",
            "items": {"type": "string"},
            "description": "3-6 questions someone might later ask that this document answers.",
        },
        "atoms": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": list(ATOM_KINDS)},
                    "text": {"type": "string",
                             "description": "One short sentence or snippet; errors and commands verbatim."},
                },
                "required": ["kind", "text"],
                "additionalProperties": False,
            },
        },
        "project": {"type": ["string", "null"],
                    "description": "A project slug, preferably a known project; null if unclear."},
    },
    "required": ["title", "summary", "questions", "atoms", "project"],
    "additionalProperties": False,
}

# "kind: text" where kind is a single word, possibly bulleted or bracketed ("- [error] …"),
# followed by a colon or a dash (hyphen, en dash, em dash).
_FLAT_ATOM_RE = re.compile(
    r"^\s*(?:[-*\u2022]\s+)?(?:\[(?P<bracketed>[A-Za-z]+)\]\s*:?|(?P<plain>[A-Za-z]+)\s*[:\u2013\u2014-])"
    r"\s+(?P<text>.+)$", re.DOTALL)
_LIST_MARKER_RE = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)\n\s*```", re.DOTALL)


def check_answer(data) -> Record:
    """Return the checked `Record` for an answer (a dict, or a JSON object as text).

    Raises `SummaryError` (not retryable) when the answer is not an object or lacks a
    title or a summary.
    """
    if isinstance(data, str):
        data = extract_json_object(data)
    if not isinstance(data, dict):
        raise SummaryError("the answer is not a JSON object")
    data = _unwrap(data)
    title = _line(data.get("title"))
    if not title:
        raise SummaryError("the answer has no title")
    summary = _line(data.get("summary"))
    if not summary:
        raise SummaryError("the answer has no summary")
    questions = [q for q in (_line(item) for item in _as_list(data.get("questions"))) if q]
    return Record(
        title=title,
        summary=summary,
        questions=questions[:MAX_QUESTIONS],
        atoms=_atoms(data.get("atoms")),
        project=normalise_project(data.get("project")),
    )


def extract_json_object(text):
    """The JSON object in `text`: the whole text, a ```json fence, or the first object in prose.

    Returns a dict, or None when there is none. Among several objects in prose the first
    one with a title or summary wins, else the first.
    """
    stripped = text.strip()
    candidates = [stripped, *(match.group(1) for match in _FENCE_RE.finditer(text))]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    found = []
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            if "title" in value or "summary" in value:
                return value
            found.append(value)
    return found[0] if found else None


def normalise_project(value):
    """A project slug (lowercase, spaces as '-'), or None when the value cannot be one."""
    if not isinstance(value, str):
        return None
    slug = re.sub(r"\s+", "-", value.strip().lower())
    if slug in ("", "null", "none", "unknown", "n/a"):
        return None
    return slug if SLUG_RE.match(slug) else None


def _unwrap(data):
    # Some models nest the record one level down: {"record_summary": {...}}.
    if "title" not in data and len(data) == 1:
        (inner,) = data.values()
        if isinstance(inner, dict):
            return inner
    return data


def _line(value):
    """A string with runs of whitespace collapsed to one space; '' for anything else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    return " ".join(value.split()) if isinstance(value, str) else ""


def _as_list(value):
    """A list from a list, a JSON-encoded list, or a bulleted/one-per-line string."""
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            try:
                decoded = json.loads(stripped)
            except ValueError:
                decoded = None
            if isinstance(decoded, list):
                return decoded
        return [_LIST_MARKER_RE.sub("", line) for line in stripped.splitlines() if line.strip()]
    if isinstance(value, dict):
        return [value]
    return []


def _atom_text(value):
    # Atoms keep their line breaks (multi-line errors, commands); only the ends and
    # trailing spaces go.
    if not isinstance(value, str):
        return ""
    return "\n".join(line.rstrip() for line in value.strip().splitlines())


def _known_kind(value):
    """The atom kind `value` names ("error", "Errors", " fixes "), or None."""
    kind = value.strip().lower() if isinstance(value, str) else ""
    for candidate in (kind, kind[:-1], kind[:-2]):
        if candidate in ATOM_KINDS:
            return candidate
    return None


def _atoms(value):
    atoms = []
    for item in _as_list(value):
        if isinstance(item, dict):
            kind = _known_kind(item.get("kind", item.get("type"))) or "fact"
            text = _atom_text(next((item[key] for key in ("text", "content", "value") if key in item), None))
        elif isinstance(item, str):
            kind, text = "fact", _atom_text(item)
            match = _FLAT_ATOM_RE.match(text)
            named = match and _known_kind(match["bracketed"] or match["plain"])
            if named:
                kind, text = named, _atom_text(match["text"])
        else:
            continue
        if text:
            atoms.append({"kind": kind, "text": text})
    return atoms


def summary_of(answer, *, summarizer, attempts, input_tokens, output_tokens):
    """A Summary from `answer()` (which extracts the record from a provider's response),
    checked loosely. A failed extraction or check raises SummaryError carrying the call's
    attempts and tokens, since a rejected answer was still paid for."""
    try:
        record = check_answer(answer())
    except SummaryError as error:
        error.attempts, error.input_tokens, error.output_tokens = attempts, input_tokens, output_tokens
        raise
    return Summary(record=record, summarizer=summarizer, input_tokens=input_tokens, output_tokens=output_tokens,
                   attempts=attempts)
