from library import store
from library.cli import Progress, Verb


class Command(Verb):
    help = ("Rebuild the full-text indexes from the items — the record index with storage.tokenizer, the "
            "record word index and the original-text index with storage.original_tokenizer (e.g. after "
            "changing either), and every item's vector (search by meaning).")

    def add_arguments(self, parser):
        parser.add_argument("--only", choices=(*(index.name for index in store.INDEXES), store.MEANING),
                            help="rebuild one of the indexes")

    def handle(self, *args, **opts):
        previous = store.recorded_tokenizers()
        bars = {}

        def progress(label, done, total):
            bars.setdefault(label, Progress(f"reindex: {label}"))(done, total)

        try:
            count = store.rebuild(only=opts["only"], progress=progress)
        finally:
            for bar in bars.values():
                bar.__exit__(None, None, None)
        tokenizers = store.configured_tokenizers()
        if opts["only"] == store.MEANING:
            tokenizers = {}
        elif opts["only"]:
            tokenizers = {opts["only"]: tokenizers[opts["only"]]}
        if opts["json"]:
            embedded = opts["only"] in (None, store.MEANING)
            self.emit_json({"indexed": count, "tokenizers": tokenizers,
                            "vectors_model": store.meaning.MODEL if embedded else None,
                            "previous_tokenizers": {k: previous[k] for k in tokenizers},
                            # the record index's, under the names this verb has always printed
                            "tokenizer": store.configured_tokenizer(), "previous_tokenizer": previous["record"]})
        else:
            for name, tokenizer in tokenizers.items():
                self.stdout.write(f"indexed {count} item(s) in the {name} index with tokenizer {tokenizer!r}")
            if opts["only"] in (None, store.MEANING):
                self.stdout.write(f"embedded {count} item(s) with {store.meaning.MODEL}")
