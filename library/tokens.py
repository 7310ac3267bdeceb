"""How text becomes the tokens of the word indexes, and how tokens become FTS5 expressions.

A leaf: no Django, no database. The indexes (`library.store`), the query side
(`library.terms`, `library.ranking`), the postings (`library.postings`) and the snippets all
take these from here, so that there is one answer to "what does the index hold for this
text?" (docs/design.md "Text and tokens").

- `index_text` is what a word index is given: Chinese, Japanese and Korean characters stand
  alone (a word tokenizer would see an unspaced sentence as one word) and private-use
  characters become spaces.
- `index_tokens` is the tokens FTS5's `unicode61 remove_diacritics 2` makes of a query word
  (letters and digits, lowercased, accents removed). It is used to *name* what a query looks
  up; FTS5 itself tokenizes every expression it is given, so a character this reading gets
  wrong only changes the name, never what an index holds.
- `quote` and `phrase` write FTS5 string literals: every term is quoted (quotes doubled), so
  nothing a person types acts as an operator.
"""

import re
import unicodedata

# Han ideographs (with extensions and compatibility forms), kana, Hangul and CJK punctuation:
# scripts written without spaces between words.
CJK_CHARS = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31ff\u3200-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
CJK_RE = re.compile(f"[{CJK_CHARS}]")
CJK_RUN_RE = re.compile(f"[{CJK_CHARS}]+")
_CJK_ONE_RE = re.compile(f"([{CJK_CHARS}])")
_PRIVATE_RE = re.compile("[\ue000-\uf8ff]")
_TOKEN_RE = re.compile(r"[^\W_]+")


def index_text(text):
    """The text a word index tokenizes: `text` with every CJK character standing alone and
    private-use characters (unicode61 would count them as letters; the query side, like
    Python's `\\w`, does not) as spaces."""
    if _PRIVATE_RE.search(text):
        text = _PRIVATE_RE.sub(" ", text)
    return _CJK_ONE_RE.sub(r" \1 ", text) if CJK_RE.search(text) else text


def fold(text):
    """Lowercase, accents stripped."""
    if (text or "").isascii():
        return (text or "").lower()
    decomposed = unicodedata.normalize("NFKD", text or "")
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def index_tokens(term):
    """The tokens a word index holds for a term, as `unicode61 remove_diacritics 2` makes
    them: letters and digits, lowercased, accents removed (CJK one by one)."""
    return _TOKEN_RE.findall(fold(index_text(term)))


def quote(text):
    """An FTS5 string literal: `text` in double quotes, quotes inside doubled."""
    return '"' + text.replace('"', '""') + '"'


def phrase(tokens, prefix=False):
    """The FTS5 expression of tokens in a row (one token: that word), optionally as a prefix
    (`"deploy"*` matches every token that begins with `deploy`)."""
    return quote(" ".join(tokens)) + ("*" if prefix else "")


def prefix_end(prefix):
    """The smallest string above every string that begins with `prefix` (for a range of an
    index's vocabulary, which SQLite orders by code point)."""
    for cut in range(len(prefix) - 1, -1, -1):
        code = ord(prefix[cut]) + 1
        if code <= 0x10FFFF:
            return prefix[:cut] + chr(0xE000 if 0xD800 <= code <= 0xDFFF else code)   # no lone surrogates
    return None
