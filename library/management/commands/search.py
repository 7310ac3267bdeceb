from library import search
from library.cli import Verb, hit_line


class Command(Verb):
    help = "Search the library (literal full-text: words, fragments, \"quoted phrases\")."

    def add_arguments(self, parser):
        parser.add_argument("query", nargs="+", help="the words to look for")
        parser.add_argument("--project", help="only this project (exact)")
        parser.add_argument("--source", help="only this source (exact)")
        parser.add_argument("--since", help="only items at or after this date/time (UTC unless an offset is given)")
        default = search.clamp_limit(None, search.search_default_limit())   # what a missing --limit means
        parser.add_argument("--limit", type=int, help=f"how many results (default {default}, at most search.max_limit)")
        parser.add_argument("--records-only", action="store_true",
                            help="rank by the records alone, not also by what was said")

    def handle(self, *args, **opts):
        result = search.search(" ".join(opts["query"]), allowed_sources=search.ALL_SOURCES,
                               project=opts["project"], source=opts["source"], since=opts["since"],
                               limit=opts["limit"], records_only=opts["records_only"])
        if opts["json"]:
            self.emit_json(result.as_dict())
        elif result.match is None and result.original_match is None:
            self.stdout.write("no searchable words: use distinctive words (3 or more characters for --records-only), "
                              "or a \"quoted phrase\"")
        else:
            if result.hint:
                self.stdout.write(result.hint)
            for hit in result.hits:
                self.stdout.write(hit_line(hit))
                where = " + ".join(hit.matched_in)
                snippet = search.plain_snippet(hit.snippet)
                self.stdout.write(f"      [{where}] {snippet}" if snippet else f"      [{where}]")
            if not result.hits:
                self.stdout.write("no results")
