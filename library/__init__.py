"""The library: items, their full-text index, and the read side (search, later, timeline)."""
