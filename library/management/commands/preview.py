from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError

from connectors import registry
from connectors.base import UnitError
from library.cli import Verb
from library.ingest import markers, pipeline, projects, redact
from library.ingest.exclusions import Exclusions
from library.ingest.segments import segment
from library.ingest.summarize import configuration
from library.timeutil import iso


class Command(Verb):
    help = "Show the blocks and segments a file would produce (ids, sizes, hashes). No model; nothing stored."

    def add_arguments(self, parser):
        parser.add_argument("path", help="a session file")
        parser.add_argument("--type", required=True, choices=sorted(registry.CONNECTOR_TYPES), help="its format")
        parser.add_argument("--max-input-chars", type=int, help="segment size (default summarizer.max_input_chars)")

    def handle(self, *args, **opts):
        path = Path(opts["path"]).expanduser()
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        limit = opts["max_input_chars"] or configuration.effective()["max_input_chars"]
        if limit < 1000:
            raise CommandError("--max-input-chars: at least 1000")
        try:
            connector, unit = registry.for_file(opts["type"], path)
            read = connector.read(unit)
        except UnitError as exc:
            raise CommandError(str(exc)) from None
        marked = markers.apply(read)
        if marked.kept_out:
            # What a run would do: keep the whole unit out. Nothing of its text is shown.
            reason = (f"kept out by marker: user block {marked.skip_block + 1} holds the line "
                      f"`{markers.SKIP_LINE}`; nothing of it would be stored")
            if opts["json"]:
                self.emit_json({"unit": {"id": unit.id, "ref": unit.ref}, "kept_out": reason, "blocks": [],
                                "segments": [], "warnings": dict(read.warnings)})
            else:
                self.stdout.write(f"unit {unit.id}  {reason}")
            return
        reading = marked.reading
        redactor = redact.Redactor(settings.JEZERO["redaction"]["extra_patterns"])
        blocks, hints = pipeline.clean(reading, {}, redactor)
        exclusions = Exclusions()   # the [privacy] ones: a file has no connector here
        excluded = ("path excluded" if exclusions.path(path) else
                    exclusions.reason(hints, projects.project_for(hints, "preview")))
        segments = segment(unit.id, blocks, limit)
        data = {
            "unit": {"id": unit.id, "ref": unit.ref, "hints": hints},
            "kept_out": f"{excluded} ([privacy] in jezero.toml): a run would not read it" if excluded else None,
            "private_spans": marked.hidden,
            "blocks": [{"index": b.index, "role": b.role, "text": b.text, "time": iso(b.time)} for b in blocks],
            "segments": [{"id": s.id, "first_block": s.first_block, "last_block": s.last_block, "chars": len(s.text),
                          "hash": s.hash, "occurred_at": iso(s.occurred_at),
                          "title_hint": s.title_hint(hints.get("title_hint")), "text": s.text} for s in segments],
            "warnings": dict(reading.warnings),
        }
        if opts["json"]:
            self.emit_json(data)
            return
        self.stdout.write(f"unit {unit.id}  ({len(blocks)} blocks, {len(segments)} segment(s))")
        if marked.hidden:
            self.stdout.write(f"  {marked.hidden} private span(s) hidden as {markers.HIDDEN}")
        if data["kept_out"]:
            self.stdout.write(f"  {data['kept_out']}")
        for key, value in sorted(hints.items()):
            self.stdout.write(f"  {key}: {value}")
        for s in data["segments"]:
            self.stdout.write(f"segment {s['id']}  blocks {s['first_block']}–{s['last_block']}  {s['chars']} chars  "
                              f"{s['hash'][:16]}  {s['occurred_at']}  {s['title_hint'] or ''}")
        for b in blocks:
            first = b.text.splitlines()[0] if b.text else ""
            self.stdout.write(f"  [{b.index}] {b.role}: {first[:100]}")
        if reading.warnings:
            self.stdout.write("warnings: " + ", ".join(f"{k} {v}" for k, v in sorted(reading.warnings.items())))
