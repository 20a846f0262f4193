"""transformers' fast tokenizers: stock, on bytebpe (`bytebpe.hf.patch_transformers`), and on fastokens
(`fastokens.patch_transformers`, a benchmark peer only), side by side in one run.

Each library runs in a fresh process per round (5 rounds, alternating, medians), loads the same model
directory with `AutoTokenizer.from_pretrained`, is primed on documents it is then never timed on (bytebpe's
piece cache and fastokens' segment cache hold only other text), and prints a digest of its outputs, which
must equal stock transformers' before any time is reported. Wall-clock time (the batch calls use the
machine's threads: HF's rayon pool, bytebpe's pool), on four tasks:
  batch    tok(1,000 documents of 1.5–4 KB, padding=True, truncation=True, max_length=1024, return_tensors="np")
  prompt   tok(one text of ~28,000 tokens: technical English with code, from english_tech.txt, which no
           document of the priming or timed sets comes from)
  decode   tok.batch_decode(the 1,000 documents' ids)
  first    DecodeStream.step over the process's first 2,800-token stream, one id at a time (HF's class on
           stock; on a patched transformers, what `tokenizers.decoders.DecodeStream` then is): a serving
           process's first request, which pays for any table a stream builds once per tokenizer
  stream   the same over the next 2,800 tokens, in a new stream: every later request

    python benchmarks/bench_transformers.py --files DIR [--model llama3.tokenizer.json] [--rounds 5]
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARIES = ("stock", "bytebpe", "fastokens")
TASKS = ("batch", "prompt", "decode", "first", "stream")


def _documents(corpus: Path, half: int, count: int) -> list[str]:
    """`count` distinct documents of 1.5–4 KB (cut at 4,000 characters), English, code and multilingual in
    turn: `half` 0 the even-numbered documents of each kind, 1 the odd ones (priming and timing never share
    a document, and no document is met twice)."""
    kinds = []
    for kind in ("english", "code", "multilingual"):
        docs = []
        with open(corpus / f"docs_{kind}.jsonl", encoding="utf-8") as lines:
            for line in lines:
                text = json.loads(line)["text"]
                if len(text) >= 1500:
                    docs.append(text[:4000])
        kinds.append(docs[half::2])
    out: list[str] = []
    while len(out) < count and any(kinds):
        for docs in kinds:
            if docs and len(out) < count:
                out.append(docs.pop(0))
    if len(out) < count:
        raise SystemExit(f"the corpus has only {len(out)} documents of 1.5 KB or more for this half")
    return out


def _digest(*values) -> str:
    import numpy as np

    hasher = hashlib.sha256()
    for value in values:
        if isinstance(value, dict):
            for key in sorted(value):
                hasher.update(key.encode())
                hasher.update(np.ascontiguousarray(np.asarray(value[key])).tobytes())
        else:
            hasher.update(json.dumps(value, ensure_ascii=False).encode())
    return hasher.hexdigest()[:16]


def worker(library: str, model_dir: str, corpus: str) -> None:
    if library == "bytebpe":
        import bytebpe.hf
        bytebpe.hf.patch_transformers()
    elif library == "fastokens":
        import fastokens
        fastokens.patch_transformers()
    import tokenizers.decoders
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    prime = _documents(Path(corpus), 0, 1000)
    timed = _documents(Path(corpus), 1, 1000)
    with open(Path(corpus) / "english_tech.txt", encoding="utf-8") as file:   # (text no document holds)
        file.seek(2_000_000)
        prompt = file.read(110_000)
        prompt = prompt[prompt.index("\n") + 1:]
    options = {"padding": True, "truncation": True, "max_length": 1024, "return_tensors": "np"}
    tok(prime, **options)
    results, digests = {}, {}

    start = time.perf_counter()
    batch = tok(timed, **options)
    results["batch"] = time.perf_counter() - start
    digests["batch"] = _digest(dict(batch))

    start = time.perf_counter()
    long = tok(prompt)
    results["prompt"] = time.perf_counter() - start
    digests["prompt"] = _digest(long["input_ids"])

    ids = [row[mask.astype(bool)].tolist() for row, mask in zip(batch["input_ids"], batch["attention_mask"])]
    tok.batch_decode(ids[::-1][:100])
    start = time.perf_counter()
    texts = tok.batch_decode(ids)
    results["decode"] = time.perf_counter() - start
    digests["decode"] = _digest(texts)

    backend = tok._tokenizer
    for task, stream_ids in (("first", long["input_ids"][:2800]), ("stream", long["input_ids"][2800:5600])):
        stream = tokenizers.decoders.DecodeStream(skip_special_tokens=False)
        start = time.perf_counter()
        chunks = [stream.step(backend, token_id) for token_id in stream_ids]
        results[task] = time.perf_counter() - start
        digests[task] = _digest(chunks)
    accelerated = library != "stock" and type(backend).__module__.split(".")[0] != "tokenizers"
    print(json.dumps({"library": library, "seconds": results, "digests": digests, "accelerated": accelerated,
                      "tokens": int(batch["attention_mask"].sum()), "prompt_tokens": len(long["input_ids"]),
                      "versions": _versions()}))


def _versions() -> dict[str, str]:
    import importlib.metadata

    found = {}
    for name in ("transformers", "tokenizers", "fastokens", "bytebpe"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=Path, default=Path(os.environ.get("BYTEBPE_REAL_FILES_DIR", ".")))
    parser.add_argument("--model", default="llama3.tokenizer.json")
    parser.add_argument("--pad-token", default="<|end_of_text|>")
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.model_dir, str(args.corpus))
        return 0
    libraries = [lib for lib in LIBRARIES if lib != "fastokens" or _installed("fastokens")]
    with tempfile.TemporaryDirectory() as model_dir:
        (Path(model_dir) / "tokenizer.json").write_bytes((args.files / args.model).read_bytes())
        (Path(model_dir) / "tokenizer_config.json").write_text(json.dumps(
            {"tokenizer_class": "PreTrainedTokenizerFast", "pad_token": args.pad_token}))
        runs: dict[str, list[dict]] = {lib: [] for lib in libraries}
        for _ in range(args.rounds):
            for lib in libraries:
                out = subprocess.run([sys.executable, __file__, "--worker", lib, "--model-dir", model_dir,
                                      "--corpus", str(args.corpus)], capture_output=True, text=True, check=True)
                runs[lib].append(json.loads(out.stdout.strip().splitlines()[-1]))
    stock_digests = runs["stock"][0]["digests"]
    for lib, results in runs.items():
        for result in results:
            for task in TASKS:
                if result["digests"][task] != stock_digests[task]:
                    print(f"{lib}: {task} outputs differ from stock transformers'", file=sys.stderr)
                    return 1
        if lib != "stock" and not results[0]["accelerated"]:
            print(f"{lib}: the tokenizer stayed on HF's backend", file=sys.stderr)
            return 1
    medians = {lib: {task: statistics.median(r["seconds"][task] for r in results) for task in TASKS}
               for lib, results in runs.items()}
    first = runs["stock"][0]
    print(f"# bench_transformers: {datetime.date.today()}, {args.model}, {platform.python_version()}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, {args.rounds} rounds (medians, wall clock)")
    print(f"# versions: {first['versions']}" + (f", fastokens {runs['fastokens'][0]['versions'].get('fastokens')}"
                                               if "fastokens" in runs else ""))
    print(f"# batch: 1,000 documents, {first['tokens']:,} tokens after truncation; prompt: "
          f"{first['prompt_tokens']:,} tokens; every output equal to stock transformers'\n")
    print("| task | " + " | ".join(f"{lib} (ms)" for lib in libraries) + " | bytebpe ÷ stock |"
          + (" bytebpe ÷ fastokens |" if "fastokens" in medians else ""))
    print("|---" * (len(libraries) + 2 + ("fastokens" in medians)) + "|")
    for task in TASKS:
        cells = [f"{medians[lib][task] * 1e3:.2f}" for lib in libraries]
        ratio = medians["stock"][task] / medians["bytebpe"][task]
        line = f"| {task} | " + " | ".join(cells) + f" | {ratio:.2f}× |"
        if "fastokens" in medians:
            line += f" {medians['fastokens'][task] / medians['bytebpe'][task]:.2f}× |"
        print(line)
    return 0


def _installed(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


if __name__ == "__main__":
    sys.exit(main())
