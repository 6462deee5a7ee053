"""Scheduler presets: named policies mapped to engine codes."""
