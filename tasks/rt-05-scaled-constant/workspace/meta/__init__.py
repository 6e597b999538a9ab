"""Fixtures derived from published reference data."""
