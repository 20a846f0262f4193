"""The typed stubs (`*.pyi`) agree with the compiled modules: `python -m mypy.stubtest` finds no difference
but the Cython-generated names listed, each with its reason, in tests/stubtest-allowlist.txt."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

COMPILED_MODULES = ["bytebpe._core", "bytebpe._pretokenize", "bytebpe._train", "bytebpe._textio", "bytebpe._load",
                    "bytebpe._decode_streams"]
ALLOWLIST = Path(__file__).resolve().parents[1] / "stubtest-allowlist.txt"


def test_stubs_match_the_compiled_modules(tmp_path: Path) -> None:
    # In a temporary folder: stubtest leaves its .mypy_cache in the working directory. About 6 s.
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "--allowlist", str(ALLOWLIST), *COMPILED_MODULES],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, f"stubtest found differences:\n{result.stdout}{result.stderr}"
