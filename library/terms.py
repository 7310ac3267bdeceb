"""From what a person or an agent typed to FTS5 MATCH expressions, for both indexes.

- `build_match_query` — the record index, exactly as docs/design.md "Query terms" says: terms split on white space,
  "quoted phrases" kept whole, terms shorter than the tokenizer's minimum dropped, each term
  quoted, OR-ed.
- `build_original_query` — the original-text index (docs/design.md "Query terms"), a word index: the same terms,
  each quoted (so nothing typed acts as an operator), with three differences that the
  recall evaluation (`bench/recall.py`) measured: common words ("the", "why", "para") are
  dropped from unquoted text, since in tens of kilobytes of dialogue they match everything
  and rank nothing; Chinese, Japanese and Korean runs become phrases of two characters (the
  index holds those characters one by one, `tokens.index_text`); and nothing is dropped for
  length, since a word index can look up `CI` or `Go`. (`library.search` also leaves out
  words that more than half of this library's originals hold: that needs the library.)

Both always reach SQLite as bound parameters. `fold` and `STOP_WORDS` also serve the agent
hooks' choice of distinctive words.
"""

import re

from library import store
from library.errors import BadInput
from library.tokens import CJK_RUN_RE, CJK_SPLIT_RE, fold, index_text, quote

STOP_WORDS = frozenset("""
the and for with that this from have has had was were are is be been being you your yours our ours their them they
then than there here what when where which who whom why how can could would should will shall may might must not but
all any some each every one two also just like make made need needs want wants use using used get got let lets now
into onto about over under again more most much many such very too only own same other others its it's it an a of to
in on at by as or if so do does did done doing please help fix thanks thank hello hi hey ok okay yes no new old
something anything everything nothing thing things way ways still even well back out up down off via per
i me my we us he she his her him am did didn't don't doesn't isn't wasn't can't won't i'm it's that's there's
para que con por una uno unos unas los las del como esta este esto estos estas pero mas muy hay sus tus mis
ayuda ayudame ayudar puedes puede necesito quiero queria favor hacer haz cuando donde porque sobre entre desde hasta
tambien solo ahora algo todo todos todas nada bien hola gracias el la lo le les al se su tu mi es son fue ser
""".split())

_WORD_RE = re.compile(r"\w+")


MAX_QUERY_CHARS = 1_000   # a query is a few words; this leaves room for a pasted error line
# Terms (words and "phrases") one query may hold: room for a long question in natural
# language (the recall evaluation's run to 37 words), and a bound on the work.
MAX_TERMS = 64
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def clean_query(text):
    """A query fit to look up: control characters (a NUL ends an FTS5 string) replaced by
    spaces. Raises BadInput past MAX_QUERY_CHARS characters or MAX_TERMS terms, so that no
    input costs more than a bounded query."""
    text = _CONTROL_RE.sub(" ", text or "")
    if len(text) > MAX_QUERY_CHARS:
        raise BadInput(f"query: at most {MAX_QUERY_CHARS:,} characters (this one has {len(text):,}); "
                       "search with two to five distinctive words")
    count = len(split_terms(text))
    if count > MAX_TERMS:
        raise BadInput(f"query: at most {MAX_TERMS} words or \"phrases\" (this one has {count}); "
                       "search with two to five distinctive words")
    return text


def split_terms(text):
    """Words separated by white space; text in double quotes is one term (a phrase). An
    unbalanced quote counts as closed at the end. Empty terms are dropped.

    Returns (term, quoted) pairs through `split_terms_quoted`; this gives the terms alone.
    """
    return [term for term, _quoted in split_terms_quoted(text)]


def split_terms_quoted(text):
    """Like `split_terms`, with whether each term was typed in double quotes."""
    terms, word, phrase, in_phrase = [], [], [], False
    for char in text or "":
        if in_phrase:
            if char == '"':
                terms.append(("".join(phrase).strip(), True))
                phrase, in_phrase = [], False
            else:
                phrase.append(char)
        elif char == '"':
            terms.append(("".join(word), False))
            word, in_phrase = [], True
        elif char.isspace():
            terms.append(("".join(word), False))
            word = []
        else:
            word.append(char)
    terms.append(("".join(phrase).strip(), True) if in_phrase else ("".join(word), False))
    return [(term, quoted) for term, quoted in terms if term]


def build_match_query(text, tokenizer=None):
    """The record index's MATCH expression for free text (docs/design.md "Query terms"), or None when no term is
    long enough.

    `analytics shop "consent banner"` → `"analytics" OR "shop" OR "consent banner"`. Every
    term is quoted (quotes inside doubled), so nothing typed acts as an FTS5 operator.
    """
    minimum = store.min_term_length(tokenizer)
    quoted = {}
    for term in split_terms(text):
        if len(term) >= minimum:
            quoted.setdefault(quote(term), None)
    return " OR ".join(quoted) or None


def cjk_bigrams(run):
    """A run of CJK characters as phrases of two adjacent characters (one for a lone one)."""
    if len(run) == 1:
        return [run]
    return [f"{run[i]} {run[i + 1]}" for i in range(len(run) - 1)]


def original_terms(text):
    """The original-index terms of free text, as plain strings (phrases hold spaces)."""
    out = []
    for term, quoted in split_terms_quoted(text):
        if quoted:
            # A phrase as typed; CJK characters spaced as the index holds them.
            if _WORD_RE.search(term):
                out.append(" ".join(index_text(term).split()))
            continue
        words = _WORD_RE.findall(term)
        if not words or all(fold(word) in STOP_WORDS for word in words):
            continue
        if CJK_RUN_RE.search(term):
            # Split the term into its CJK runs (as bigrams) and the other words around them.
            for piece in CJK_SPLIT_RE.split(term):
                if CJK_RUN_RE.fullmatch(piece):
                    out.extend(cjk_bigrams(piece))
                else:
                    out.extend(w for w in _WORD_RE.findall(piece) if fold(w) not in STOP_WORDS)
            continue
        out.append(term)
    return list(dict.fromkeys(out))


def build_original_query(text):
    """The original-text index's MATCH expression for free text, or None when nothing is
    left to look up. `why did the deploy serve the old "dist/app.js"?` →
    `"deploy" OR "serve" OR "dist/app.js"`."""
    return quote_terms(original_terms(text))



def quote_terms(terms):
    """Terms OR-ed, each quoted; None for no terms."""
    return " OR ".join(quote(term) for term in terms) or None

