"""The binned (General Calibration Error) family: one engine and its readings.

The engine: score groups (:mod:`.groups`), bins and the per-(group, bin) table
(:mod:`.table`), one reduction (the Rust ``reduce_table``), the metric identities
(:mod:`.spec`). Its readings: the named metrics (:mod:`.metrics`), :func:`evaluate` over a
metric space (:mod:`.space`), the tables behind diagrams (:mod:`.bins`), sample weights
(:mod:`.weights`), multilabel data, diagnostics, ``num_bins="auto"``, per-bin intervals and the
debiased l2. See docs/architecture.md.
"""
