"""The proof that a built wheel works on a fresh machine: installed with no index into a new virtualenv, with
no BYTEBPE_DATA_DIR, an empty HOME and sockets refused, all seven encodings give tiktoken's ids.

Slow (~1-2 minutes): the wheel is built from this checkout, compiling the extensions.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from .conftest import ALL_ENCODINGS

ROOT = Path(__file__).resolve().parent.parent
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


@pytest.mark.slow
def test_a_wheel_installed_offline_into_a_fresh_venv_encodes_with_all_seven(
        tmp_path, tiktoken_encoding, tiktoken_cache, monkeypatch):
    wheelhouse = tmp_path / "wheelhouse"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w",
                            str(wheelhouse)], capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr
    (wheel,) = wheelhouse.glob("bytebpe-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {f"bytebpe/vocab/{name}.bin" for name in ("r50k_base", "p50k_base", "cl100k_base", "o200k_base")} \
        <= set(names)
    assert any(name.endswith("/LICENSE") for name in names)
    assert not any(name.endswith(".cpp") for name in names)

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
    (fresh_site / "runtime_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

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
