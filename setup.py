"""Only the extension list and its compiler directives; metadata lives in pyproject.toml.

Build flavours, chosen by environment variables (docs/development.md, "Hunting memory bugs"):
  BYTEBPE_DEBUG=1      -O0 with C++ container assertions and Cython bounds checks.
  BYTEBPE_SANITIZE=1   AddressSanitizer + UndefinedBehaviorSanitizer (and the same assertions and checks), for
                       an uninstrumented Python that preloads the sanitizer runtime: tools/sanitize.sh.
  BYTEBPE_SANITIZE=fuzzer   the same plus clang's -fsanitize=fuzzer-no-link, so that atheris sees coverage
                       of the compiled code (needs CC=clang CXX=clang++): fuzz/run.sh.
A flavour build must start from a clean tree (no build/, no generated .cpp): setuptools and cythonize reuse
up-to-date outputs whatever the flags. tools/sanitize.sh builds from a fresh copy for that reason.
"""
import os

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_py import build_py

DEBUG = os.environ.get("BYTEBPE_DEBUG") == "1"
SANITIZE = os.environ.get("BYTEBPE_SANITIZE", "")
if SANITIZE not in ("", "0", "1", "fuzzer"):
    raise SystemExit(f"BYTEBPE_SANITIZE must be 1 or fuzzer, got {SANITIZE!r}")
SANITIZE = "" if SANITIZE == "0" else SANITIZE
CHECKED = DEBUG or bool(SANITIZE)

link_args = []
if SANITIZE:
    sanitizers = "address,undefined"
    if SANITIZE == "fuzzer" and "clang" in os.environ.get("CC", ""):
        sanitizers += ",fuzzer-no-link"     # libFuzzer's coverage counters in the compiled code
    # -O1 keeps ASan's reports readable and the tests fast; frame pointers give whole stack traces.
    compile_args = [f"-fsanitize={sanitizers}", "-fno-omit-frame-pointer", "-O1", "-g", "-D_GLIBCXX_ASSERTIONS"]
    # "1" links the compiler's sanitizer runtime (gcc's libasan is then preloaded). "fuzzer" links none: the
    # process preloads atheris' ASan runtime, which carries libFuzzer, and a second runtime would clash. That
    # runtime lacks UBSan's C++ vptr handlers (bytebpe has no virtual classes to check anyway) and the
    # handler of clang 14's function-type check.
    if SANITIZE == "1":
        link_args = [f"-fsanitize={sanitizers}"]
    else:
        compile_args.append("-fno-sanitize=vptr")
        if "clang" in os.environ.get("CC", ""):
            compile_args.append("-fno-sanitize=function")
elif DEBUG:
    compile_args = ["-O0", "-g", "-D_GLIBCXX_ASSERTIONS"]
else:
    # -g0 after Python's own CFLAGS (which carry -g): no debug info in release builds. The four extensions of
    # then measured 7.9 MB with it (_core 3.3 MB), 1.2 MB without (_core 0.47 MB); the wheel 5.06 -> 2.45 MB.
    compile_args = ["-O3", "-g0"]
compile_args.append("-std=c++17")

extensions = [
    Extension(
        f"bytebpe.{name}",
        [f"src/bytebpe/{name}.pyx"],
        include_dirs=["src/bytebpe"],   # _unicode_tables.h
        language="c++",
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )
    for name in ("_pretokenize", "_core", "_decode_streams", "_train", "_textio", "_load")
]

# The extensions are translated by Cython and compiled side by side, one per usable core up to four (a
# build's own `-j N` overrides the compile's): pip installs, the wheel test and CI wait for the largest one,
# not for all of them in turn.
BUILD_JOBS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))



class BuildPyWithPth(build_py):
    """build_py, and src/bytebpe-tiktoken.pth at the top of the build: installed into site-packages, it makes
    `import tiktoken` give bytebpe in a process started with BYTEBPE_PATCH_TIKTOKEN=1 (tiktoken_patch.py)."""

    def run(self):
        super().run()
        self.copy_file(os.path.join("src", "bytebpe-tiktoken.pth"), os.path.join(self.build_lib, "bytebpe-tiktoken.pth"))


setup(
    cmdclass={"build_py": BuildPyWithPth},
    options={"build_ext": {"parallel": BUILD_JOBS}},
    ext_modules=cythonize(
        extensions,
        nthreads=BUILD_JOBS if BUILD_JOBS > 1 else 0,
        language_level=3,
        # #line directives: a sanitizer's or debugger's stack names .pyx lines instead of generated C++.
        emit_linenums=CHECKED,
        compiler_directives={
            "boundscheck": CHECKED,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": CHECKED,
            "embedsignature": True,
        },
    ),
)
