"""Work on stored items without reading the sources again: `retag` (docs/design.md "Project tags"),
`redact_stored` (docs/design.md "Redaction") and `resummarize` (docs/design.md "The summariser"). The CLI, the web app's admin tools
and the Huey tasks all call these functions.

Each returns a small report and writes through the Item model, so the FTS rows follow in
the same transaction. Each is idempotent: run twice, the second run changes nothing
(resummarize calls the model again, by request).
"""

import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from library.errors import BadInput, NotFound
from library.ingest import configured, projects, redact
from library.ingest.segments import parse_blocks, part_hint
from library.ingest.summarize import SummaryError, SummaryRequest, prompt
from library.models import Item
from library.records import write_record

logger = logging.getLogger(__name__)
_BATCH = 500


@dataclass
class ChangeReport:
    checked: int = 0
    changed: int = 0
    ids: list = field(default_factory=list)     # the changed ids (first 1,000)

    def note(self, item_id):
        self.changed += 1
        if len(self.ids) < 1_000:
            self.ids.append(item_id)

    def as_dict(self):
        return {"checked": self.checked, "changed": self.changed, "ids": self.ids}


def _batches(queryset):
    last = 0
    while True:
        batch = list(queryset.filter(pk__gt=last).order_by("pk")[:_BATCH])
        if not batch:
            return
        yield batch
        last = batch[-1].pk


def retag(*, dry_run=False, progress=None):
    """Apply the project rules again to every item from its stored hints. Returns a ChangeReport."""
    report = ChangeReport()
    total = Item.objects.count()
    fixed = configured.fixed_projects()   # once, not once per item
    for batch in _batches(Item.objects.only("pk", "source", "hints", "project", "title", "summary",
                                            "questions", "atoms")):
        changed = []
        for item in batch:
            report.checked += 1
            slug = projects.project_for(item.hints, item.source, fixed_projects=fixed)
            if slug != item.project:
                item.project = slug
                changed.append(item)
                report.note(item.pk)
        if changed and not dry_run:
            Item.objects.bulk_update(changed, ["project"])
        if progress:
            progress(report.checked, total)
    return report


def _redacted(item, redactor):
    """The fields of an item that the current rules would change, as {field: new value}."""
    changes = {}
    for name in ("title", "summary", "original"):
        value = getattr(item, name)
        new = redactor.redact(value)
        if new != value:
            changes[name] = new
    for name in ("questions", "atoms", "hints"):
        value = getattr(item, name)
        new = redactor.redact_value(value)
        if new != value:
            changes[name] = new
    return changes


def redact_stored(*, dry_run=False, progress=None):
    """Apply the current redaction rules to every stored item (title, summary, questions,
    atoms, original, hints). With `dry_run`, only count what would change."""
    redactor = redact.Redactor(settings.JEZERO["redaction"]["extra_patterns"])
    report = ChangeReport()
    total = Item.objects.count()
    for batch in _batches(Item.objects.all()):
        changed = []
        for item in batch:
            report.checked += 1
            changes = _redacted(item, redactor)
            if changes:
                report.note(item.pk)
                for name, value in changes.items():
                    setattr(item, name, value)
                changed.append(item)
        if changed and not dry_run:
            Item.objects.bulk_update(changed, ["title", "summary", "original", "questions", "atoms", "hints"])
        if progress:
            progress(report.checked, total)
    logger.info("redact-stored version=%s changed=%d dry_run=%s", redact.VERSION, report.changed, dry_run)
    return report


# The fields a `--where field=value` selection may name (the CLI, the admin tools page and the
# browser jobs all offer these).
SELECT_FIELDS = ("summarizer", "source", "project", "trust")
SELECT_HELP = ", ".join(f"{name}=…" for name in SELECT_FIELDS[:-1]) + f" or {SELECT_FIELDS[-1]}=…"


def select(*, ids=None, where=None, project=None):
    """The items to re-summarise: by ids, by `field=value` (one of SELECT_FIELDS), or project."""
    queryset = Item.objects.order_by("pk")
    if ids is not None:
        return queryset.filter(pk__in=ids)
    if project is not None:
        return queryset.filter(project=project)
    if where is not None:
        field_name, sep, value = where.partition("=")
        if not sep or field_name not in SELECT_FIELDS:
            raise BadInput(f"--where: {where!r} must be {SELECT_HELP}")
        return queryset.filter(**{field_name: value})
    raise BadInput("choose the items: --ids, --ids-file, --where or --project")


@dataclass
class ResummarizeReport:
    selected: int = 0
    summarised: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    errors: list = field(default_factory=list)

    def as_dict(self):
        return {"selected": self.selected, "summarised": self.summarised, "failed": self.failed,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "errors": self.errors}


def _request(item):
    hints = item.hints or {}
    hint = part_hint(hints.get("title_hint"), hints.get("part", 1), hints.get("parts", 1))
    connector = configured.find(item.source)
    connector_type = connector["type"] if connector else None
    context = prompt.context_line(item.source, hints, connector_type)
    # The stored original is the segment's rendering, so parsing it gives back the blocks
    # the pipeline summarised the first time.
    return SummaryRequest(document=item.original, title_hint=hint, context=context,
                          blocks=tuple(parse_blocks(item.original)))


def resummarize(queryset, summarizer, *, progress=None):
    """Summarise the chosen items again from their stored `original`, keeping id, source,
    key, date and the project rule inputs. A failed item keeps its old record."""
    report = ResummarizeReport()
    items = list(queryset)
    report.selected = len(items)
    for n, item in enumerate(items, start=1):
        if not item.original:
            report.failed += 1
            report.errors.append({"id": item.pk, "error": "no original text stored"})
            continue
        try:
            summary = summarizer.summarize(_request(item))
        except SummaryError as exc:
            report.failed += 1
            report.errors.append({"id": item.pk, "error": str(exc)})
            continue
        with transaction.atomic():
            write_record(item, summary, hints=item.hints or {}, now=timezone.now())
            item.save()
        report.summarised += 1
        report.input_tokens += summary.input_tokens
        report.output_tokens += summary.output_tokens
        if progress:
            progress(n, len(items))
    return report


# --- one item, from the web app's item page ----------------------------------------------------

def _item(item_id):
    item = Item.objects.filter(pk=item_id).first()
    if item is None:
        raise NotFound(f"no item {item_id}")
    return item


def retag_item(item_id):
    """Apply the project rules to one item now, from its stored hints (no model call).
    Returns (old project, new project). Raises NotFound. Idempotent."""
    item = _item(item_id)
    old = item.project
    new = projects.project_for(item.hints, item.source)
    if new != old:
        item.project = new
        item.save()
    return old, new
