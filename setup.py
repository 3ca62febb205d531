"""Build the Cython extensions in src/litbridge/_core/ (all other metadata lives in pyproject.toml).

Set LITBRIDGE_REQUIRE_EXTENSIONS=1 (CI, cibuildwheel) to make a compile failure fatal. Without it, a
machine with no compiler still gets a working package that falls back to pure pyte (with a warning).
"""

import glob
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

REQUIRE = os.environ.get("LITBRIDGE_REQUIRE_EXTENSIONS") == "1"


def extensions():
    sources = sorted(glob.glob("src/litbridge/_core/*.pyx"))
    if not sources:
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        if REQUIRE:
            raise
        print("litbridge: Cython not available, building without extensions", file=sys.stderr)
        return []
    from setuptools import Extension

    exts = []
    for src in sources:
        mod = src[len("src/") : -len(".pyx")].replace("/", ".").replace("\\", ".")
        args = ["/O2"] if sys.platform == "win32" else ["-O3"]
        exts.append(Extension(mod, [src], extra_compile_args=args))
    return cythonize(
        exts,
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
            "embedsignature": True,
        },
        annotate=os.environ.get("LITBRIDGE_ANNOTATE") == "1",
    )


class OptionalBuildExt(build_ext):
    """Fails hard under LITBRIDGE_REQUIRE_EXTENSIONS=1; otherwise warns and ships the pyte fallback."""

    def run(self):
        try:
            super().run()
        except Exception as exc:
            if REQUIRE:
                raise
            print(f"litbridge: WARNING: could not build the Cython core ({exc}); using pyte", file=sys.stderr)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            if REQUIRE:
                raise
            print(f"litbridge: WARNING: could not build {ext.name} ({exc}); using pyte", file=sys.stderr)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
