"""Connectors: one module per source type, reading units into blocks. No Django imports;
plain dataclasses out (built with the ingestion work)."""
