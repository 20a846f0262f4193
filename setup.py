"""Only the extension list and its compiler directives; metadata lives in pyproject.toml.

BYTEBPE_DEBUG=1 builds with C++ container assertions and bounds checks for hunting memory bugs.
"""
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("BYTEBPE_DEBUG") == "1"

compile_args = ["-O0", "-g", "-D_GLIBCXX_ASSERTIONS"] if DEBUG else ["-O3"]
compile_args.append("-std=c++17")

extensions = [
    Extension(
        f"bytebpe.{name}",
        [f"src/bytebpe/{name}.pyx"],
        include_dirs=["src/bytebpe"],   # _unicode_tables.h
        language="c++",
        extra_compile_args=compile_args,
    )
    for name in ("_pretokenize", "_core", "_train")
]

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={
            "boundscheck": DEBUG,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": DEBUG,
            "embedsignature": True,
        },
    ),
)
