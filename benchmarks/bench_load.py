"""Cold load of an encoding in a fresh interpreter: time and resident memory of `get_encoding(name)` plus
the first encode, for bytebpe from its bundled vocabularies, bytebpe from the `.tiktoken` / GPT-2 files
(BYTEBPE_DATA_DIR, how every load worked before the vocabularies were bundled), and tiktoken from its cache.

    python benchmarks/bench_load.py [--vocab-dir ../shared/vocab] [--runs 7] [--encodings cl100k_base ...]

Each run is a new process (the import is not timed; the files are in the OS page cache after the first
run); the three ways take turns, run after run, so load from other processes hits them alike. Printed: the
best and the median of the runs, and the resident memory the load added (VmRSS after minus before).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PROBE = """
import json, sys, time
def rss_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
import {module}
before = rss_kib()
start = time.perf_counter()
enc = {module}.get_encoding({name!r})
enc.encode("hello world")
seconds = time.perf_counter() - start
print(json.dumps({{"ms": seconds * 1000, "mib": (rss_kib() - before) / 1024}}))
"""


def tiktoken_cache_from(vocab_dir: Path, folder: Path) -> None:
    """tiktoken's cache entries (named by the sha1 of each official address) linking to the real files."""
    from bytebpe.registry import ENCODING_SPECS

    for spec in ENCODING_SPECS.values():
        for file in spec.files:
            entry = folder / hashlib.sha1(file.url.encode()).hexdigest()
            if not entry.exists():
                entry.symlink_to((vocab_dir / file.filename).resolve())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab-dir", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "vocab")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--encodings", nargs="+", default=["cl100k_base", "o200k_base", "gpt2"])
    args = parser.parse_args()
    if not (args.vocab_dir / "cl100k_base.tiktoken").is_file():
        sys.exit(f"no vocabulary files in {args.vocab_dir} (give --vocab-dir)")
    base_env = {key: value for key, value in os.environ.items() if not key.startswith(("BYTEBPE_", "TIKTOKEN_"))}
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as bytebpe_cache:
        tiktoken_cache_from(args.vocab_dir, Path(cache))
        ways = {
            "bytebpe, bundled": ("bytebpe", {**base_env, "BYTEBPE_CACHE_DIR": bytebpe_cache}),
            "bytebpe, from the files": ("bytebpe", {**base_env, "BYTEBPE_CACHE_DIR": bytebpe_cache,
                                                    "BYTEBPE_DATA_DIR": str(args.vocab_dir.resolve())}),
            "tiktoken": ("tiktoken", {**base_env, "TIKTOKEN_CACHE_DIR": cache}),
        }
        print(f"cold get_encoding + first encode in a fresh interpreter; {args.runs} runs each, taking turns; "
              f"load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print("| encoding | way | best ms | median ms | resident MiB (median) |\n|---|---|---:|---:|---:|")
        for name in args.encodings:
            results: dict[str, list[dict[str, float]]] = {way: [] for way in ways}
            for _ in range(args.runs + 1):      # the first round only warms the page cache
                for way, (module, env) in ways.items():
                    probe = subprocess.run([sys.executable, "-c", PROBE.format(module=module, name=name)],
                                           capture_output=True, text=True, env=env, check=True)
                    results[way].append(json.loads(probe.stdout))
            for way, runs in results.items():
                runs = runs[1:]
                times = [run["ms"] for run in runs]
                print(f"| {name} | {way} | {min(times):.1f} | {statistics.median(times):.1f} | "
                      f"{statistics.median(run['mib'] for run in runs):.1f} |")


if __name__ == "__main__":
    main()
