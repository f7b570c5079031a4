"""Streaming data and engines: data bounded by disk, not memory."""
