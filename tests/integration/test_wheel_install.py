"""The proof that the package builds and works on a fresh machine: an sdist built from this checkout carries
what a source build needs (and not the generated .cpp), a wheel built from that sdist installs with no index
into a new virtualenv, and there — with no BYTEBPE_DATA_DIR, an empty HOME and sockets refused — all seven
encodings give tiktoken's ids and `bytebpe bench` runs on the sample corpus inside the wheel.

Slow (~2-3 minutes): the wheel build compiles the extensions.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from ..conftest import ALL_ENCODINGS

# One worker builds the sdist once for both tests, first thing (tests/conftest.py, the long groups).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]

ROOT = Path(__file__).resolve().parents[2]
TEXT = "Hello world! It's 2024 — naïve café, 数字 12345.\n\n  indented\t<|endoftext|> done "

# Run inside the fresh virtualenv, from an empty folder: any attempt to connect fails.
PROBE = """
import json, socket, sys
def refuse(*args, **kwargs):
    raise OSError("no network on this machine")
socket.socket.connect = refuse
import bytebpe
ids = {name: bytebpe.get_encoding(name).encode(sys.argv[1], allowed_special="all") for name in sys.argv[2:]}
print(json.dumps({"file": bytebpe.__file__, "ids": ids}))
"""


SOURCE_BUILD_NEEDS = ["setup.py", "pyproject.toml", "LICENSE", "README.md", "src/bytebpe/_core.pyx",
                      "src/bytebpe/_core.pxd", "src/bytebpe/_shared.pxd", "src/bytebpe/_pretokenize.pyx",
                      "src/bytebpe/_train.pyx", "src/bytebpe/_textio.pyx", "src/bytebpe/_unicode_tables.h",
                      "src/bytebpe/_ascii_runs.h",
                      "src/bytebpe/vocab/cl100k_base.bin", "src/bytebpe/sample/english.txt",
                      "src/bytebpe/sample/PROVENANCE.md"]


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    """`python -m build --sdist` on a copy of this checkout (the build leaves files in the source tree)."""
    source = tmp_path_factory.mktemp("checkout") / "bytebpe"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "build", "dist", "*.egg-info", "*.so", "*.cpp", "__pycache__", ".hypothesis"))
    out = tmp_path_factory.mktemp("sdist")
    result = subprocess.run([sys.executable, "-m", "build", "--sdist", "--outdir", str(out), str(source)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    (archive,) = out.glob("bytebpe-*.tar.gz")
    return archive


def test_the_sdist_carries_the_sources_a_build_needs_and_no_generated_cpp(sdist):
    with tarfile.open(sdist) as archive:
        names = [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]
    assert set(SOURCE_BUILD_NEEDS) <= set(names), set(SOURCE_BUILD_NEEDS) - set(names)
    # Every source the compiler reads: the modules, their declarations, included .pxi files and C headers.
    compiled_sources = {str(path.relative_to(ROOT)) for suffix in ("pyx", "pxd", "pxi", "h")
                        for path in (ROOT / "src" / "bytebpe").glob(f"*.{suffix}")}
    assert compiled_sources <= set(names), compiled_sources - set(names)
    assert not [name for name in names if name.endswith((".cpp", ".so"))]


def test_a_wheel_built_from_the_sdist_installed_offline_into_a_fresh_venv_encodes_with_all_seven(
        sdist, tmp_path, tiktoken_encoding, tiktoken_cache, monkeypatch):
    wheelhouse = tmp_path / "wheelhouse"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(sdist), "--no-deps", "-q", "-w",
                            str(wheelhouse)], capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr
    (wheel,) = wheelhouse.glob("bytebpe-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {f"bytebpe/vocab/{name}.bin" for name in ("r50k_base", "p50k_base", "cl100k_base", "o200k_base")} \
        <= set(names)
    assert {f"bytebpe/sample/{name}" for name in ("english.txt", "code.txt", "multilingual.txt")} <= set(names)
    assert any(name.endswith("/LICENSE") for name in names)
    assert not any(name.endswith(".cpp") for name in names)
    assert "bytebpe-tiktoken.pth" in names      # (BYTEBPE_PATCH_TIKTOKEN=1, below)

    fresh = tmp_path / "fresh-venv"
    venv.create(fresh, with_pip=True)
    python = fresh / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheel)],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    # The runtime dependencies (regex, numpy, tqdm) from this interpreter's site-packages, as a plain path
    # after the fresh one's: with no index they could not be installed, and bytebpe itself (installed here
    # in editable mode through a .pth that this does not run) still comes from the wheel.
    fresh_site = Path(subprocess.check_output(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip())
    # (Named to be read before bytebpe-tiktoken.pth: site reads .pth files in name order, and that one imports
    # bytebpe, which needs them.)
    (fresh_site / "_runtime_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    home, workdir = tmp_path / "home", tmp_path / "workdir"
    home.mkdir()
    workdir.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("BYTEBPE_", "TIKTOKEN_", "DATA_GYM_", "XDG_", "PYTHON"))}
    env["HOME"] = str(home)
    probe = subprocess.run([str(python), "-c", PROBE, TEXT, *ALL_ENCODINGS], capture_output=True, text=True,
                           env=env, cwd=workdir, timeout=300)
    assert probe.returncode == 0, probe.stderr
    result = json.loads(probe.stdout)
    assert Path(result["file"]).is_relative_to(fresh)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tiktoken_cache))
    for name in ALL_ENCODINGS:
        assert result["ids"][name] == tiktoken_encoding(name).encode(TEXT, allowed_special="all"), name
    assert list(home.iterdir()) == [] and list(workdir.iterdir()) == []    # no cache written, no download

    # BYTEBPE_PATCH_TIKTOKEN=1 makes `import tiktoken` give bytebpe in a program that never names bytebpe
    # (stock tiktoken is on this path too, through runtime_dependencies.pth: without the variable it wins).
    which = "import tiktoken; print(getattr(tiktoken, '__bytebpe__', False), tiktoken.get_encoding('gpt2').encode('hi'))"
    for value, expected in (("1", "True [5303]"), ("", "False [5303]")):
        found = subprocess.run([str(python), "-c", which], capture_output=True, text=True, cwd=workdir, timeout=300,
                               env={**env, "BYTEBPE_PATCH_TIKTOKEN": value, "TIKTOKEN_CACHE_DIR": str(tiktoken_cache)})
        assert found.returncode == 0 and found.stdout.strip() == expected, (value, found.stdout, found.stderr)

    # The main job of the README, from the installed wheel: the sample corpus is inside it.
    bench = subprocess.run([str(fresh / "bin" / "bytebpe"), "bench", "--repeat", "1"], capture_output=True,
                           text=True, env=env, cwd=workdir, timeout=300)
    assert bench.returncode == 0, bench.stderr
    assert "the sample corpus shipped with bytebpe" in bench.stdout
    assert str(fresh) in bench.stdout and bench.stdout.count("multilingual.txt") == 2
