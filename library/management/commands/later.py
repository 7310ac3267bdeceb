from library import search
from library.cli import Verb, later_text


class Command(Verb):
    help = "Newer items on the same subject as item ID (check before relying on a decision)."

    def add_arguments(self, parser):
        parser.add_argument("id", type=int, help="the item's id")
        parser.add_argument("--query", help="the subject in words (default: the item's title)")
        default = search.clamp_limit(None, search.LATER_DEFAULT_LIMIT)   # what a missing --limit means
        parser.add_argument("--limit", type=int, help=f"how many (default {default}, at most search.max_limit)")

    def handle(self, *args, **opts):
        result = search.later(opts["id"], allowed_sources=search.ALL_SOURCES, query=opts["query"], limit=opts["limit"])
        if opts["json"]:
            self.emit_json(result.as_dict())
        else:
            self.stdout.write(later_text(result))
