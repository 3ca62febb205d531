"""Build the Cython extensions in src/litbridge/_core/ and src/litbridge/pty/ (all other metadata lives in
pyproject.toml).

The compiled core is required: a build that cannot compile it fails, naming the cause, instead of shipping a
platform-tagged wheel without its `.so`. `LITBRIDGE_NO_EXTENSIONS=1` asks for the pure-Python package on
purpose (no compile at all; the terminal falls back to pyte, several times slower). The extension is built
without debug info and, on Linux, with its static symbol table stripped (`LITBRIDGE_DEBUG_BUILD=1` keeps
both, for profiling or gdb).
"""

import glob
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NO_EXTENSIONS = os.environ.get("LITBRIDGE_NO_EXTENSIONS") == "1"
DEBUG = os.environ.get("LITBRIDGE_DEBUG_BUILD") == "1"
HOW_TO_SKIP = (
    "Install a C compiler (and the Python headers), or set LITBRIDGE_NO_EXTENSIONS=1 to install the "
    "pure-Python package (pyte fallback, several times slower)."
)


def compile_args() -> tuple[list[str], list[str]]:
    """(compile, link) flags: optimised; no debug info and a stripped symbol table unless DEBUG."""
    if sys.platform == "win32":
        return ["/O2"], []
    compile_ = ["-O3"] + ([] if DEBUG else ["-g0"])  # -g0 comes after the interpreter's own -g, so it wins
    link = [] if DEBUG or sys.platform != "linux" else ["-Wl,--strip-all"]  # PyInit_* stays in .dynsym
    return compile_, link


def extensions() -> list[Extension]:
    if NO_EXTENSIONS:
        print("litbridge: LITBRIDGE_NO_EXTENSIONS=1: building the pure-Python package", file=sys.stderr)
        return []
    # the terminal core first: a build that cannot compile names it (the other modules are its helpers)
    sources = sorted(glob.glob("src/litbridge/_core/*.pyx"), key=lambda p: (not p.endswith("screen.pyx"), p))
    sources += sorted(glob.glob("src/litbridge/pty/*.pyx"))
    if not sources:
        raise SystemExit("litbridge: no src/litbridge/_core/*.pyx to build (incomplete source tree?)")
    from Cython.Build import cythonize  # a build requirement (pyproject.toml); missing means a broken env

    compile_, link = compile_args()
    exts = []
    for src in sources:
        mod = src[len("src/") : -len(".pyx")].replace("/", ".").replace("\\", ".")
        exts.append(Extension(mod, [src], extra_compile_args=compile_, extra_link_args=link))
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


class RequiredBuildExt(build_ext):
    """Turns a compile failure into one clear error saying how to get the pure-Python package instead."""

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            raise SystemExit(
                f"litbridge: could not build the compiled core {ext.name}: {exc}\n{HOW_TO_SKIP}"
            ) from exc


setup(ext_modules=extensions(), cmdclass={"build_ext": RequiredBuildExt})
