"""The engines that run a dedup: each moves record batches between the stages of :mod:`neardup.stages`."""
