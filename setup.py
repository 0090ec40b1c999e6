"""Build of the compiled extensions (``neardup._kernel``, ``_hamming``, ``_jsonl``, ``_htmlscan``); everything else is in
pyproject.toml.

The C sources live in ``src/neardup/native/``: the kernel (``native/kernel/*.c``) includes xxHash's single
header from the tree (``native/_vendor/xxhash``), so a C compiler and the Python headers are all a build needs. Without a working compiler the package
still installs: each extension that does not build is left out with a warning, and neardup runs
its pure-Python paths instead (correct, much slower; ``neardup._native.available()`` says which).
``NEARDUP_REQUIRE_EXTENSIONS=1`` turns a failed build into an error instead.
"""

import os
import shutil
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: What each extension speeds up, for the warning when it does not build.
_SLOWER_WITHOUT = {
    "neardup._kernel": "tokenizing, shingling and MinHash run in pure Python (tens of times slower)",
    "neardup._hamming": "simhash index queries run in numpy",
    "neardup._jsonl": "JSONL input is parsed by orjson line by line",
    "neardup._htmlscan": "HTML main-content extraction scans the markup with regular expressions (about 3 times slower)",
}


class BuildExt(build_ext):
    def build_extensions(self):
        if self.compiler.compiler_type in ("unix", "mingw32", "cygwin"):
            for ext in self.extensions:
                # -O3 for the hot loops; no -march: the AVX2 code is selected at run time.
                ext.extra_compile_args += ["-O3", "-std=gnu11", "-fno-strict-aliasing"]
        super().build_extensions()

    def run(self):
        try:
            super().run()
        except Exception as exc:  # no compiler at all: the compiler object cannot even be made
            self._left_out(self.extensions, exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # CompileError, LinkError, a missing Python.h ...
            self._left_out([ext], exc)

    def _left_out(self, extensions, exc):
        if os.environ.get("NEARDUP_REQUIRE_EXTENSIONS") == "1":
            raise exc
        for ext in extensions:
            print(f"WARNING: {ext.name} was not built ({type(exc).__name__}: {exc}); "
                  f"without it {_SLOWER_WITHOUT.get(ext.name, 'a pure-Python path is used')}. "
                  "Install a C compiler and the Python headers (Debian: gcc python3-dev) and "
                  "reinstall for the compiled speed.", file=sys.stderr)

    def copy_file(self, infile, outfile, *args, **kwargs):
        # Into a new file renamed over the old one: a process that has the old extension loaded
        # (a running `neardup serve`) keeps its copy instead of seeing its code change under it.
        if kwargs.get("dry_run") or self.dry_run:
            return outfile, 1
        tmp = f"{outfile}.tmp-{os.getpid()}"
        shutil.copyfile(infile, tmp)
        shutil.copymode(infile, tmp)
        os.replace(tmp, outfile)
        return outfile, 1


setup(
    ext_modules=[
        # one extension from the files of src/neardup/native/kernel (one concern each; kernel.h has the overview)
        Extension("neardup._kernel",
                  sources=[f"src/neardup/native/kernel/{name}.c"
                           for name in ("module", "documents", "buffers", "tokenize", "hash", "rabin", "distinct",
                                        "minhash", "pairs", "postings")],
                  depends=["src/neardup/native/kernel/kernel.h", "src/neardup/native/new_bytearray.h",
                           "src/neardup/native/_vendor/xxhash/xxhash.h"]),
        # the SimhashIndex query probe (neardup.index.simhash); no external header
        Extension("neardup._hamming", sources=["src/neardup/native/_hamming.c"],
                  depends=["src/neardup/native/new_bytearray.h"]),
        # the JSONL reader's fast path (neardup.io.read.jsonl); no external header
        Extension("neardup._jsonl", sources=["src/neardup/native/_jsonl.c"],
                  depends=["src/neardup/native/new_bytearray.h"]),
        # the HTML extraction's scan of the markup (neardup.text.html); no external header
        Extension("neardup._htmlscan", sources=["src/neardup/native/_htmlscan.c", "src/neardup/native/_htmltext.c"],
                  depends=["src/neardup/native/_htmltext.h"]),
    ],
    cmdclass={"build_ext": BuildExt},
)
