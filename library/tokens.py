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
CJK_SPLIT_RE = re.compile(f"([{CJK_CHARS}]+)")   # re.split keeps the runs between the other pieces
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
    them: letters and digits, lowercased, accents removed; CJK one by one and as written
    (the tokenizer leaves kana's voicing marks and Hangul syllables whole)."""
    return [token if CJK_RE.match(token) else fold(token) for token in _TOKEN_RE.findall(index_text(term))]


# --- scripts: what a word is written in, what an item is written in -----------------------------
# Rarity is counted per script (the first-prompt rule, docs/design.md "The first-prompt rule"):
# an ordinary Russian word is in most Russian sessions, however few of the library's they are.
# The languages after the scripts are written in Latin letters: their words are told apart by
# the language of the text around them (`language_of`), from words only that language uses often.
LANGUAGES = ("es", "fr", "pt", "de", "it")
SCRIPTS = ("latin", "cyrillic", "greek", "arabic", "hebrew", "devanagari", "thai", "han", "kana", "hangul",
           *LANGUAGES)
_FUNCTION_WORDS = {
    "en": "the and is are of to in it this that with for you can please what how was not but have",
    "es": "el los las del de la por para una esto este esta pero como hacer puedes quiero necesito tengo también hay ya",
    "fr": "le les des de la et un une est dans pour avec pas je vous il faut qui sur du au ce cette peux",
    "pt": "não você uma de com isso está também preciso quero fazer os do da em ao na no",
    "de": "und die der das ist nicht mit ich bitte eine für auch auf den dem zu wir sie",
    "it": "che il gli della sono non questo voglio fare anche per con una mi di lo nel",
}
_FUNCTION = {lang: frozenset(words.split()) for lang, words in _FUNCTION_WORDS.items()}
# function word: the languages it is one of (one lookup a word, not one a language)
_LANGUAGES_OF = {word: tuple(lang for lang, words in _FUNCTION.items() if word in words)
                 for word in set().union(*_FUNCTION.values())}
_LOWER_WORD_RE = re.compile(r"[^\W\d_]+")
LANGUAGE_WORDS = 20   # a text is in a language when it holds this many of its function words …
LANGUAGE_CHARS = 50_000   # … in its first this many characters
PROMPT_LANGUAGE_WORDS = 2   # … a prompt, this many (and more than of English's)
_SCRIPT_RANGES = {
    "cyrillic": "\u0400-\u052f", "greek": "\u0370-\u03ff", "arabic": "\u0600-\u06ff\u0750-\u077f",
    "hebrew": "\u0590-\u05ff", "devanagari": "\u0900-\u097f", "thai": "\u0e00-\u0e7f",
    "kana": "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f", "hangul": "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af",
    "han": "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f",
}
_SCRIPT_RES = {name: re.compile(f"[{chars}]") for name, chars in _SCRIPT_RANGES.items()}
SCRIPT_LETTERS = 20   # an item is written in a script when it holds at least this many of its letters


def script_of(word):
    """The script a word (or a CJK two-character phrase) is written in: the first non-Latin
    script among its letters (kana and Hangul before Han, so a Japanese phrase is kana), or
    "latin" (letters, digits and anything else)."""
    for name in ("kana", "hangul", "han", "cyrillic", "greek", "arabic", "hebrew", "devanagari", "thai"):
        if _SCRIPT_RES[name].search(word):
            return name
    return "latin"


def _function_counts(text):
    counts = dict.fromkeys(_FUNCTION, 0)
    for word in _LOWER_WORD_RE.findall(text[:LANGUAGE_CHARS].lower()):
        for lang in _LANGUAGES_OF.get(word, ()):
            counts[lang] += 1
    return counts


def language_of(text):
    """The Latin-script language of a short text (a prompt) among LANGUAGES, or None (English,
    or too little to tell): the one with the most of its function words, at least
    PROMPT_LANGUAGE_WORDS and more than English's."""
    counts = _function_counts(text or "")
    lang = max(LANGUAGES, key=lambda name: counts[name])
    return lang if counts[lang] >= PROMPT_LANGUAGE_WORDS and counts[lang] > counts["en"] else None


def scripts_of(*texts):
    """The bit set (bit i: SCRIPTS[i]) of the scripts and languages these texts are written
    in: Latin always, another script when it has at least SCRIPT_LETTERS letters in them, a
    language of LANGUAGES when they hold LANGUAGE_WORDS of its function words."""
    bits = 1
    counts = dict.fromkeys(_FUNCTION, 0)
    for text in texts:
        for lang, count in _function_counts(text or "").items():
            counts[lang] += count
    for lang in LANGUAGES:
        if counts[lang] >= LANGUAGE_WORDS:
            bits |= 1 << SCRIPTS.index(lang)
    texts = [text for text in texts if text and not text.isascii()]
    for i, name in enumerate(SCRIPTS[1:len(SCRIPTS) - len(LANGUAGES)], start=1):
        pattern, seen = _SCRIPT_RES[name], 0
        for text in texts:
            for _match in pattern.finditer(text):
                seen += 1
                if seen >= SCRIPT_LETTERS:
                    break
            if seen >= SCRIPT_LETTERS:
                bits |= 1 << i
                break
    return bits


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
