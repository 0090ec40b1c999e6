"""``neardup.ray.dedup(dataset, output)``: a ``ray.data.Dataset`` of records deduplicated into
an output folder, with the files ``neardup dedup`` writes.

The dataset's rows are taken in the dataset's order (Ray Data's ``preserve_order``) and written,
block by block, as numbered Parquet files into a folder beside the outputs; that folder is the
input of :func:`~neardup.engines.ray.engine.dedup_paths`, so the records are what the local
reader makes of those rows (the id and text columns named by the configuration; a row without
an id is named ``<file>:<row>``), and the kept corpus is ``kept.parquet``: the kept rows with the
dataset's columns. The folder is removed at the end.
"""

from __future__ import annotations

import os
import shutil

from ...config import DedupConfig
from .engine import dedup_paths

__all__ = ["dedup"]

STAGING_NAME = ".neardup-ray-dataset"


def dedup(dataset, output: str, config: DedupConfig = DedupConfig(), **kwargs) -> dict:
    """Deduplicate the rows of ``dataset`` (columns ``config.id_field`` and ``config.text_field``)
    into ``output``; returns the summary. ``kwargs``: as :func:`dedup_paths` (``address``,
    ``jobs``, ``write_kept``, ``output_format``, ``work_dir``)."""
    import dataclasses

    import pyarrow.parquet as pq
    import ray

    output = os.fspath(output)
    staging = os.path.join(output, STAGING_NAME)
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    ctx = ray.data.DataContext.get_current()
    before = ctx.execution_options.preserve_order
    ctx.execution_options.preserve_order = True
    try:
        k = 0
        for batch in dataset.iter_batches(batch_format="pyarrow", batch_size=None):
            if batch.num_rows:
                pq.write_table(batch, os.path.join(staging, f"part-{k:05d}.parquet"))
                k += 1
    finally:
        ctx.execution_options.preserve_order = before
    try:
        if k == 0:
            raise ValueError("the dataset has no rows")
        return dedup_paths([staging], output, dataclasses.replace(config, format="parquet"), **kwargs)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
