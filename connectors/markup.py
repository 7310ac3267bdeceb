"""Markdown structure the text-reading connectors (markdown, specstory) must respect: fenced
code blocks, inside which headings, turn markers and separators are only text. No Django here.
"""

import re

FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


class Fences:
    """Tracks fenced code blocks (CommonMark): `inside` is true between an opening fence and
    its closing one (same character, at least as long, no info string)."""

    def __init__(self):
        self.open = None            # (character, length) of the open fence

    @property
    def inside(self):
        return self.open is not None

    def feed(self, line):
        """Account for `line`; returns True when it is a fence line (opening or closing)."""
        match = FENCE.match(line)
        if match is None:
            return False
        fence, info = match.group("fence"), match.group("info")
        if self.open is None:
            if fence[0] == "`" and "`" in info:
                return False        # inline code such as ```a``` is not a fence
            self.open = (fence[0], len(fence))
            return True
        char, length = self.open
        if fence[0] == char and len(fence) >= length and not info.strip():
            self.open = None
            return True
        return False
