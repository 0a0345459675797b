"""Scale: streaming accumulators, Dask arrays, and the exact selection and sketches they use.

The public paths are ``calibkit.streaming`` and ``calibkit.dask``; see docs/architecture.md.
"""
