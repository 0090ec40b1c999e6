"""The local engine: one process, batches sketched on a thread pool, sketches spilled past the memory budget."""
