import time

from library import store
from library.cli import Verb


class Command(Verb):
    help = ("Merge each full-text index into one b-tree (FTS5 optimize) and bring the common-word lists "
            "in step; the worker also does this daily.")

    def handle(self, *args, **opts):
        started = time.perf_counter()
        lists = store.optimize()
        seconds = round(time.perf_counter() - started, 3)
        if opts["json"]:
            self.emit_json({"optimized": True, "seconds": seconds, "listed_words": lists["words"],
                            "lists_built": lists["built"]})
        else:
            self.stdout.write(f"optimized the full-text indexes in {seconds} s; {lists['words']} common word(s) "
                              f"have a list ({lists['built']} built now)")
