"""How sure is the number: intervals, a calibration test, debiased and weighted estimates.

One module per concept; the public functions are re-exported by :mod:`calibkit`. This package
file imports nothing, so that leaf modules (``masses``, ``debias``, ``bin_intervals``) can be used
by :class:`calibkit.CalibrationBins` without an import cycle. See ``docs/trust.md``.
"""
