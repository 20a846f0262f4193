#!/usr/bin/env python
"""End-to-end dataset encoding: `bytebpe encode` (encode_files) next to the usual tiktoken + numpy loop and
next to in-memory batch encoding, same run; and peak memory of the command for 1x and 4x the input.

    BYTEBPE_DATA_DIR=../shared/vocab python benchmarks/bench_datasets.py           # ~2 min
    BYTEBPE_DATA_DIR=../shared/vocab python benchmarks/bench_datasets.py --quick   # smoke test

Every job writes (or returns) the same ids: they are checked equal to tiktoken's before anything is timed.
MB = 10**6 bytes of UTF-8 document text; best of N wall-clock runs, the jobs taking turns.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import bytebpe
from bytebpe import batching
from bytebpe.registry import ENCODING_SPECS

VOCAB_URLS = {file.filename: file.url for spec in ENCODING_SPECS.values() for file in spec.files}
MB = 1e6

# Runs a module in this interpreter and writes its own peak resident memory (VmHWM, KiB) to the file named by
# argv[1], however it exits. Not ru_maxrss: Linux carries that over from the parent through fork and exec, so
# a child of this (large) benchmark process would report at least the parent's size.
PEAK_WRAPPER = """
import runpy, sys
report, sys.argv = sys.argv[1], sys.argv[2:]
try:
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
finally:
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(report, "w") as file:
        file.write(peak)
"""

# The nanoGPT-style preparation loop (one process; what people write around tiktoken), as a module to run.
TIKTOKEN_LOOP = """
import json, sys
import numpy as np, tiktoken
source, prefix, name = sys.argv[1:4]
enc = tiktoken.get_encoding(name)
ids, offsets = [], [0]
with open(source, encoding="utf-8") as file:
    for line in file:
        ids.extend(enc.encode_ordinary(json.loads(line)["text"]))
        offsets.append(len(ids))
np.save(prefix + ".tokens.npy", np.array(ids, dtype=np.uint32))
np.save(prefix + ".offsets.npy", np.array(offsets, dtype=np.int64))
"""


def tiktoken_loop(source: Path, prefix: Path, name: str, tiktoken_module) -> None:
    """TIKTOKEN_LOOP, in this process (the timed version)."""
    enc = tiktoken_module.get_encoding(name)
    ids: list[int] = []
    offsets = [0]
    with open(source, encoding="utf-8") as file:
        for line in file:
            ids.extend(enc.encode_ordinary(json.loads(line)["text"]))
            offsets.append(len(ids))
    np.save(f"{prefix}.tokens.npy", np.array(ids, dtype=np.uint32))
    np.save(f"{prefix}.offsets.npy", np.array(offsets, dtype=np.int64))


def tiktoken_batch(source: Path, prefix: Path, name: str, tiktoken_module) -> None:
    """The same with tiktoken's own threaded batch call (all documents in memory)."""
    enc = tiktoken_module.get_encoding(name)
    with open(source, encoding="utf-8") as file:
        texts = [json.loads(line)["text"] for line in file]
    encoded = enc.encode_ordinary_batch(texts, num_threads=batching.pool_size())
    np.save(f"{prefix}.tokens.npy", np.fromiter((i for ids in encoded for i in ids), dtype=np.uint32))
    np.save(f"{prefix}.offsets.npy", np.cumsum([0, *map(len, encoded)], dtype=np.int64))


def best_of(repeat: int, jobs: dict[str, Callable[[], object]]) -> dict[str, float]:
    best = {name: float("inf") for name in jobs}
    for _ in range(repeat):
        for name, job in jobs.items():      # taking turns: load from other processes hits every job alike
            gc.collect()
            start = time.perf_counter()
            job()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def peak_kib(args: list[str], env: dict[str, str]) -> tuple[int, float]:
    """(peak RSS in KiB, wall seconds) of `python -m args...` in a fresh process."""
    with tempfile.NamedTemporaryFile("r", suffix=".peak") as report:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", PEAK_WRAPPER, report.name, *args], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - start
        return int(Path(report.name).read_text()), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", type=Path, default=None, help="default: $BYTEBPE_DATA_DIR/../corpus/docs_english.jsonl")
    parser.add_argument("--encoding", default="cl100k_base")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16],
                        help="input multiples for the peak-memory table (default: 1 4 16)")
    parser.add_argument("--quick", action="store_true", help="one run, memory at 1x only")
    args = parser.parse_args()
    vocab_dir = Path(os.environ.get("BYTEBPE_DATA_DIR", "").split(os.pathsep)[0] or ".")
    if not (vocab_dir / "cl100k_base.tiktoken").is_file():
        sys.exit("bench_datasets: set BYTEBPE_DATA_DIR to the folder of the real vocabularies")
    source = args.input or vocab_dir.parent / "corpus" / "docs_english.jsonl"
    repeat = 1 if args.quick else args.repeat
    import tiktoken

    with tempfile.TemporaryDirectory() as temp_name:
        temp = Path(temp_name)
        (temp / "tiktoken-cache").mkdir()
        for filename, url in VOCAB_URLS.items():
            if (vocab_dir / filename).is_file():
                (temp / "tiktoken-cache" / hashlib.sha1(url.encode()).hexdigest()).symlink_to(
                    (vocab_dir / filename).resolve())
        os.environ["TIKTOKEN_CACHE_DIR"] = str(temp / "tiktoken-cache")
        enc = bytebpe.get_encoding(args.encoding)
        tiktoken.get_encoding(args.encoding)      # loaded once outside the timings, as bytebpe's is
        with open(source, encoding="utf-8") as file:
            texts = [json.loads(line)["text"] for line in file]
        megabytes = sum(len(t.encode("utf-8")) for t in texts) / MB
        workers = batching.pool_size()

        # Identical output before any timing.
        bytebpe.encode_files(source, encoding=enc, output=temp / "ours")
        tiktoken_loop(source, temp / "theirs", args.encoding, tiktoken)
        for suffix in (".tokens.npy", ".offsets.npy"):
            ours, theirs = np.load(f"{temp / 'ours'}{suffix}"), np.load(f"{temp / 'theirs'}{suffix}")
            if not np.array_equal(ours, theirs):
                sys.exit(f"bench_datasets: {suffix} differs between bytebpe encode and the tiktoken loop")

        seconds = best_of(repeat, {
            "bytebpe encode (file → .npy)": lambda: bytebpe.encode_files(
                source, encoding=enc, output=temp / "ours", workers=workers),
            "bytebpe encode_ordinary_batch (in memory)": lambda: enc.encode_ordinary_batch(
                texts, num_threads=workers),
            "bytebpe encode_batch_to_numpy (in memory)": lambda: enc.encode_batch_to_numpy(
                texts, num_threads=workers, disallowed_special=()),
            "tiktoken loop + numpy (nanoGPT style)": lambda: tiktoken_loop(
                source, temp / "theirs", args.encoding, tiktoken),
            "tiktoken encode_ordinary_batch + numpy": lambda: tiktoken_batch(
                source, temp / "theirs", args.encoding, tiktoken),
        })
        end_to_end = megabytes / seconds["bytebpe encode (file → .npy)"]

        # Peak memory: bytebpe's command and the tiktoken loop, each in a fresh process, on 1x and 4x the input.
        (temp / "tiktoken_loop_job.py").write_text(TIKTOKEN_LOOP)
        (temp / "tiny.jsonl").write_text('{"text": "hello"}\n')
        env = {**os.environ, "PYTHONPATH": str(temp)}
        data = source.read_bytes()
        memory_rows = []
        for times in [1] if args.quick else args.sizes:
            scaled = temp / f"input_{times}x.jsonl"
            scaled.write_bytes(data * times)
            ours_kib, ours_s = peak_kib(["bytebpe", "encode", str(scaled), "--encoding", args.encoding,
                                         "-o", str(temp / f"mem{times}"), "--quiet"], env)
            theirs_kib, theirs_s = peak_kib(["tiktoken_loop_job", str(scaled), str(temp / f"loop{times}"),
                                             args.encoding], env)
            memory_rows.append((times, len(data) * times / MB, ours_kib, ours_s, theirs_kib, theirs_s))
            scaled.unlink()
        # What merely loading the encoding costs: the floor under every bytebpe figure above.
        baseline_kib, _ = peak_kib(["bytebpe", "count", str(temp / "tiny.jsonl"), "--encoding", args.encoding,
                                    "--quiet"], env)

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"### bytebpe dataset encoding benchmark — {now}\n")
    print(f"- machine: {platform.platform()}; {os.cpu_count()} cores (usable: {workers}); "
          f"load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"- Python {platform.python_version()}; bytebpe {bytebpe.__version__}, tiktoken {tiktoken.__version__}, "
          f"numpy {np.__version__}")
    print(f"- input: {source.name}, {len(texts):,} documents, {megabytes:.2f} MB of text; encoding "
          f"{args.encoding}; {workers} worker threads; best of {repeat}; outputs checked identical first\n")
    print("| job | seconds | MB/s | bytebpe encode is |")
    print("|---|---:|---:|---:|")
    for name, value in seconds.items():
        ratio = "—" if name.startswith("bytebpe encode (") else f"{end_to_end / (megabytes / value):.2f}×"
        print(f"| {name} | {value:.3f} | {megabytes / value:.1f} | {ratio} |")
    print("\nPeak resident memory of a whole run in a fresh process (VmHWM), the command with `--quiet`; "
          f"for scale, loading {args.encoding} and counting one tiny file peaks at {baseline_kib / 1024:.0f} MiB.\n")
    print("| input | MB | bytebpe encode peak MiB | wall s | tiktoken loop peak MiB | wall s |")
    print("|---|---:|---:|---:|---:|---:|")
    for times, size, ours_kib, ours_s, theirs_kib, theirs_s in memory_rows:
        print(f"| {times}× | {size:.1f} | {ours_kib / 1024:.0f} | {ours_s:.2f} | {theirs_kib / 1024:.0f} | "
              f"{theirs_s:.2f} |")


if __name__ == "__main__":
    main()
