"""Short excerpts that show why a search result was found (docs/design.md "Result rows").

`excerpt(text, terms)` picks the window of an item's original text where most of the
query's terms occur together and marks each occurrence between START and END (private-use
characters: the web app escapes the text first and only then turns them into <mark>; agents
get `plain()` text). Matching is a reader's approximation of the word index: case-insensitive,
whole words from their start, a long word also matching its other endings (`deploying`
finds `deployed`), Chinese, Japanese and Korean characters wherever they stand. Pure
functions: no database.
"""

import re
from dataclasses import dataclass
from functools import lru_cache

from library.tokens import CJK_RE

START, END = "\ue000", "\ue001"
WIDTH = 240            # characters of original text in an excerpt
_MAX_MATCHES = 40      # occurrences of one term looked at in one text
_WORD_RE = re.compile(r"\w+")
_MARKS_RE = re.compile(f"[{START}{END}]")


def plain(text):
    """`text` without the match marks."""
    return _MARKS_RE.sub("", text or "")


def _stem(word):
    """The part of a query word that must begin a word of the text: long words lose their
    ending (deploying → deplo… finds deploy, deployed, deployment)."""
    if len(word) >= 6 and word.isascii():
        return word[: max(4, len(word) - 3)]
    return word


@lru_cache(maxsize=4096)
def _term(term):
    """(anchor, bounded, pattern) for one query term in lowercased text, or None when it holds
    no word: the anchor is what `str.find` looks for (the first word's stem); `bounded` says
    that it must start a word (not for a CJK character); the pattern checks the whole term
    from there — its words in order with a little punctuation or space between them
    (`file.py`, `snake_case`, a phrase, a CJK bigram)."""
    words = []
    for word in _WORD_RE.findall(term.lower()):
        words.extend(CJK_RE.findall(word) if CJK_RE.search(word) else [word])
    if not words:
        return None
    parts = []
    for word in words:
        stem = _stem(word)
        parts.append(re.escape(stem) + (r"\w*" if not CJK_RE.match(word) else ""))
    return _stem(words[0]), not CJK_RE.match(words[0]), re.compile(r"\W{0,3}".join(parts))


def _occurrences(low, compiled):
    """[(start, end, term number)] of every term in `low`, in text order."""
    found = []
    for number, (anchor, bounded, pattern) in enumerate(compiled):
        position, count = 0, 0
        while count < _MAX_MATCHES:
            position = low.find(anchor, position)
            if position < 0:
                break
            if bounded and position and (low[position - 1].isalnum() or low[position - 1] == "_"):
                position += 1
                continue
            match = pattern.match(low, position)
            if match is None:
                position += 1
                continue
            found.append((match.start(), match.end(), number))
            position, count = match.end(), count + 1
    found.sort()
    return found


def _found(text, terms):
    """[(start, end, term number)] of `terms` in `text`, in text order."""
    compiled = [t for t in (_term(term) for term in terms) if t] if text and terms else []
    if not compiled:
        return []
    low = text.lower()
    if len(low) != len(text):  # a few characters lowercase to two: match on the text itself
        low = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return _occurrences(low, compiled)


@dataclass(frozen=True)
class Window:
    """Where a query's terms occur in a text (`found`: [(start, end, term number)] in text
    order) and its densest window of `width` characters: how many distinct terms it holds
    (`count`, 0 when none occurs) and its first and last occurrence (`best`). The ranking's
    last stage orders the best results by `count` (`ranking.closer`) and the snippet shows
    the window (`excerpt`): one scan of the text serves both."""

    found: list
    count: int
    best: tuple
    width: int


def window(text, terms, width=None):
    """The Window of `terms` in `text`."""
    width = width or WIDTH
    found = _found(text, terms)
    if not found:
        return Window(found, 0, (0, 0), width)
    # The window of `width` characters holding the most distinct terms (the earliest on a tie).
    best, best_count, left = (0, 0), 0, 0
    counts = {}
    for right, (_start, end, number) in enumerate(found):
        counts[number] = counts.get(number, 0) + 1
        while left < right and end - found[left][0] > width:
            old = found[left][2]
            counts[old] -= 1
            if not counts[old]:
                del counts[old]
            left += 1
        if len(counts) > best_count:
            best_count, best = len(counts), (left, right)
    return Window(found, best_count, best, width)


def excerpt(text, terms, width=WIDTH, *, at=None):
    """The excerpt of `text` (one line, at most about `width` characters plus '…' at a cut)
    around the densest group of `terms`, with each occurrence marked; "" when none occurs.
    `at`: the Window of these terms in this text, when the ranking already found it."""
    at = at if at is not None and at.width == width else window(text, terms, width)
    if not at.count:
        return ""
    found, best = at.found, at.best
    first, last = found[best[0]], found[best[1]]
    pad = max(width - (last[1] - first[0]), 0) // 2
    start = max(first[0] - pad, 0)
    end = min(max(last[1] + pad, start + width), len(text))
    start = max(min(start, end - width), 0)
    # Cut at white space where one is near, so words are not split.
    if start > 0:
        space = text.rfind(" ", max(start - 20, 0), first[0])
        start = space + 1 if space >= 0 else start
    if end < len(text):
        space = text.find(" ", end, min(end + 20, len(text)))
        end = space if space >= 0 else end
    pieces, position = [], start
    for match_start, match_end, _number in found:
        if match_start < max(start, position) or match_end > end:
            continue
        pieces.append(text[position:match_start])
        pieces.append(START + text[match_start:match_end] + END)
        position = match_end
    pieces.append(text[position:end])
    body = " ".join("".join(pieces).split())
    return ("…" if start > 0 else "") + body + ("…" if end < len(text) else "")
