"""Template helpers. `highlight` escapes an FTS5 snippet first and only then turns the
private-use match markers into <mark> elements, so stored text can never become markup."""

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from library.search import SNIPPET_END, SNIPPET_START

register = template.Library()


@register.filter
def highlight(fragment):
    text = escape(fragment or "")
    return mark_safe(text.replace(SNIPPET_START, "<mark>").replace(SNIPPET_END, "</mark>"))


@register.filter
def get_item(mapping, key):
    """`mapping|get_item:key` — a dict lookup by a variable key."""
    return (mapping or {}).get(key)


_PLACES = {"record": "the record", "original": "what was said"}


@register.filter
def found_in(matched_in):
    """A hit's `matched_in` in words: "found in what was said and the record, close in meaning"."""
    places = " and ".join(_PLACES[where] for where in matched_in if where in _PLACES)
    text = f"found in {places}" if places else ""
    if "meaning" in matched_in:
        text += ", close in meaning" if text else "close in meaning"
    return text
