"""The ``neardup dedup`` pipeline on Apache Spark: same input semantics, same stages, same result.

    read ──> parse + exact fingerprints + signatures + shingle ids + band keys
             (one mapInArrow pass: the local reader's JSONL block scanner, the compiled kernel)
         ──> exact pass (lowest ordinal per fingerprint)
         ──> candidate pairs: (band, key, ordinal) triples packed per partition, one shuffle;
             per bucket, each member with the next 63 in ordinal order (numpy, per partition)
         ──> estimate filter + exact verification (each group of pairs meets its documents'
             signatures and shingle ids in one task)
         ──> connected components ──> survivors by the keep policy ──> similarity to survivor

Every pass over the documents is a ``mapInArrow`` over Arrow batches: signatures, shingle ids and
band keys are binary columns read in place as numpy arrays; no stage makes a Python object per
document, band key or pair (ids and reasons aside, which the outputs hold).

With a local output (:func:`~neardup.engines.spark.api.dedup_paths`, ``neardup dedup --engine
spark``) the driver writes the local engine's files with its writers, one line per record, so it
holds a few values per record anyway (:func:`~neardup.engines.spark.driver.dedup_on_driver`): it
collects the small columns once and runs the exact pass, connected components (union-find over
arrays), survivors and outcomes with the local stages, while signatures and shingle ids stay on the
executors; the candidate pairs and the verified edges come back packed. With the DataFrame API
(:func:`~neardup.engines.spark.api.dedup`) and outputs on a Hadoop file system, every stage is a
DataFrame operation (:func:`~neardup.engines.spark.driver.dataframe_stages`); nothing about the
corpus, its signatures or its edges is collected to the driver (only counts, the per-file/per-split
line counts that give ordinals, and the summary's small aggregates). The Python code that runs on
executors is the local engine's own stages (:mod:`neardup.stages`):
:func:`~neardup.stages.sketch.sketch_texts` and the encoded batches of :mod:`neardup.stages.encode`
(the compiled kernel + content fingerprints), :func:`~neardup.stages.candidates.band_keys`,
:func:`~neardup.stages.candidates.estimate_filter`, :func:`~neardup.stages.verify.pair_similarities`
and :func:`~neardup.stages.verify.score_of`, so the shingles, hashes, signatures, estimates and
exact similarities are bit-for-bit the local ones, and so are the clusters, survivors, reasons and
pairs (see ``tests/spark/test_engine.py``).

**Ordinals.** The local engine orders records by their position in the input (``ordinal``): the
window of 64 in a bucket, the record an exact duplicate points to, and the survivor's tie-break all
use it. :func:`~neardup.engines.spark.api.dedup_paths` gives every record exactly the local ordinal:
files in the local reader's order (folders walked sorted), and for JSONL, lines counted per file
split (``_metadata.file_block_start``) in a first JVM-only pass, so a line's ordinal is the number
of lines in earlier files and earlier splits plus its index in its split; Parquet rows use
``_metadata.row_index`` (Spark >= 3.5). :func:`~neardup.engines.spark.api.dedup` on a DataFrame
orders by ``order_col`` (unique; e.g. a line number) or, without it, by (id, hash of the text),
which does not depend on how the DataFrame is partitioned.

**JSONL lines** are read with the DataFrame text source, ``lineSep="\\n"``, as raw bytes (the value
cast to binary): ``SparkContext.textFile`` would also split at a lone ``\\r`` and replace invalid
UTF-8 with U+FFFD, both unlike the local reader. The lines of each file split in a batch are joined
back into a block of whole lines and read by the local reader's block reader
(:meth:`~neardup.io.read.RecordReader.jsonl_block_records`, see
:mod:`neardup.engines.spark.sketching`); when that fast path does not apply (HTML content, a keep
field, no compiled scanner) each line is parsed with the local reader's own rules and helpers (see
:mod:`neardup.engines.spark.rows`). Compression comes from the Hadoop codecs, by file name (``.gz``;
``.bz2`` would work but the local reader does not read it); ``.zst`` needs Hadoop's native zstd and
is refused up front.

**Modules.** :mod:`~neardup.engines.spark.api` (the entry points), ``read`` (the input files
and their ordinals), ``rows`` and ``sketching`` (executors: records and the sketch
table), ``executors`` (executors: candidates, verification, similarities), ``driver``
(the stages after sketching), ``urls`` (URL identity, ``--url-field``), ``write``,
``refusals`` (what the engine does not honour, for the CLI and the entry points alike),
``columns`` (Arrow binary columns), ``components``, ``session`` and
``standalone``.
"""
