"""Comparison reports from result folders: tables across seeds, effects in words, figures.

``build_report(inputs, out_dir)`` is the entry point (``gpureplay report``).
"""

from gpureplay.report.build import build_report

__all__ = ["build_report"]
