"""Streaming data and engines: data bounded by disk, not memory.

:mod:`~lcbayes.streaming.reader` (:func:`lcbayes.scan_file`) reads a CSV or Parquet file in
chunks into :class:`~lcbayes.streaming.blocks.PatternBlocks`, blocks of unique patterns with
counts (in memory or ``.npz`` files), which the streaming engines read one block at a time.
"""
