from library import search
from library.cli import Verb, hit_line


class Command(Verb):
    help = "Search the library (literal full-text: words, fragments, \"quoted phrases\")."

    def add_arguments(self, parser):
        parser.add_argument("query", nargs="+", help="the words to look for")
        parser.add_argument("--project", help="only this project (exact)")
        parser.add_argument("--source", help="only this source (exact)")
        parser.add_argument("--since", help="only items at or after this date/time (UTC unless an offset is given)")
        parser.add_argument("--limit", type=int, help="how many results (default 10, at most search.max_limit)")

    def handle(self, *args, **opts):
        result = search.search(" ".join(opts["query"]), allowed_sources=search.ALL_SOURCES,
                               project=opts["project"], source=opts["source"], since=opts["since"],
                               limit=opts["limit"])
        if opts["json"]:
            self.emit_json(result.as_dict())
        elif result.match is None:
            self.stdout.write("no searchable words: use words of 3 or more characters, or a \"quoted phrase\"")
        else:
            for hit in result.hits:
                self.stdout.write(hit_line(hit))
            if not result.hits:
                self.stdout.write("no results")
