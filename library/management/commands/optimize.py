import time

from library import store
from library.cli import Verb


class Command(Verb):
    help = ("Merge each full-text index into one b-tree (FTS5 optimize) and refresh the postings of their common "
            "terms (the search reads a common term from them); the worker also does this daily.")

    def handle(self, *args, **opts):
        started = time.perf_counter()
        report = store.optimize()
        seconds = round(time.perf_counter() - started, 3)
        if opts["json"]:
            self.emit_json({"optimized": True, "seconds": seconds, "common_terms": report["terms"],
                            "weightless_terms": report["weightless"], "changed_items": report["items"]})
        else:
            self.stdout.write(f"optimized the full-text indexes in {seconds} s; {report['terms']} common term(s) "
                              f"have postings, {report['weightless']} more weigh nothing; "
                              f"{report['items']} changed item(s) folded in")
