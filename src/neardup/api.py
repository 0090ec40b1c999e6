"""A whole dedup in process: :func:`dedup` takes records in memory and returns the answer.

    >>> import neardup
    >>> result = neardup.dedup([{"id": "a", "text": "the crawler fetches each page and follows its links"},
    ...                         {"id": "b", "text": "The crawler fetches each page, and follows its links!"}])
    >>> result.keep.tolist()
    [True, False]
    >>> result.outcomes.column("reason").to_pylist()
    ['kept', 'exact']

Records are read with the rules ``neardup dedup`` reads files with, so the same records give the
same outcomes, pairs and summary as the command line: dicts and ``(id, text)`` pairs as JSONL
lines, Arrow data (pyarrow, pandas, polars, Hugging Face ``datasets``) as Parquet rows.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .config import DedupConfig
from .errors import ConfigError, require

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = ["dedup", "DedupResult", "OUTCOME_COLUMNS"]

#: The columns of :attr:`DedupResult.outcomes`, as the keys of a ``clusters.jsonl`` line.
OUTCOME_COLUMNS = ("id", "cluster", "kept", "duplicate_of", "similarity", "reason")
#: Label of the records' sources: the id of a record without one is ``input:<n>`` (0-based).
SOURCE = "input"


@dataclass(frozen=True)
class DedupResult:
    """What :func:`dedup` found, aligned with the input (row n is the n-th record).

    - ``outcomes``: Arrow table ``id, cluster, kept, duplicate_of, similarity, reason``, as the
      lines of ``clusters.jsonl``; with ``source_field``, also ``source`` and
      ``duplicate_of_source`` (the source of the survivor), as ``clusters.jsonl`` with sources;
    - ``keep``: boolean numpy mask of the kept records (``df[result.keep]``,
      ``ds.select(np.flatnonzero(result.keep))``);
    - ``pairs``: Arrow table ``a, b, jaccard, estimate`` of the verified pairs, as ``pairs.jsonl``;
    - ``summary``: the counts of ``summary.json``.
    """

    outcomes: "pa.Table"
    keep: np.ndarray
    pairs: "pa.Table"
    summary: dict

    def __len__(self) -> int:
        return int(self.keep.size)


def dedup(data, config: DedupConfig | None = None, *, jobs: int | None = None, in_memory_mb: float | None = None,
          **options: Any) -> DedupResult:
    """Deduplicate records in memory with the local engine.

    Args:
        data: an iterable of dicts (read as JSONL objects: ``config.id_field``,
            ``config.text_field`` and ``config.keep_field``) or of ``(id, text)`` pairs; a pyarrow
            Table, RecordBatch or RecordBatchReader, a pandas or polars DataFrame, or a
            ``datasets.Dataset`` (read as Parquet rows: the same columns).
        config: the configuration (:class:`neardup.DedupConfig`; the default one when None).
        jobs: threads (default: all cores); the result does not depend on it.
        in_memory_mb: shingle ids and signatures held in memory before they spill to a
            temporary folder (default :data:`neardup.params.IN_MEMORY_MB`).
        **options: fields of :class:`DedupConfig` that replace the config's
            (``threshold=0.9``, ``text_field="body"``, ...).

    Returns:
        A :class:`DedupResult`. Needs pyarrow (``pip install 'neardup[io]'``).
    """
    pa = require("pyarrow", "io")
    from .io.read import record_reader
    from .params import IN_MEMORY_MB
    from .engines.local.run import Deduplicator

    config = _configured(config, options)
    reader = record_reader(config)
    engine = Deduplicator(config, jobs=jobs, in_memory_mb=IN_MEMORY_MB if in_memory_mb is None else in_memory_mb)
    outcome, pairs, summary = engine.dedup_records(_records(data, reader, config))
    columns = {
        "id": pa.array(outcome.ids, type=pa.string()),
        "cluster": pa.array(outcome.cluster, type=pa.string()),
        "kept": pa.array(outcome.kept, type=pa.bool_()),
        "duplicate_of": pa.array(outcome.duplicate_of, type=pa.string()),
        "similarity": pa.array(outcome.similarity, type=pa.float64()),
        "reason": pa.array(outcome.reason, type=pa.string()),
    }
    if outcome.source is not None:  # source_field: the columns of clusters.jsonl with sources
        columns = {"id": columns.pop("id"), "source": pa.array(outcome.source, type=pa.string()),
                   **{k: columns.pop(k) for k in ("cluster", "kept", "duplicate_of")},
                   "duplicate_of_source": pa.array(outcome.duplicate_of_source, type=pa.string()), **columns}
    outcomes = pa.table(columns)
    a, b, jac, est = zip(*pairs) if pairs else ((), (), (), ())
    pair_table = pa.table({"a": pa.array(a, type=pa.string()), "b": pa.array(b, type=pa.string()),
                           "jaccard": pa.array(jac, type=pa.float64()), "estimate": pa.array(est, type=pa.float64())})
    return DedupResult(outcomes=outcomes, keep=np.asarray(outcome.kept, dtype=bool), pairs=pair_table,
                       summary=summary)


def _configured(config: DedupConfig | None, options: dict) -> DedupConfig:
    config = DedupConfig() if config is None else config
    if not isinstance(config, DedupConfig):
        raise ConfigError(f"config must be a neardup.DedupConfig, got {type(config).__name__}")
    fields = {f.name for f in dataclasses.fields(DedupConfig)}
    unknown = sorted(set(options) - fields)
    if unknown:
        raise ConfigError(f"neardup.dedup() has no option {unknown[0]!r}; the options are the fields of DedupConfig: "
                          f"{', '.join(sorted(fields))}")
    config = dataclasses.replace(config, **options) if options else config
    if config.content == "html" and config.extraction is None:
        # records of HTML are extracted, and the extractor is part of the result (as in the CLI)
        from .text.html import extractor_id

        config = dataclasses.replace(config, extraction=extractor_id(config.html))
    return config


def _kind(data) -> str:
    """Which reading rules ``data`` gets: ``arrow`` (columns) or ``rows`` (dicts or pairs)."""
    module = type(data).__module__.split(".")[0]
    if module in ("pyarrow", "pandas", "polars", "datasets"):
        return module
    if isinstance(data, (str, bytes)):
        raise ConfigError("neardup.dedup() takes records (an iterable of dicts or (id, text) pairs, or a table), "
                          "not one text: wrap it in a list")
    return "rows"


def _arrow_batches(data, kind: str):
    """The record batches of tabular ``data``, in row order."""
    import pyarrow as pa

    if kind == "pandas":
        data = pa.Table.from_pandas(data, preserve_index=False)
    elif kind == "polars":
        data = data.to_arrow()
    elif kind == "datasets":
        data = data.with_format("arrow")[:]  # respects a selection or filter of the dataset
    if isinstance(data, pa.RecordBatch):
        return [data]
    if isinstance(data, pa.Table):
        return data.to_batches()
    if isinstance(data, pa.RecordBatchReader):
        return data
    raise ConfigError(f"neardup.dedup() cannot read a {type(data).__module__}.{type(data).__name__}")


def _records(data, reader, config: DedupConfig):
    """Documents and Skipped records of ``data``, ordinals from 0, as the CLI's readers make them."""
    kind = _kind(data)
    n = 0
    if kind != "rows":
        for batch in _arrow_batches(data, kind):
            yield from reader.records_of_batch(batch, SOURCE, n)
            n += batch.num_rows
        return
    import orjson

    for rec in data:
        if isinstance(rec, tuple):
            if len(rec) != 2:
                raise ConfigError(f"record {n}: a tuple record is (id, text), got {len(rec)} values")
            rec = {config.id_field: rec[0], config.text_field: rec[1]}
        elif not isinstance(rec, dict):
            raise ConfigError(f"record {n}: expected a dict or an (id, text) pair, got {type(rec).__name__}")
        # the JSONL line the command line would read: the same size limit and field rules
        try:
            line = orjson.dumps(rec)
        except TypeError as exc:
            raise ConfigError(f"record {n} is not JSON-serializable: {exc}") from None
        yield reader.json_line_record(line, n, f"{SOURCE}:{n}")
        n += 1
