"""Items as plain records: the dict every adapter shows, a summary written onto an item, and
JSONL import/export.

`item_dict` is the one serialisation of an item (docs/design.md "Items") used by `get_item` and so by the
CLI, the JSON API, MCP and the item page. `write_record` is the one way a summary's record is
written onto an item (the pipeline and re-summarising both use it). `import_jsonl` validates a whole file before it writes anything and
then writes every line in one transaction: any bad line → every bad line is reported with
its line number and nothing changes. `export_jsonl` writes the inverse, so an export
imported into an empty library exports to the same bytes.
"""

import hashlib
import json
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from library import forget
from library.errors import BadInput
from library.ingest import projects
from library.models import Item, Tombstone
from library.timeutil import iso, parse_when
from library.vocabulary import ATOM_KINDS, SLUG_RE, SOURCE_NAME_RE, TRUST_LEVELS

# Field order of an exported line; also every key an imported line may carry.
RECORD_FIELDS = (
    "key", "source", "trust", "original_ref", "title", "summary", "questions", "atoms",
    "project", "occurred_at", "text_hash", "summarizer", "input_tokens", "output_tokens",
    "hints", "original",
)


def item_dict(item, include_original=False):
    """Every field of an item; `original` only when asked for."""
    data = {
        "id": item.pk, "key": item.key, "source": item.source, "original_ref": item.original_ref,
        "title": item.title, "summary": item.summary, "questions": list(item.questions),
        "atoms": [dict(atom) for atom in item.atoms], "project": item.project, "trust": item.trust,
        "occurred_at": iso(item.occurred_at), "ingested_at": iso(item.ingested_at),
        "updated_at": iso(item.updated_at), "text_hash": item.text_hash, "hints": item.hints,
        "summarizer": item.summarizer, "input_tokens": item.input_tokens,
        "output_tokens": item.output_tokens,
    }
    if include_original:
        data["original"] = item.original
    return data


def write_record(item, summary, *, hints, now):
    """Write `summary` (a `library.ingest.summarize.Summary`) onto `item` (not saved): the
    record's fields, who wrote it and at what cost, the model's project proposal in the hints
    (`model_project`, removed when it proposes none) and the project the rules give with those
    hints (docs/design.md "Project tags")."""
    record = summary.record
    hints = dict(hints)
    if record.project:
        hints["model_project"] = record.project
    else:
        hints.pop("model_project", None)
    item.title, item.summary = record.title, record.summary
    item.questions, item.atoms = list(record.questions), list(record.atoms)
    item.hints, item.project = hints, projects.project_for(hints, item.source)
    item.summarizer = summary.summarizer
    item.input_tokens, item.output_tokens = summary.input_tokens, summary.output_tokens
    item.updated_at = now


def export_record(item):
    data = item_dict(item, include_original=True)
    return {name: data[name] for name in RECORD_FIELDS}


# --- validation ----------------------------------------------------------------------------

def _text(obj, name, *, required=False, default=""):
    value = obj.get(name)
    if value is None:
        if required:
            raise BadInput(f"{name}: required")
        return default
    if not isinstance(value, str):
        raise BadInput(f"{name}: expected a string, got {type(value).__name__}")
    if required and not value.strip():
        raise BadInput(f"{name}: must not be empty")
    return value


def _count(obj, name):
    value = obj.get(name, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadInput(f"{name}: expected a whole number >= 0, got {value!r}")
    return value


def _questions(obj):
    value = obj.get("questions", [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(q, str) for q in value):
        raise BadInput("questions: expected a list of strings")
    return [q.strip() for q in value if q.strip()]


def _atoms(obj):
    value = obj.get("atoms", [])
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadInput("atoms: expected a list of {kind, text} objects")
    atoms = []
    for i, atom in enumerate(value):
        if not isinstance(atom, dict) or set(atom) != {"kind", "text"}:
            raise BadInput(f"atoms[{i}]: expected an object with exactly kind and text")
        if atom["kind"] not in ATOM_KINDS:
            raise BadInput(f"atoms[{i}].kind: {atom['kind']!r} is not one of {', '.join(ATOM_KINDS)}")
        if not isinstance(atom["text"], str) or not atom["text"].strip():
            raise BadInput(f"atoms[{i}].text: expected a non-empty string")
        atoms.append({"kind": atom["kind"], "text": atom["text"].strip()})
    return atoms


def _project(obj):
    value = obj.get("project")
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not SLUG_RE.match(value):
        raise BadInput(f"project: {value!r} is not a slug (lowercase letters, digits, '.', '_', '-')")
    return value


def validate_record(obj, *, source, trust=None):
    """The Item fields for one imported record, or BadInput naming the problem.

    `key` is stored as `<source>:<key>` unless it already starts with `<source>:`. A record
    may name its `source` (it must equal the import's) and its `trust` (it must equal
    `trust` when that is given; otherwise it is used, default own).
    """
    if not isinstance(obj, dict):
        raise BadInput("expected a JSON object")
    unknown = [name for name in obj if name not in RECORD_FIELDS]
    if unknown:
        raise BadInput(f"{unknown[0]}: unknown field (allowed: {', '.join(RECORD_FIELDS)})")
    key = _text(obj, "key", required=True).strip()
    record_source = obj.get("source")
    if record_source is not None and record_source != source:
        raise BadInput(f"source: {record_source!r} does not match --source {source!r}")
    record_trust = obj.get("trust")
    if record_trust is not None and record_trust not in TRUST_LEVELS:
        raise BadInput(f"trust: {record_trust!r} is not one of own, external")
    if trust is not None and record_trust is not None and record_trust != trust:
        raise BadInput(f"trust: {record_trust!r} does not match --trust {trust!r}")
    if "occurred_at" not in obj or obj["occurred_at"] in (None, ""):
        raise BadInput("occurred_at: required (ISO 8601; without an offset it is UTC)")
    if not isinstance(obj["occurred_at"], str):
        raise BadInput("occurred_at: expected an ISO 8601 string")
    hints = obj.get("hints", {})
    if hints is None:
        hints = {}
    if not isinstance(hints, dict):
        raise BadInput("hints: expected a JSON object")
    original = _text(obj, "original")
    text_hash = _text(obj, "text_hash")
    if text_hash and (len(text_hash) != 64 or any(c not in "0123456789abcdef" for c in text_hash)):
        raise BadInput("text_hash: expected 64 lowercase hex digits (sha256)")
    return {
        "key": key if key.startswith(f"{source}:") else f"{source}:{key}",
        "source": source,
        "trust": trust or record_trust or "own",
        "original_ref": _text(obj, "original_ref"),
        "title": " ".join(_text(obj, "title", required=True).split()),
        "summary": _text(obj, "summary", required=True).strip(),
        "questions": _questions(obj),
        "atoms": _atoms(obj),
        "project": _project(obj),
        "occurred_at": parse_when(obj["occurred_at"], "occurred_at"),
        "text_hash": text_hash or (hashlib.sha256(original.encode()).hexdigest() if original else ""),
        "summarizer": _text(obj, "summarizer"),
        "input_tokens": _count(obj, "input_tokens"),
        "output_tokens": _count(obj, "output_tokens"),
        "hints": hints,
        "original": original,
    }


# --- import / export -----------------------------------------------------------------------

@dataclass
class ImportReport:
    imported: int = 0
    updated: int = 0
    forgotten: int = 0   # records of forgotten units, left out (library.forget)
    errors: list = field(default_factory=list)  # {"line": n, "error": "..."}

    def as_dict(self):
        return {"imported": self.imported, "updated": self.updated, "forgotten": self.forgotten,
                "errors": self.errors}


def import_jsonl(lines, *, source, trust=None):
    """Import records, one JSON object per line (blank lines ignored).

    Validates every line first; with any error nothing is written and the report lists
    every bad line. Otherwise creates new keys and updates existing ones in place (same id)
    in one transaction. Idempotent: importing the same file twice changes nothing the
    second time but `updated_at`.
    """
    if not SOURCE_NAME_RE.match(source or ""):
        raise BadInput(f"--source: {source!r} must be letters, digits, '.', '_', '-' (no ':' or spaces)")
    if trust is not None and trust not in TRUST_LEVELS:
        raise BadInput(f"--trust: {trust!r} is not one of own, external")
    report = ImportReport()
    records, seen = [], {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BadInput(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
            fields = validate_record(obj, source=source, trust=trust)
            if fields["key"] in seen:
                raise BadInput(f"key: {fields['key']!r} already appears on line {seen[fields['key']]}")
            seen[fields["key"]] = number
            records.append(fields)
        except BadInput as exc:
            report.errors.append({"line": number, "error": str(exc)})
    if report.errors:
        return report
    kept = _not_forgotten(records, source)
    report.forgotten, records = len(records) - len(kept), kept

    now = timezone.now()
    with transaction.atomic():
        existing = {}
        keys = [r["key"] for r in records]
        for start in range(0, len(keys), 500):
            for item in Item.objects.filter(key__in=keys[start:start + 500]):
                existing[item.key] = item
        new, changed = [], []
        for fields in records:
            item = existing.get(fields["key"])
            if item is None:
                new.append(Item(**fields, ingested_at=now, updated_at=now))
            else:
                for name, value in fields.items():
                    setattr(item, name, value)
                item.updated_at = now
                changed.append(item)
        Item.objects.bulk_create(new, batch_size=500)
        if changed:
            Item.objects.bulk_update(changed, [*records[0].keys(), "updated_at"], batch_size=500)
    report.imported, report.updated = len(new), len(changed)
    return report


def _not_forgotten(records, source):
    """The records that belong to no forgotten unit: neither their unit's key nor their
    text's hash is tombstoned."""
    units = {forget.unit_of(r["key"], source) for r in records}
    gone = set(Tombstone.objects.filter(source=source, unit_id__in=units).values_list("unit_id", flat=True))
    hashes = forget.forgotten_hashes({r["text_hash"] for r in records if r["text_hash"]})
    return [r for r in records if forget.unit_of(r["key"], source) not in gone and r["text_hash"] not in hashes]


def export_jsonl(out, *, source=None):
    """Write every item (of `source`, if given) as one JSON line, in id order. Returns the count."""
    items = Item.objects.order_by("pk")
    if source is not None:
        items = items.filter(source=source)
    count = 0
    for item in items.iterator(chunk_size=1_000):
        out.write(json.dumps(export_record(item), ensure_ascii=False) + "\n")
        count += 1
    return count
