"""Ingestion: connectors' units → redaction → segments → summaries → stored items, and the
maintenance that works on stored items again (retag, redact-stored, re-summarise)."""
