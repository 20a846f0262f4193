"""Allocation failure: MemoryError, never an abort.

A C++ allocation that fails throws std::bad_alloc; where the compiled code calls one without `except +`,
the exception cannot become a Python error and the process ends (std::terminate, SIGABRT). These tests make
allocations fail for real: a child process lowers its address-space limit (RLIMIT_AS) to a little above what
it holds, then does the work, at a sweep of limits from "almost nothing left" to "enough". At every limit the
child must finish by itself, printing "ok" or "MemoryError". The work runs on the calling thread (workers=1,
num_threads=1): a new thread's first use of thread-local storage is glibc's to allocate, and glibc aborts
when it cannot, whatever the package does.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bytebpe

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc and RLIMIT_AS (Linux)")

CHILD = """
import resource, sys
import numpy    # imported first: numpy's own import under the limit fails with ImportError, which is not ours
import bytebpe
from bytebpe import _train
work, extra_mb = sys.argv[1], int(sys.argv[2])
enc = bytebpe.get_encoding("cl100k_base")
text = "".join(chr(0x4E00 + (i * 7919) % 20000) + ("hello " if i % 3 else "x") for i in range(100_000))
texts = [text[i:i + 3000] for i in range(0, len(text), 3000)]
ranks = {bytes([b]): b for b in range(256)}
ranks.update((b"tok%06d" % k, 256 + k) for k in range(60_000))
with open("/proc/self/status") as status:
    size_kib = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (size_kib * 1024 + extra_mb * (1 << 20),) * 2)
try:
    if work == "piece tables":
        tables = [_train.PieceCounts() for _ in range(100_000)]
    elif work == "train":
        bytebpe.train(texts, 2000, workers=1)
    elif work == "count pieces":
        bytebpe.count_pieces(texts, workers=1)
    elif work == "encode":
        enc.encode_ordinary(text * 3)
    elif work == "encode to numpy":
        enc.encode_batch_to_numpy(texts * 5, num_threads=1)
    elif work == "merge table":
        bytebpe.Encoding("x", pat_str=r"\\S+|\\s+", mergeable_ranks=ranks, special_tokens={})
    elif work == "new pattern":
        bytebpe.Encoding("y", pat_str=r"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|\\s+|[\\s\\S]",
                         mergeable_ranks=dict(enc.mergeable_ranks), special_tokens={}).encode_ordinary(text)
    print("ok")
except MemoryError:
    print("MemoryError")
"""

WORK = ["piece tables", "train", "count pieces", "encode", "encode to numpy", "merge table", "new pattern"]
EXTRA_MB = [4, 12, 24, 48, 96, 400]


@pytest.mark.slow
@pytest.mark.parametrize("work", WORK)
def test_work_that_runs_out_of_memory_raises_memory_error(work, data_dir):
    outcomes = []
    for extra_mb in EXTRA_MB:
        done = subprocess.run([sys.executable, "-c", CHILD, work, str(extra_mb)], capture_output=True, text=True,
                              env={**os.environ, "BYTEBPE_DATA_DIR": str(data_dir)}, timeout=300)
        assert done.returncode == 0 and done.stdout.strip() in ("ok", "MemoryError"), (
            f"{work} with {extra_mb} MB to spare: exit {done.returncode}\n{done.stdout}\n{done.stderr[-2000:]}")
        outcomes.append(done.stdout.strip())
    # The sweep reaches both ends: allocations failed at the low limits, and the work fits at the highest
    # (except 100,000 piece tables of ~256 KB each, which never fit).
    assert outcomes[0] == "MemoryError"
    assert outcomes[-1] == ("MemoryError" if work == "piece tables" else "ok")


def test_more_training_workers_than_cores_run_as_one_per_core():
    # 100,000 workers once meant 100,000 tables of ~256 KB up front (and an abort when they did not fit).
    many = bytebpe.train(["hello world"] * 100, 265, workers=100_000)
    assert many.mergeable_ranks == bytebpe.train(["hello world"] * 100, 265, workers=1).mergeable_ranks
