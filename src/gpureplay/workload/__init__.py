"""Workloads: transforms of canonical jobs (window, sample, load scaling) and synthetic generators."""
