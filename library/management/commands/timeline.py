from library import search
from library.cli import Verb, hit_line


class Command(Verb):
    help = "List items newest first."

    def add_arguments(self, parser):
        parser.add_argument("--project", help="only this project (exact)")
        parser.add_argument("--source", help="only this source (exact)")
        parser.add_argument("--since", help="at or after this date/time (inclusive)")
        parser.add_argument("--until", help="before this date/time (exclusive)")
        default = search.clamp_limit(None, search.TIMELINE_DEFAULT_LIMIT)   # what a missing --limit means
        parser.add_argument("--limit", type=int, help=f"how many (default {default}, at most search.max_limit)")

    def handle(self, *args, **opts):
        hits = search.timeline(allowed_sources=search.ALL_SOURCES, project=opts["project"], source=opts["source"],
                               since=opts["since"], until=opts["until"], limit=opts["limit"])
        hint = None if hits else search.waiting(search.ALL_SOURCES)
        if opts["json"]:
            self.emit_json({"results": [hit.as_dict() for hit in hits], "hint": hint})
        elif not hits:
            self.stdout.write(hint or "no items" + (" match these filters" if any(
                opts[name] for name in ("project", "source", "since", "until")) else " yet: `jezero run` reads the "
                "configured connectors, `jezero connector list` shows them"))
        else:
            for hit in hits:
                self.stdout.write(hit_line(hit))
