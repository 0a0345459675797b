"""Binning-free estimators: smooth ECE, the KS calibration error, the CORP decomposition.

See docs/binning-free.md and docs/architecture.md.
"""
