"""Input and output for ``neardup dedup``: streaming readers and the writers of its outputs.

    from neardup.io import read_documents, write_kept, Document, Skipped

    for rec in read_documents(["crawl.warc.gz", "docs/"]):
        if isinstance(rec, Skipped):
            ...  # rec.reason is a key of SKIP_REASONS; rec.source is "<file>:<n>"
        else:
            ...  # rec.id, rec.text, rec.ordinal, rec.source, rec.meta

Nothing is ever dropped: each record is yielded once, as a Document or a Skipped, with ordinals
0, 1, 2, ... across all inputs. Reading is :mod:`neardup.io.read`, writing :mod:`neardup.io.write`. The optional format libraries (pyarrow, warcio, zstandard,
trafilatura, lxml) come with ``pip install 'neardup[io]'`` and are imported only when needed.
"""

from .documents import SKIP_REASONS, Document, Skipped
from .read import FORMATS, detect_format, iter_raw_records, read_documents
from .write import JsonlWriter, write_kept

__all__ = [
    "Document",
    "Skipped",
    "SKIP_REASONS",
    "FORMATS",
    "detect_format",
    "read_documents",
    "iter_raw_records",
    "write_kept",
    "JsonlWriter",
]
