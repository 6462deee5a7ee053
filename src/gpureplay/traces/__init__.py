"""Trace adapters: one module per public format, each mapping raw files to the canonical jobs table."""
