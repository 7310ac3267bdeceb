"""The library's records. An `Item` is one summarised unit (docs/design.md "Items").

Every way the ORM writes items — `save()`, `delete()`, and the queryset's `update()`,
`delete()`, `bulk_create()` and `bulk_update()` — updates the full-text mirror through
`library.store` inside the same transaction, so the Django admin, the importer and later
the pipeline cannot leave the index behind. The FTS SQL itself lives only in `store`.
"""

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone


class ItemQuerySet(models.QuerySet):
    def delete(self):
        from library import store

        with transaction.atomic(using=self.db):
            store.forget(list(self.values_list("pk", flat=True)), using=self.db)
            return super().delete()

    delete.alters_data = True
    delete.queryset_only = True

    def update(self, **kwargs):
        from library import store

        with transaction.atomic(using=self.db):
            ids = list(self.values_list("pk", flat=True))
            count = super().update(**kwargs)
            store.sync_ids(ids, using=self.db)
            return count

    update.alters_data = True

    def bulk_create(self, objs, *args, **kwargs):
        from library import store

        with transaction.atomic(using=self.db):
            created = super().bulk_create(objs, *args, **kwargs)
            store.sync_items(created, using=self.db)
            return created

    def bulk_update(self, objs, fields, *args, **kwargs):
        from library import store

        with transaction.atomic(using=self.db):
            count = super().bulk_update(objs, fields, *args, **kwargs)
            store.sync_items(objs, using=self.db)
            return count


class Item(models.Model):
    class Trust(models.TextChoices):
        OWN = "own"
        EXTERNAL = "external"

    key = models.CharField(max_length=1024, unique=True)
    source = models.CharField(max_length=200)
    original_ref = models.CharField(max_length=2048, blank=True, default="")
    title = models.TextField()
    summary = models.TextField()
    questions = models.JSONField(default=list, blank=True)
    atoms = models.JSONField(default=list, blank=True)
    project = models.CharField(max_length=200, null=True, blank=True)
    trust = models.CharField(max_length=10, choices=Trust.choices, default=Trust.OWN)
    occurred_at = models.DateTimeField()
    ingested_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    text_hash = models.CharField(max_length=64, blank=True, default="")
    original = models.TextField(blank=True, default="")
    hints = models.JSONField(default=dict, blank=True)
    summarizer = models.CharField(max_length=200, blank=True, default="")
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)

    objects = ItemQuerySet.as_manager()

    class Meta:
        db_table = "items"
        indexes = [
            # With trust and project: the lists of sources and projects a caller may read (counts,
            # newest, trust) read only an index, also for a caller limited to some sources.
            models.Index(fields=["source", "occurred_at", "trust", "project"], name="items_by_source"),
            models.Index(fields=["project", "occurred_at"], name="items_project_time"),
            models.Index(fields=["occurred_at"], name="items_time"),
            # Covering index for search: filters and recency read it instead of the wide rows.
            models.Index(fields=["id", "source", "project", "occurred_at"], name="items_filter"),
        ]

    def __str__(self):
        return f"[{self.pk}] {self.title}"

    def save(self, *args, **kwargs):
        from library import store

        using = kwargs.get("using") or "default"
        with transaction.atomic(using=using):
            super().save(*args, **kwargs)
            store.sync_items([self], using=using)

    def delete(self, *args, **kwargs):
        from library import store

        using = kwargs.get("using") or "default"
        with transaction.atomic(using=using):
            store.forget([self.pk], using=using)
            return super().delete(*args, **kwargs)


class StoreState(models.Model):
    """Small facts about the stored library, one text value per key: the worker's heartbeat
    (`library.ingest.scheduling`) and the item change of the last forget
    (`store.note_forgotten`)."""

    key = models.CharField(max_length=100, primary_key=True)
    value = models.TextField()

    class Meta:
        db_table = "store_state"

    def __str__(self):
        return f"{self.key} = {self.value}"


class UnitCursor(models.Model):
    """How far a connector got with one unit: the fingerprint it last stored completely."""

    connector = models.CharField(max_length=200)
    unit_id = models.CharField(max_length=1024)
    fingerprint = models.CharField(max_length=200)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "unit_cursors"
        constraints = [models.UniqueConstraint(fields=["connector", "unit_id"], name="unit_cursor_unique")]

    def __str__(self):
        return f"{self.connector}:{self.unit_id} @ {self.fingerprint}"


class Connector(models.Model):
    """A connector added from the web app or the CLI (docs/design.md "Connectors"). Connectors in jezero.toml are
    not rows: `library.ingest.configured` lists both. `options` holds what was given (every
    key but name, type and enabled), validated by the same schema as the file."""

    name = models.CharField(max_length=200, unique=True)
    type = models.CharField(max_length=40)
    options = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "connectors"
        ordering = ["name"]

    def __str__(self):
        return f"{self.name} ({self.type})"


class SummarizerSetting(models.Model):
    """One `[summarizer]` key set from the web app or `jezero summarizer set` (docs/design.md "The summariser", "The web app"):
    it overrides jezero.toml's value of that key; removing the row puts the file's value back.
    `library.ingest.summarize.configuration` owns these rows. Never the API key: that is a
    file in the data folder."""

    key = models.CharField(max_length=60, unique=True)
    value = models.JSONField()                      # the key's value as the schema's kind
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "summarizer_settings"
        ordering = ["key"]

    def __str__(self):
        return self.key


class RunReport(models.Model):
    """One run of one connector (docs/design.md "Budget and run reports"): what it saw, sent, stored and failed."""

    connector = models.CharField(max_length=200, db_index=True)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    dry_run = models.BooleanField(default=False)
    sample = models.PositiveIntegerField(null=True, blank=True)
    stats = models.JSONField(default=dict)          # counters, see library.ingest.pipeline.Report
    errors = models.JSONField(default=list)         # [{"unit": id, "error": text}]
    warnings = models.JSONField(default=dict)       # reason → count (skipped lines and the like)
    budget_stopped = models.CharField(max_length=200, blank=True, default="")  # why a budget stopped it
    outcome = models.CharField(max_length=20, default="running")  # running | ok | failed | refused

    class Meta:
        db_table = "run_reports"
        ordering = ["-started_at", "-id"]

    def __str__(self):
        return f"{self.connector} run at {self.started_at:%Y-%m-%d %H:%M}"


class Client(models.Model):
    """An agent or device with a bearer token (docs/design.md "Access"). Only the token's hash is stored."""

    SCOPES = ("read", "upload")

    name = models.CharField(max_length=100, unique=True)
    token_id = models.CharField(max_length=16, unique=True)      # the public part, for lookup
    token_hash = models.CharField(max_length=64)                  # sha256 of the whole token
    sources = models.JSONField(default=list, blank=True)          # allowed-source globs; none by default
    scopes = models.JSONField(default=list, blank=True)
    upload_source = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "clients"
        ordering = ["name"]

    def __str__(self):
        return self.name


class Person(models.Model):
    """What a web user may read (docs/design.md "Access"): allowed-source globs, as a client's `sources`.
    Staff read every source whatever this says; a user without a row reads nothing.
    `library.access.people` owns these rows."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="person")
    sources = models.JSONField(default=list, blank=True)          # allowed-source globs

    class Meta:
        db_table = "people"

    def __str__(self):
        return f"{self.user} reads {', '.join(self.sources) or 'nothing'}"


class InboxSession(models.Model):
    """A session a device uploaded (docs/design.md "Device uploads"): only its redacted entries and hints, never the
    raw upload. A new upload of the same session replaces the row and bumps `version`."""

    source = models.CharField(max_length=200)
    session_id = models.CharField(max_length=200)
    agent = models.CharField(max_length=40)
    version = models.PositiveIntegerField(default=1)
    entries = models.JSONField(default=list)   # [[role, text, time or null], ...], redacted
    hints = models.JSONField(default=dict)     # redacted
    ended = models.BooleanField(default=False)
    uploaded_by = models.CharField(max_length=100, blank=True, default="")
    received_at = models.DateTimeField(default=timezone.now)
    size = models.PositiveIntegerField(default=0)  # bytes after decompression

    class Meta:
        db_table = "inbox_sessions"
        constraints = [models.UniqueConstraint(fields=["source", "session_id"], name="inbox_session_unique")]

    def __str__(self):
        return f"{self.source}:{self.session_id} v{self.version}"


class Job(models.Model):
    """Long work started from the browser (docs/design.md "The web app", "Jobs and the worker"): one service call run by a Huey task,
    with its progress and, when finished, the service's report. See `library.jobs`."""

    class Kind(models.TextChoices):
        RUN = "run", "run"
        DRY_RUN = "dry_run", "dry run"
        RETAG = "retag", "retag all"
        REDACT_STORED = "redact_stored", "redact stored items"
        REDACT_PREVIEW = "redact_preview", "redaction preview"
        RESUMMARIZE = "resummarize", "re-summarise"
        SUMMARIZER_TEST = "summarizer_test", "summariser test"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    params = models.JSONField(default=dict, blank=True)      # primitives only: connector name, ids, filter
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    result = models.JSONField(null=True, blank=True)          # the service's report, as_dict()
    error = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    alive_at = models.DateTimeField(null=True, blank=True)   # the last sign of life while running
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "jobs"
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"job {self.pk} {self.kind} {self.status}"

    @property
    def finished(self):
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def seconds(self):
        """How long it ran, in seconds (None until it finished)."""
        if self.started_at is None or self.finished_at is None:
            return None
        return round((self.finished_at - self.started_at).total_seconds(), 1)


class Tombstone(models.Model):
    """A forgotten unit (`jezero forget`, docs/design.md "Kept out"): its key and the hashes of the
    segments it had, never its text. Every connector and the upload inbox skip a unit whose
    key is here, or any of whose segments hashes to one of `hashes`, until a person undoes
    it (`jezero forget --undo`)."""

    source = models.CharField(max_length=200)
    unit_id = models.CharField(max_length=1024)
    forgotten_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "tombstones"
        constraints = [models.UniqueConstraint(fields=["source", "unit_id"], name="tombstone_unique")]

    def __str__(self):
        return f"{self.source}:{self.unit_id}"

    @property
    def key(self):
        return f"{self.source}:{self.unit_id}"


class ForgottenSegment(models.Model):
    """The hash of one segment a forgotten unit had (sha256 of its redacted text)."""

    tombstone = models.ForeignKey(Tombstone, on_delete=models.CASCADE, related_name="segments")
    text_hash = models.CharField(max_length=64, db_index=True)

    class Meta:
        db_table = "tombstone_hashes"


class ForgetLog(models.Model):
    """That something was forgotten: who, when, how and how many, never what."""

    at = models.DateTimeField(default=timezone.now)
    by = models.CharField(max_length=150)         # a user name, "cli" or "worker"
    how = models.CharField(max_length=20)          # ids, source, project, unit, undo
    units = models.PositiveIntegerField(default=0)
    items = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "forget_log"
        ordering = ["-at", "-id"]

    def __str__(self):
        return f"{self.at:%Y-%m-%d %H:%M} {self.by} {self.how}: {self.units} unit(s), {self.items} item(s)"
