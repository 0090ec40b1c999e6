"""Build of the compiled extensions (``neardup._kernel``, ``_hamming``, ``_jsonl``); everything else is in
pyproject.toml.

The kernel includes xxHash's single header (XXH3, inlined: nothing is linked). Debian/Ubuntu:
``apt-get install libxxhash-dev``. Another location can be given with ``XXHASH_INCLUDE=/dir``.
"""

import os
import shutil
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def _xxhash_dirs():
    env = os.environ.get("XXHASH_INCLUDE")
    dirs = [env] if env else []
    dirs += [sysconfig.get_paths().get("include", ""), os.path.join(sys.prefix, "include"),
             "/usr/local/include", "/usr/include", "/opt/homebrew/include"]
    return [d for d in dirs if d and os.path.isfile(os.path.join(d, "xxhash.h"))]


class BuildExt(build_ext):
    def build_extensions(self):
        found = _xxhash_dirs()
        if not found:
            sys.exit(
                "error: xxhash.h not found. neardup's compiled kernel needs the xxHash header: "
                "install it with `apt-get install libxxhash-dev` (Debian/Ubuntu; "
                "`brew install xxhash` on macOS), or point XXHASH_INCLUDE at the folder holding it."
            )
        gcc_like = self.compiler.compiler_type in ("unix", "mingw32", "cygwin")
        for ext in self.extensions:
            if found[0] not in ("/usr/include", "/usr/local/include"):  # searched by default
                ext.include_dirs.append(found[0])
            if gcc_like:
                # -O3 for the hot loops; no -march: the AVX2 code is selected at run time.
                ext.extra_compile_args += ["-O3", "-std=gnu11", "-fno-strict-aliasing"]
        super().build_extensions()

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
        Extension("neardup._kernel", sources=["src/neardup/_kernel.c"]),
        # the SimhashIndex query probe (neardup.lsh.hamming); no external header
        Extension("neardup._hamming", sources=["src/neardup/_hamming.c"]),
        # the JSONL reader's fast path (neardup.io.readers); no external header
        Extension("neardup._jsonl", sources=["src/neardup/_jsonl.c"]),
    ],
    cmdclass={"build_ext": BuildExt},
)
