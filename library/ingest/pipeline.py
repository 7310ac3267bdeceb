"""One run of one connector (docs/design.md "The way of the data"): discover → read → redact → segment → hash →
summarise what changed → store → move the cursor → report.

Guarantees:
- Redaction runs on every block and on the hints before anything is hashed, stored, logged
  or sent.
- A segment whose key already holds the same text hash costs no model call.
- A unit is stored in one transaction together with its cursor: after a crash or a failed
  model call each unit is either fully stored (and its cursor moved) or untouched, and the
  next run picks it up.
- At most `summarizer.max_concurrency` model calls run at once; `--limit`,
  `max_calls_per_run` and `daily_token_budget` stop the run from calling the model, leaving
  the remaining units for later.
- One run per connector at a time, across processes (a file lock in the data folder:
  `library.ingest.locks`).
- A run that dies half-way has its report marked failed ("interrupted") by `reap_runs` or by
  the connector's next run: a report still "running" whose lock is free is of a dead run.
"""

import logging
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from connectors import registry
from connectors.base import UnitError, finish_blocks
from connectors.text import ONE_LINE_CHARS
from library import forget
from library.errors import NotConfigured, RunRefused
from library.ingest import configured, locks, markers, projects, redact
from library.ingest.exclusions import Exclusions
from library.ingest.segments import segment
from library.ingest.summarize import SummaryError, SummaryRequest
from library.ingest.summarize import configuration as summarizer_configuration
from library.ingest.summarize.prompt import context_line
from library.ingest.upload_connector import InboxConnector
from library.models import Item, RunReport, UnitCursor
from library.records import write_record

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4          # for dry-run estimates only
WOULD_READ = 50              # units a dry run lists by name
_WINDOW = 8                  # units whose model calls may be in flight at once (per worker slot)


@dataclass
class Report:
    """The counters of one run; `as_dict()` is what the CLI prints and the web app shows."""

    connector: str
    started_at: datetime
    dry_run: bool = False
    sample: int | None = None
    finished_at: datetime | None = None
    units_seen: int = 0
    units_changed: int = 0
    units_settling: int = 0
    units_too_small: int = 0
    units_kept_out: int = 0      # a user block holds the line `jezero: skip` (library.ingest.markers)
    units_excluded: int = 0      # a configured exclusion (library.ingest.exclusions)
    units_forgotten: int = 0     # tombstoned by `jezero forget` (library.forget)
    units_failed: int = 0
    units_stored: int = 0
    units_left: int = 0          # not reached because a budget stopped the run
    segments_summarised: int = 0
    segments_unchanged: int = 0
    segments_failed: int = 0
    documents: int = 0           # segments that were (or, in a dry run, would be) sent
    characters: int = 0
    estimated_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    retries: int = 0
    budget_stopped: str = ""
    source_failed: bool = False  # the source could not be read at all (see errors)
    errors: list = field(default_factory=list)
    warnings: Counter = field(default_factory=Counter)
    would_read: list = field(default_factory=list)  # dry runs: [{unit, documents, characters}], at most WOULD_READ

    COUNTERS = ("units_seen", "units_changed", "units_settling", "units_too_small", "units_kept_out",
                "units_excluded", "units_forgotten", "units_failed", "units_stored", "units_left", "segments_summarised", "segments_unchanged", "segments_failed",
                "documents", "characters", "estimated_tokens", "input_tokens", "output_tokens", "model_calls",
                "retries")

    def stats(self):
        return {name: getattr(self, name) for name in self.COUNTERS}

    def as_dict(self):
        return {
            "connector": self.connector, "started_at": _iso(self.started_at), "finished_at": _iso(self.finished_at),
            "dry_run": self.dry_run, "sample": self.sample, **self.stats(), "budget_stopped": self.budget_stopped,
            "source_failed": self.source_failed,
            "errors": self.errors, "warnings": dict(self.warnings), "would_read": self.would_read,
        }


def _iso(value):
    from library.timeutil import iso

    return iso(value)


# --- configuration and dead runs -----------------------------------------------------------------

def connector_config(name):
    """The configuration of connector `name` in use (jezero.toml's or the database's);
    raises RunRefused when there is none."""
    config = configured.find(name)
    if config is None:
        known = ", ".join(configured.names()) or "none configured"
        raise RunRefused(f"no connector named {name!r} (connectors: {known})")
    return config


# The error a run report gets when its run died half-way (`reap_runs`).
INTERRUPTED = ("interrupted: the run stopped before it finished (its process ended: killed, crashed or the "
               "machine restarted); what it stored stays, the rest is read again at the next run")


def _end_interrupted(name, now):
    """Mark failed the run reports of connector `name` still "running". Only with the
    connector's lock held: then no run of it is alive, so any such report is of a run that
    died (a live run holds the lock from before its report is written until after it is
    saved finished). Returns how many it ended."""
    ended = 0
    for row in RunReport.objects.filter(connector=name, outcome="running"):
        row.outcome, row.finished_at = "failed", now
        row.errors = [*row.errors, {"unit": "", "error": INTERRUPTED}]
        row.save(update_fields=["outcome", "finished_at", "errors"])
        ended += 1
    if ended:
        logger.warning("interrupted runs marked failed connector=%s count=%d", name, ended)
    return ended


def reap_runs(now=None):
    """Mark failed, with an error that says it was interrupted, every run report still
    "running" whose connector lock is free: its run's process died (kill -9, a crash, a
    restart) before it could say how it ended. A report whose lock is held — its run is
    alive — is left alone. Returns how many it ended; idempotent. Runs every 5 minutes with
    the job reaper (library.tasks.reap_jobs); a connector's next run does the same at its
    start."""
    now = now or timezone.now()
    ended = 0
    names = RunReport.objects.filter(outcome="running").order_by().values_list("connector", flat=True).distinct()
    for name in list(names):
        try:
            with locks.connector_lock(name):
                ended += _end_interrupted(name, now)
        except RunRefused:
            continue   # a live run holds it
    return ended


def tokens_used_today(now):
    start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    total = 0
    for stats in RunReport.objects.filter(started_at__gte=start).values_list("stats", flat=True):
        total += int(stats.get("input_tokens", 0)) + int(stats.get("output_tokens", 0))
    return total


def _redacted(block, redactor):
    text = redactor.redact(block.text)
    if block.role == "tool":
        text = _display_line(text)
    return block if text is block.text or text == block.text else replace(block, text=text)


def _display_line(line, limit=ONE_LINE_CHARS):
    """A redacted tool line shortened to what is shown (`Name: ` and `limit` characters of its
    detail), never cutting a marker in half. Connectors keep tool lines whole up to a larger
    bound, so that redaction sees a key whole before anything is cut (docs/design.md "Redaction")."""
    name, sep, detail = line.partition(": ")
    if not sep:
        name, detail = "", line
    if len(detail) <= limit:
        return line
    cut = limit - 1
    for marker in redact.MARKER_RE.finditer(detail, max(cut - 40, 0), cut + 40):
        if marker.start() < cut < marker.end():
            cut = marker.start()
    return f"{name}{sep}{detail[:cut].rstrip()}…"


def clean(reading, config, redactor):
    """A unit's numbered, redacted blocks and redacted hints (with `git_root` when the
    working folder is on this machine) — what preview shows and the pipeline segments.
    Tool lines are shortened to the display length here, after redaction."""
    blocks = finish_blocks(reading.entries, user_prompt_markers=config.get("user_prompt_markers", ()),
                           user_prompt_drop_lines=config.get("user_prompt_drop_lines", ()))
    blocks = [_redacted(block, redactor) for block in blocks]
    hints = redactor.redact_value(dict(reading.hints))
    if "git_root" not in hints and hints.get("cwd"):
        root = projects.find_git_root(hints["cwd"])
        if root:
            hints["git_root"] = root
    return blocks, hints


# --- one unit ---------------------------------------------------------------------------------

@dataclass
class Planned:
    """A segment of a unit and what it needs."""

    segment: object
    key: str
    existing: Item | None
    needs_call: bool


@dataclass
class PreparedUnit:
    unit: object
    hints: dict
    planned: list
    futures: list = field(default_factory=list)   # [(Planned, Future)]


class Run:
    """The state of one run; `execute()` does the work. Use `run()` from outside."""

    def __init__(self, config, report, *, summarizer, summarizing, limit, now, progress):
        self.config = config
        self.summarizing = summarizing   # the effective [summarizer] table, read once for the run
        self.name = config["name"]
        self.report = report
        self.summarizer = summarizer
        self.now = now
        self.progress = progress
        self.redactor = redact.Redactor(settings.JEZERO["redaction"]["extra_patterns"])
        self.exclusions = Exclusions(config)
        self.removed = 0   # items deleted because their unit was kept out
        self.limit_chars = summarizing["max_input_chars"]
        caps = [c for c in (limit, summarizing["max_calls_per_run"]) if c]
        self.max_calls = min(caps) if caps else None
        self.token_budget = summarizing["daily_token_budget"]
        self.tokens_before = tokens_used_today(now) if self.token_budget else 0
        self.calls_submitted = 0

    # -- planning

    def prepare(self, unit, connector):
        """Read, redact, segment and hash one unit; None when it needs nothing (counted)."""
        report, config = self.report, self.config
        settle = timedelta(minutes=0 if unit.finished else config["settle_minutes"])
        if unit.modified > self.now - settle:
            report.units_settling += 1
            return None
        if forget.is_forgotten(self.name, unit.id):
            report.units_forgotten += 1
            self.move_cursor(unit)
            return None
        if self.exclusions.path(unit.path):
            report.units_excluded += 1
            self.move_cursor(unit)
            return None
        read = connector.read(unit)
        report.warnings.update(read.warnings)
        marked = markers.apply(read)
        if marked.kept_out:
            report.units_kept_out += 1
            if not (report.dry_run or report.sample):
                self.removed += forget.remove_unit(self.name, unit.id)   # stored before its author kept it out
            self.move_cursor(unit)
            return None
        reading = marked.reading
        newest = reading.newest_time()
        if newest is not None and newest > self.now - settle:
            report.units_settling += 1
            return None
        blocks, hints = clean(reading, config, self.redactor)
        if self.exclusions and self.exclusions.reason(hints, projects.project_for(hints, self.name)):
            report.units_excluded += 1
            self.move_cursor(unit)
            return None
        if sum(len(b.text) for b in blocks) < config["min_chars"] or not blocks:
            report.units_too_small += 1
            self.move_cursor(unit)
            return None
        segments = segment(unit.id, blocks, self.limit_chars)
        if forget.forgotten_hashes(seg.hash for seg in segments):
            # The text of a forgotten unit, read again under another key (another connector,
            # another device's upload): it is forgotten too, and stays so as it grows.
            report.units_forgotten += 1
            if not (report.dry_run or report.sample):
                forget.extend(self.name, unit.id, [seg.hash for seg in segments])
            self.move_cursor(unit)
            return None
        keys = item_keys(self.name, unit, segments)
        wanted = keys + [legacy_key(self.name, unit)] if unit.single_document else keys
        existing = {item.key: item for item in Item.objects.filter(key__in=wanted).only("pk", "key", "text_hash")}
        planned, documents, characters = [], 0, 0
        for index, (seg, key) in enumerate(zip(segments, keys, strict=True)):
            item = existing.get(key)
            if item is None and index == 0 and unit.single_document:
                item = existing.get(legacy_key(self.name, unit))   # stored before keys took their present form (docs/design.md "Items")
            needs_call = item is None or item.text_hash != seg.hash
            planned.append(Planned(seg, key, item, needs_call))
            if needs_call:
                documents, characters = documents + 1, characters + len(seg.text)
                report.estimated_tokens += len(seg.text) // CHARS_PER_TOKEN
            else:
                report.segments_unchanged += 1
        report.documents += documents
        report.characters += characters
        if report.dry_run and documents and len(report.would_read) < WOULD_READ:
            report.would_read.append({"unit": str(unit.path or unit.ref or unit.id), "documents": documents,
                                      "characters": characters})
        return PreparedUnit(unit=unit, hints=hints, planned=planned)

    def budget_left(self):
        if self.max_calls is not None and self.calls_submitted >= self.max_calls:
            return f"the run reached its limit of {self.max_calls} model call(s)"
        if self.token_budget is not None:
            used = self.tokens_before + self.report.input_tokens + self.report.output_tokens
            if used >= self.token_budget:
                return f"the daily token budget ({self.token_budget}) is used up"
        return ""

    # -- summarising and storing

    def request(self, prepared, plan):
        seg = plan.segment
        return SummaryRequest(
            document=seg.text,
            title_hint=seg.title_hint(prepared.hints.get("title_hint")),
            context=context_line(self.name, prepared.hints, self.config["type"]),
            blocks=tuple((b.role, b.text) for b in seg.blocks),
        )

    def submit(self, pool, prepared):
        for plan in prepared.planned:
            if plan.needs_call:
                self.calls_submitted += 1
                prepared.futures.append((plan, pool.submit(self.summarizer.summarize, self.request(prepared, plan))))

    def finish(self, prepared):
        """Wait for a unit's calls; store it whole, or nothing when any call failed."""
        report = self.report
        results, failure = {}, None
        for plan, future in prepared.futures:
            try:
                summary = future.result()
            except SummaryError as exc:
                # A failed document still made calls and may have cost tokens.
                attempts = getattr(exc, "attempts", 1) or 1
                report.model_calls += attempts
                report.retries += attempts - 1
                report.input_tokens += getattr(exc, "input_tokens", 0) or 0
                report.output_tokens += getattr(exc, "output_tokens", 0) or 0
                report.segments_failed += 1
                failure = failure or f"{plan.segment.id}: {exc}"
                continue
            report.model_calls += summary.attempts
            report.retries += summary.attempts - 1
            report.input_tokens += summary.input_tokens
            report.output_tokens += summary.output_tokens
            results[plan.key] = summary
        if failure:
            report.units_failed += 1
            report.errors.append({"unit": prepared.unit.id, "error": failure})
            logger.warning("unit failed connector=%s unit=%s", self.name, prepared.unit.id)
            return
        self.store(prepared, results)
        report.segments_summarised += len(results)
        report.units_stored += 1

    def store(self, prepared, results):
        unit, config = prepared.unit, self.config
        keys = [plan.key for plan in prepared.planned]
        with transaction.atomic():
            for plan in prepared.planned:
                summary = results.get(plan.key)
                seg = plan.segment
                # The text is unchanged: no new record, but a legacy key is renamed and an earlier
                # time taken (a reader that learned to date its source). Never a later one: the text
                # existed at the stored time, and a source without times of its own dates a block
                # by its file, which every edit of another part of the file makes newer.
                if summary is None:
                    changes = {}
                    if plan.existing is not None and plan.existing.key != plan.key:
                        changes["key"] = plan.key
                    if plan.existing is not None and (seg.occurred_at or unit.modified) < plan.existing.occurred_at:
                        changes["occurred_at"] = seg.occurred_at or unit.modified
                    if changes:
                        Item.objects.filter(pk=plan.existing.pk).update(**changes)
                    continue
                hints = dict(prepared.hints)
                if seg.parts > 1:
                    hints.update(part=seg.part, parts=seg.parts)
                item = plan.existing or Item(key=plan.key, ingested_at=self.now)
                item.key = plan.key
                item.source, item.original_ref, item.trust = self.name, unit.ref, config["trust"]
                item.occurred_at = seg.occurred_at or unit.modified
                item.text_hash, item.original = seg.hash, seg.text
                write_record(item, summary, hints=hints, now=self.now)
                item.save()
            # The unit's keys are exactly those between "<prefix>#" and "<prefix>$" ("$" sorts right
            # after "#"): a range the unique index answers, where LIKE would scan every item.
            prefix = f"{self.name}:{unit.id}"
            Item.objects.filter(key__gte=f"{prefix}#", key__lt=f"{prefix}$").exclude(key__in=keys).delete()
            self.move_cursor(unit)

    def move_cursor(self, unit):
        if self.report.dry_run or self.report.sample:
            return
        UnitCursor.objects.update_or_create(connector=self.name, unit_id=unit.id,
                                            defaults={"fingerprint": unit.fingerprint, "updated_at": self.now})

    # -- the run

    def execute(self):
        report, config = self.report, self.config
        if config["type"] == "upload":
            connector = InboxConnector(self.name)
        else:
            connector = registry.make(config["type"], config)
        if config.get("path") and not Path(config["path"]).expanduser().exists():
            report.warnings["path_missing"] += 1
            report.errors.append({"unit": None, "error": f"{config['path']} does not exist"})
        cursors = dict(UnitCursor.objects.filter(connector=self.name).values_list("unit_id", "fingerprint"))
        try:
            units = sorted(connector.discover(), key=lambda u: u.modified, reverse=True)
        except UnitError as exc:
            # The source as a whole cannot be read (a wrong password, a server down): say so in
            # the report; nothing is stored and no cursor moves.
            report.errors.append({"unit": None, "error": str(exc)})
            report.source_failed = True
            return
        report.units_seen = len(units)
        changed = [u for u in units if cursors.get(u.id) != u.fingerprint]
        report.units_changed = len(changed)
        if report.sample:
            changed = changed[: report.sample]
        workers = self.summarizing["max_concurrency"]
        in_flight = deque()
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="summarize") as pool:
            for done, unit in enumerate(changed, start=1):
                stop = "" if report.dry_run else self.budget_left()
                if stop:
                    report.budget_stopped = stop
                    report.units_left = len(changed) - done + 1
                    break
                try:
                    prepared = self.prepare(unit, connector)
                except UnitError as exc:
                    report.units_failed += 1
                    report.errors.append({"unit": unit.id, "error": str(exc)})
                    continue
                if prepared is not None and not report.dry_run:
                    self.submit(pool, prepared)
                    in_flight.append(prepared)
                while in_flight and (len(in_flight) > workers * _WINDOW or _all_done(in_flight[0])):
                    self.finish(in_flight.popleft())
                if self.progress:
                    self.progress(done, len(changed))
            while in_flight:
                self.finish(in_flight.popleft())
        if self.removed:
            forget.checkpoint()   # the removed text must not stay in the write-ahead log


def item_keys(source, unit, segments):
    """The keys of a unit's items (docs/design.md "Items"): `<source>:<unit id>#<first block>` for each
    segment of a session; `<source>:<unit id>` for a unit that is one document (an email
    thread). Should a document be too long for one segment, its later segments keep
    `#<first block>`, so that its first item stays the same item as the document grows."""
    keys = [f"{source}:{seg.id}" for seg in segments]
    if unit.single_document and keys:
        keys[0] = f"{source}:{unit.id}"
    return keys


def legacy_key(source, unit):
    """The key a one-document unit's first item had before keys took their present form (docs/design.md "Items")
    (`<source>:<unit id>#0`): such an item is found under it and renamed, keeping its id."""
    return f"{source}:{unit.id}#0"


def _all_done(prepared):
    return all(future.done() for _plan, future in prepared.futures)


def run(name, *, dry_run=False, sample=None, limit=None, now=None, summarizer=None, progress=None):
    """Run connector `name` once and return its Report (also stored as a RunReport).

    Raises RunRefused before doing anything when the connector is unknown, the summariser
    lacks its model or key (unless `dry_run`), or another run of it holds the lock.
    """
    config = connector_config(name)
    if not config["enabled"] and not dry_run:   # a dry run tests a connector before it is enabled
        raise RunRefused(f"connector {name!r} is disabled (enabled = false)")
    # Read anew for every run: a change made in Settings or with `jezero summarizer set`
    # applies at the worker's next run, without a restart.
    summarizing = summarizer_configuration.effective()
    if summarizer is not None or dry_run:
        return _run(config, dry_run=dry_run, sample=sample, limit=limit, now=now, summarizer=summarizer,
                    summarizing=summarizing, progress=progress)
    try:
        owned = summarizer_configuration.build(summarizing)
    except NotConfigured as exc:
        raise RunRefused(str(exc)) from None
    with owned:
        return _run(config, dry_run=dry_run, sample=sample, limit=limit, now=now, summarizer=owned,
                    summarizing=summarizing, progress=progress)


def _run(config, *, dry_run, sample, limit, now, summarizer, summarizing, progress):
    name = config["name"]
    now = now or timezone.now()
    report = Report(connector=name, started_at=now, dry_run=dry_run, sample=sample)
    with locks.connector_lock(name):
        _end_interrupted(name, now)   # holding the lock: a report still "running" is of a dead run
        row = RunReport.objects.create(connector=name, started_at=now, dry_run=dry_run, sample=sample)
        outcome = "failed"
        try:
            Run(config, report, summarizer=summarizer, summarizing=summarizing, limit=limit, now=now,
                progress=progress).execute()
            outcome = "failed" if report.source_failed else "ok"
        finally:
            report.finished_at = timezone.now()
            row.finished_at, row.stats, row.errors = report.finished_at, report.stats(), report.errors
            row.warnings, row.budget_stopped, row.outcome = dict(report.warnings), report.budget_stopped, outcome
            row.save()
            logger.info("run connector=%s outcome=%s stored=%d failed=%d calls=%d", name, outcome,
                        report.units_stored, report.units_failed, report.model_calls)
    return report
