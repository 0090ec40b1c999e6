"""The exit statuses of the ``neardup`` command, in one place so every sub-command and engine agrees.

    OK           0  done; every input record and file was read (or skips stayed within --max-skipped)
    SKIPPED      1  done, but more records or files were skipped than --max-skipped allows
                    (under --strict: any skip at all, and any file of a dataset folder that was
                    not read, e.g. a README.md; not _SUCCESS, .crc and the other names Spark hides)
    USAGE        2  a usage mistake: a bad option, a parameter out of range, a missing extra
                    (a path that does not exist is an input error, 3)
    INPUT_ERROR  3  an input file or URL could not be read (the message names it); nothing was written
                    as complete. ``--on-error skip`` turns this into a counted skip instead.
    OUTPUT_ERROR 4  the output could not be written (full disk, read-only folder, a URL refused):
                    the message names the path; no output looks complete
    INTERRUPTED 130 stopped by Ctrl-C (SIGINT), as shells report it

Documented in docs/cli.md ("Exit codes") and docs/formats.md.
"""

from __future__ import annotations

OK = 0
SKIPPED = 1
USAGE = 2
INPUT_ERROR = 3
OUTPUT_ERROR = 4
INTERRUPTED = 130
