"""The library: items, their full-text indexes, the read side (search, later, timeline), and
its two wings: `ingest` (sources to stored items) and `access` (agents and devices)."""

__version__ = "0.2.0"
