from library import search
from library.cli import Verb, later_text


class Command(Verb):
    help = "Newer items on the same subject as item ID (check before relying on a decision)."

    def add_arguments(self, parser):
        parser.add_argument("id", type=int, help="the item's id")
        parser.add_argument("--query", help="the subject in words (default: the item's title)")
        parser.add_argument("--limit", type=int, help="how many (default 5)")

    def handle(self, *args, **opts):
        result = search.later(opts["id"], allowed_sources=search.ALL_SOURCES, query=opts["query"], limit=opts["limit"])
        if opts["json"]:
            self.emit_json(result.as_dict())
        else:
            self.stdout.write(later_text(result))
