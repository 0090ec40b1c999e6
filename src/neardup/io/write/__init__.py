"""The outputs of a run: the kept corpus (:mod:`~neardup.io.write.kept`, sharded and compressed by
:mod:`~neardup.io.write.shards`, web archives by :mod:`~neardup.io.write.warc`), the clusters and
pairs (:mod:`~neardup.io.write.results`, assembled in C by :mod:`~neardup.io.write.result_lines`),
the work folder a run resumes from (:mod:`~neardup.io.write.runfolder`), and the target the files
are published to, local or remote (:mod:`~neardup.io.write.outputs`)."""

from .kept import JsonlWriter, KeptLayout, write_kept
from .results import DEFAULT_RESULT_FORMAT, RESULT_FORMATS, write_clusters, write_pairs

__all__ = ["JsonlWriter", "KeptLayout", "write_kept", "RESULT_FORMATS", "DEFAULT_RESULT_FORMAT", "write_clusters",
           "write_pairs"]
