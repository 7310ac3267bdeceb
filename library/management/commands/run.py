from library.cli import Progress, Verb
from library.ingest import configured, pipeline


class Command(Verb):
    help = ("Run connectors once: read what changed, summarise new or changed segments, store them. "
            "--dry-run calls no model and reports what a run would send.")

    def add_arguments(self, parser):
        parser.add_argument("--connector", help="only this connector (default: every enabled one)")
        parser.add_argument("--dry-run", action="store_true", help="read and redact only; report documents, "
                            "characters and estimated tokens")
        parser.add_argument("--sample", type=int, help="summarise the newest N changed units only; the cursor stays")
        parser.add_argument("--limit", type=int, help="at most N model calls in this run")

    def handle(self, *args, **opts):
        names = [opts["connector"]] if opts["connector"] else [
            c["name"] for c in configured.configs() if c["enabled"]]
        if not names:
            self.stderr.write("no connectors configured: add one with `jezero connector add TYPE NAME --path FOLDER`, "
                              "in the web app (Sources), or as a [[connectors]] table in jezero.toml")
        reports = []
        for name in names:
            with Progress(f"{name}") as progress:
                report = pipeline.run(name, dry_run=opts["dry_run"], sample=opts["sample"], limit=opts["limit"],
                                      progress=progress)
            reports.append(report)
            if not opts["json"]:
                self.stdout.write(render(report))
        if opts["json"]:
            self.emit_json({"runs": [r.as_dict() for r in reports]})


def render(report):
    r = report
    lines = [f"{r.connector}{' (dry run)' if r.dry_run else ''}: units seen {r.units_seen}, changed {r.units_changed}, "
             f"settling {r.units_settling}, too small {r.units_too_small}, stored {r.units_stored}, failed {r.units_failed}"]
    kept = [f"{count} {what}" for count, what in ((r.units_kept_out, "by marker"), (r.units_excluded, "by exclusion"),
                                                  (r.units_forgotten, "forgotten")) if count]
    if kept:
        lines.append(f"  kept out: {', '.join(kept)}")
    if r.dry_run:
        lines.append(f"  would send {r.documents} document(s), {r.characters} characters, "
                     f"about {r.estimated_tokens} tokens")
        lines += [f"  would read {unit['unit']}: {unit['documents']} document(s), {unit['characters']} characters"
                  for unit in r.would_read[:20]]
    else:
        lines.append(f"  segments summarised {r.segments_summarised}, unchanged {r.segments_unchanged}, "
                     f"failed {r.segments_failed}; model calls {r.model_calls} ({r.retries} retries), "
                     f"{r.characters} characters, tokens {r.input_tokens} in / {r.output_tokens} out")
    if r.budget_stopped:
        lines.append(f"  stopped: {r.budget_stopped}; {r.units_left} unit(s) left for the next run")
    for error in r.errors[:20]:
        lines.append(f"  error in {error['unit']}: {error['error']}")
    if r.warnings:
        lines.append("  warnings: " + ", ".join(f"{k} {v}" for k, v in sorted(r.warnings.items())))
    return "\n".join(lines)
