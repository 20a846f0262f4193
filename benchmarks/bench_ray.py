"""What Ray costs on one machine: `bytebpe.encode_files` (the local `bytebpe encode`) next to the Ray engine
(`encode_files(engine="ray")`, i.e. `bytebpe encode --engine ray`) and `bytebpe.ray.write_token_files` over
Ray's own JSON reader, on a local Ray cluster: same inputs, same files written (checked identical).

    python benchmarks/bench_ray.py [--corpus-dir ../shared/corpus] [--encoding cl100k_base] [--repeat 3]

Ray's start (`ray.init`) is timed apart; the job times include Ray's planning, its workers' start and the
transfer of token batches to the driver, which a one-machine run pays and a cluster spreads.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import bytebpe

CORPORA = ["docs_english.jsonl", "docs_code.jsonl", "docs_multilingual.jsonl"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus-dir", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "corpus")
    parser.add_argument("--encoding", default="cl100k_base")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    inputs = [args.corpus_dir / name for name in CORPORA]
    megabytes = sum(path.stat().st_size for path in inputs) / 1e6

    import ray

    import bytebpe.ray

    start = time.perf_counter()
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    init_seconds = time.perf_counter() - start
    out = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    best = {"local": float("inf"), "--engine ray": float("inf"), "write_token_files(read_json)": float("inf")}
    try:
        for _ in range(args.repeat):
            start = time.perf_counter()
            bytebpe.encode_files(inputs, encoding=args.encoding, output=out / "local")
            best["local"] = min(best["local"], time.perf_counter() - start)
            start = time.perf_counter()
            bytebpe.encode_files(inputs, encoding=args.encoding, output=out / "engine", engine="ray")
            best["--engine ray"] = min(best["--engine ray"], time.perf_counter() - start)
            start = time.perf_counter()
            ds = ray.data.read_json([str(path) for path in inputs])
            bytebpe.ray.write_token_files(ds, out / "ray", encoding=args.encoding, num_cpus=1)
            best["write_token_files(read_json)"] = min(best["write_token_files(read_json)"],
                                                        time.perf_counter() - start)
        for name in ("engine", "ray"):
            for suffix in (".tokens.npy", ".offsets.npy"):
                if (out / f"local{suffix}").read_bytes() != (out / f"{name}{suffix}").read_bytes():
                    raise SystemExit(f"the {suffix} files differ: Ray's output ({name}) is not the local one")
    finally:
        shutil.rmtree(out)
        ray.shutdown()
    print(f"{', '.join(CORPORA)}: {megabytes:.1f} MB of JSONL; {args.encoding}; {args.cpus} CPUs; best of "
          f"{args.repeat}; bytebpe {bytebpe.__version__}, ray {ray.__version__}; load average "
          f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())}; outputs identical")
    print(f"ray.init: {init_seconds:.1f} s (once per job)")
    print("| engine | seconds | MB/s | vs local |\n|---|---:|---:|---:|")
    for engine, seconds in best.items():
        print(f"| {engine} | {seconds:.2f} | {megabytes / seconds:.1f} | {seconds / best['local']:.2f}× |")


if __name__ == "__main__":
    main()
