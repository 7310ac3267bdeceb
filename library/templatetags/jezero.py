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
