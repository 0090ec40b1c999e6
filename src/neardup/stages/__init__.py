"""The stages of a dedup, as plain functions over arrays, written once.

    encode ──> sketch ──> exact ──> candidates ──> verify ──> survivors

- :mod:`.encode`: records to the UTF-8 batches the kernel reads;
- :mod:`.sketch`: a batch of texts to signatures, shingle ids, content fingerprints and
  simhashes (the one place that chooses between the compiled kernel and pure Python);
- :mod:`.exact`: the first holder of each content fingerprint;
- :mod:`.candidates`: the banding policy, candidate pairs from band keys or simhashes, and the
  estimate filter;
- :mod:`.grouping`: ``<key, value>`` records grouped by key within a memory budget (partitioned
  spill and external sort), for band keys and method broder's samples and pairs;
- :mod:`.verify`: exact similarity of candidate pairs on their shingle ids;
- :mod:`.survivors`: clusters, their survivors and every record's outcome.

No stage starts a thread pool of its own for a whole run, writes a file (except the grouping's
partition files, in a folder its caller gives and removes), or knows which engine runs it: the local engine (:mod:`neardup.engines.local`), the index (:mod:`neardup.store.sqlite`),
the Spark engine, the report and :mod:`neardup.evaluate` move arrays between these functions.
(Functions that take ``jobs`` split one call over that many threads and join them before
returning: the compiled kernel releases the GIL.)
"""
