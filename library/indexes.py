"""The names and shapes of the full-text indexes, in one place (a leaf: no Django).

`library.store` creates and writes these tables, `library.postings` keeps the postings of
their common terms, `library.ranking` and `library.search` read them; each takes the names
from here (docs/design.md "The indexes"), as do the readers of the log of item writes
(CHANGES: `library.postings`, `library.catalog`, `library.search`).

- `items_fts` (RECORD_TABLE): the record, trigram tokenizer; the record ranking's index (docs/design.md "The record ranking"), the one
  `records_only` ranks by and the record snippets come from.
- two word indexes (WordIndex), with the word tokenizer (`storage.original_tokenizer`),
  contentless: WORDS, the record's same five columns (the fused search reads the record
  through it: a word of MIN_PREFIX letters or more is looked up as a prefix, `deploy` finds
  `deployment`), and ORIGINAL, what was said (the item's redacted `original`).
"""

from dataclasses import dataclass

from library.tokens import phrase

RECORD_TABLE = "items_fts"
RECORD_COLUMNS = ("title", "summary", "questions", "atoms", "project")
RECORD_WEIGHTS = (2.0, 1.0, 1.5, 1.5, 0.5)   # docs/design.md "The record ranking": bm25's column weights, in that order
K1, B = 1.2, 0.75      # FTS5's bm25() constants
MIN_PREFIX = 3         # a record token of this many letters or more is looked up as a prefix
# Every item write, in order (`store.log_changes`): the seq that the postings and the item
# catalog follow.
CHANGES = "item_changes"


@dataclass(frozen=True)
class WordIndex:
    """One word index: its FTS5 table and the tables kept beside it (the `*_table` names)."""

    name: str           # "words" or "original": `store.rebuild(only=)`, `jezero check`
    role: str           # what it holds, as a search result names it: "record" or "original"
    table: str
    columns: tuple      # its indexed columns (a stored `digest` column follows them)
    weights: tuple      # bm25's weight of each column
    prefix: bool        # whether a token of MIN_PREFIX letters or more is looked up as a prefix
    label: str          # for people: "record word index", "original-text index"

    @property
    def vocab_table(self):
        """fts5vocab 'row' over it: each token's document count."""
        return f"{self.table.removesuffix('_fts')}_vocab"

    @property
    def instances_table(self):
        """fts5vocab 'instance' over it: every token's every occurrence (term, doc, col, offset)."""
        return f"{self.table}_instances"

    @property
    def fresh_table(self):
        """FTS5 table holding the current text of the items changed since the postings' base."""
        return f"{self.table}_fresh"

    @property
    def fresh_instances_table(self):
        """fts5vocab 'instance' over the fresh table."""
        return f"{self.table}_fresh_instances"

    @property
    def changed_table(self):
        """The items whose row changed (or went) since the postings' base."""
        return f"{self.table}_changed"

    @property
    def postings_table(self):
        """Each common token's item count and postings, per generation of the base."""
        return f"{self.table}_postings"

    @property
    def lengths_table(self):
        """Every item's length in tokens, per generation of the base."""
        return f"{self.table}_lengths"

    @property
    def bm25(self):
        """bm25()'s arguments after the table: its column weights (none: every column 1.0)."""
        return "".join(f", {weight:.1f}" for weight in self.weights) if len(self.weights) > 1 else ""

    def expression(self, tokens):
        """The FTS5 expression that looks up these tokens (one token: a word; several: a
        phrase); in the record, one token of MIN_PREFIX letters or more is a prefix."""
        return phrase(tokens, prefix=self.prefix and len(tokens) == 1 and len(tokens[0]) >= MIN_PREFIX)


WORDS = WordIndex("words", "record", "items_words", RECORD_COLUMNS, RECORD_WEIGHTS, prefix=True,
                  label="record word index")
ORIGINAL = WordIndex("original", "original", "items_original_fts", ("text",), (1.0,), prefix=False,
                     label="original-text index")
WORD_INDEXES = (WORDS, ORIGINAL)
