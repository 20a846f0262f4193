#!/usr/bin/env python
"""Encode throughput of bytebpe next to stock tiktoken (and HuggingFace `tokenizers` for gpt2), same run;
sections 9-11 add the peers installed (gigatoken, quicktok, tokie, bpe-openai; `--peers` chooses) on text
the process has not seen: one thread with list and numpy output, fresh and primed, and 2-thread batches.

Every comparison is checked for identical ids before anything is timed; any difference aborts with a
non-zero exit and the first differing position. Tables are Markdown, ready to paste into the README.

    BYTEBPE_DATA_DIR=../shared/vocab python benchmarks/bench_encode.py            # full run, < 5 min
    python benchmarks/bench_encode.py --quick   # a fresh clone: bundled vocabularies, the shipped sample corpus
    BYTEBPE_DATA_DIR=../shared/vocab python benchmarks/bench_encode.py --quick    # smoke test, < 1 min
    BYTEBPE_DATA_DIR=../shared/vocab python benchmarks/bench_encode.py --sections peers --peers gigatoken

Units: MB = 10**6 bytes of UTF-8 input; times are the best of N wall-clock runs (time.perf_counter).
A ratio is bytebpe throughput / other throughput, so above 1 means bytebpe is faster; in sections 9-11 each
cell is that library's throughput / tiktoken's, best of one run per unseen slice (see "peers" below).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import gc
import hashlib
import json
import multiprocessing
import os
import platform
import random
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import bytebpe
from bytebpe.pretokenizer import compile_pattern
from bytebpe.registry import ENCODING_SPECS

sys.path.insert(0, str(Path(__file__).parent))
from summarize_peers import slice_ratios  # noqa: E402  (its neighbour: reads JSON, loads nothing)

# Official download address of each vocabulary file, by file name: tiktoken names a cache entry after the
# sha1 of the address (tiktoken/load.py). Taken from bytebpe's registry, as tests/conftest.py does.
VOCAB_URLS = {file.filename: file.url for spec in ENCODING_SPECS.values() for file in spec.files}
DEFAULT_ENCODINGS = ["cl100k_base", "o200k_base", "gpt2"]
DEFAULT_CORPORA = ["english_prose.txt", "code.txt", "multilingual.txt"]
SHORT_DOC_CHARS = 300
WORST_CASE_CHARS = 1_000_000
WORST_CASE_ENCODING = "cl100k_base"
LOAD_REPEAT = 3
MB = 1e6


class Mismatch(Exception):
    """Two tokenizers (or two paths of one) gave different ids: the benchmark must not go on."""


# ==== setup =======================================================================================


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encodings", nargs="+", default=DEFAULT_ENCODINGS)
    parser.add_argument("--corpora", nargs="+", default=DEFAULT_CORPORA, help="file names in --corpus-dir")
    parser.add_argument("--corpus-dir", type=Path, default=None,
                        help="default: $BYTEBPE_DATA_DIR/../corpus")
    parser.add_argument("--mb", type=float, default=4.0, help="megabytes of each corpus to encode (default 4)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per measurement; the best counts")
    parser.add_argument("--doc-bytes", type=int, default=4096,
                        help="characters per document for the batch measurement (split at line ends)")
    parser.add_argument("--worst", action=argparse.BooleanOptionalAction, default=True,
                        help="time the 1,000,000-character worst cases (default on)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 1 MB, 1 repeat, cl100k_base only")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write raw numbers here")
    parser.add_argument("--peers", nargs="*", choices=PEER_NAMES, default=None, metavar="PEER",
                        help=f"peer libraries for sections 9-11, of {', '.join(PEER_NAMES)} (default: every one "
                             "installed; none given: bytebpe and tiktoken only)")
    parser.add_argument("--peer-mb", type=float, default=1.0,
                        help="megabytes of each unseen slice in sections 9-11; one slice per repeat (default 1)")
    parser.add_argument("--scaling-turns", type=int, default=5,
                        help="turns per slice for the 2-thread scaling ratios of section 11 (default 5)")
    parser.add_argument("--sections", choices=("all", "peers"), default="all",
                        help="peers: sections 9-11 only (default all)")
    parser.add_argument("--isolation", choices=("process", "none"), default="process",
                        help="sections 9-11: time each library in a fresh process of its own (default), or all "
                             "in this one (the default with --quick)")
    args = parser.parse_args(argv)
    if args.quick:
        # --quick only changes the defaults: flags given explicitly next to it still win.
        parser.set_defaults(mb=1.0, repeat=1, encodings=["cl100k_base"], peer_mb=0.25, scaling_turns=1,
                            isolation="none")
        args = parser.parse_args(argv)
    if args.repeat < 1 or args.mb <= 0 or args.doc_bytes < 1 or args.peer_mb <= 0 or args.scaling_turns < 1:
        parser.error("--repeat, --mb, --peer-mb, --scaling-turns and --doc-bytes must be positive")
    if args.peers is None:
        args.peers = installed_peers()
    return args


def vocab_dir_from_env(fresh_clone_dir: Path | None = None) -> Path:
    """The first BYTEBPE_DATA_DIR entry that holds the vocabularies (bytebpe reads the same variable); without
    BYTEBPE_DATA_DIR (a fresh clone), `fresh_clone_dir` filled with the original files of the vocabularies
    bytebpe bundles (OpenAI's .tiktoken files and GPT-2's encoder.json / vocab.bpe, byte for byte)."""
    raw = os.environ.get("BYTEBPE_DATA_DIR", "")
    if not raw and fresh_clone_dir is not None:
        from bytebpe.tiktoken_cache import original_files

        for name in ENCODING_SPECS:
            for file, data in original_files(name).items():
                (fresh_clone_dir / file.filename).write_bytes(data)
        return fresh_clone_dir
    for entry in raw.split(os.pathsep):
        if entry and (Path(entry) / "cl100k_base.tiktoken").is_file():
            return Path(entry)
    sys.exit(f"bench_encode: BYTEBPE_DATA_DIR={raw!r} holds no cl100k_base.tiktoken; point it at the vocabularies")


def corpus_dir_for(args: argparse.Namespace, vocab_dir: Path) -> Path:
    """--corpus-dir, else the corpora beside BYTEBPE_DATA_DIR's vocabularies, else (a fresh clone) the sample
    corpus the package ships, whose three files stand in for the default corpora."""
    if args.corpus_dir:
        return args.corpus_dir
    if os.environ.get("BYTEBPE_DATA_DIR"):
        return vocab_dir.parent / "corpus"
    from bytebpe.bench import SAMPLE_DIR

    if args.corpora == DEFAULT_CORPORA:
        args.corpora = ["english.txt", "code.txt", "multilingual.txt"]
    # 0.12-0.16 MB each: every section's slices scaled down to fit (the header prints the sizes; small slices
    # make rough figures, but the same ones for every library).
    args.mb, args.peer_mb, args.priming_mb = min(args.mb, 0.03), min(args.peer_mb, 0.02), 0.04
    return Path(SAMPLE_DIR)


def add_peer_text_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the scripts that compare bytebpe with gigatoken on issue 37's cells (bench_seen_path.py,
    bench_unseen_peer.py): which encodings, which corpora, and where the corpora are."""
    parser.add_argument("--encodings", nargs="+", default=["cl100k_base", "o200k_base"])
    parser.add_argument("--corpora", nargs="+", default=["english_prose.txt", "code.txt", "multilingual.txt"])
    parser.add_argument("--corpus-dir", type=Path,
                        default=Path(__file__).resolve().parents[2] / "shared" / "corpus")


def link_offline_tiktoken_cache(vocab_dir: Path, cache_dir: Path) -> None:
    """Make `cache_dir` a tiktoken cache whose entries link to the real files, so tiktoken never downloads.

    Must run before tiktoken.get_encoding: tiktoken reads TIKTOKEN_CACHE_DIR on every load.
    """
    for filename, url in VOCAB_URLS.items():
        target = vocab_dir / filename
        if target.is_file():
            (cache_dir / hashlib.sha1(url.encode()).hexdigest()).symlink_to(target.resolve())
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)


def read_sample(path: Path, megabytes: float) -> str:
    """The first `megabytes` of a UTF-8 file, cut back to the last whole character."""
    with open(path, "rb") as file:
        data = file.read(int(megabytes * MB))
    end = len(data)
    # Step back over UTF-8 continuation bytes (10xxxxxx) to the lead byte of the last character, and drop
    # that character only if it was cut short.
    lead = end - 1
    while lead > 0 and 0x80 <= data[lead] < 0xC0:
        lead -= 1
    if lead >= 0 and end - lead < _utf8_length(data[lead]):
        end = lead
    return data[:end].decode("utf-8")


def _utf8_length(lead_byte: int) -> int:
    return 1 if lead_byte < 0x80 else 2 if lead_byte < 0xE0 else 3 if lead_byte < 0xF0 else 4


def split_into_documents(text: str, target_chars: int) -> list[str]:
    """Consecutive runs of whole lines of about `target_chars` characters each; they join back to `text`.

    >>> split_into_documents("ab\\ncd\\nef\\n", 4)
    ['ab\\ncd\\n', 'ef\\n']
    """
    documents: list[str] = []
    current: list[str] = []
    size = 0
    for line in text.splitlines(keepends=True):
        current.append(line)
        size += len(line)
        if size >= target_chars:
            documents.append("".join(current))
            current, size = [], 0
    if current:
        documents.append("".join(current))
    return documents


def huggingface_gpt2(vocab_dir: Path) -> tuple[Any, str]:
    """(tokenizers.Tokenizer for GPT-2 built from the data-gym files, "") or (None, why it is missing)."""
    try:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    except ImportError as error:
        return None, f"tokenizers is not importable ({error})"
    tokenizer = Tokenizer(models.BPE.from_file(vocab=str(vocab_dir / "encoder.json"),
                                               merges=str(vocab_dir / "vocab.bpe")))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer, ""


# ==== checking ====================================================================================


def first_difference(expected: Sequence[int], actual: Sequence[int]) -> int | None:
    """Index of the first position where the id lists differ (or where the shorter one ends); None if equal."""
    if len(expected) == len(actual) and expected == actual:
        return None
    for index, (left, right) in enumerate(zip(expected, actual)):
        if left != right:
            return index
    return min(len(expected), len(actual))


def require_identical(what: str, expected: Sequence[int], actual: Sequence[int], decode: Callable) -> None:
    """Raise Mismatch naming the first differing token position, with the text around it."""
    position = first_difference(expected, actual)
    if position is None:
        return
    window = slice(max(0, position - 3), position + 4)
    raise Mismatch(
        f"{what}: ids differ at token {position} (lengths {len(expected)} vs {len(actual)})\n"
        f"  expected ids[{window.start}:{window.stop}] = {list(expected[window])} "
        f"= {decode(list(expected[window]))!r}\n"
        f"  actual   ids[{window.start}:{window.stop}] = {list(actual[window])} "
        f"= {decode(list(actual[window]))!r}")


def require_identical_batches(what: str, expected: Sequence[Sequence[int]], actual: Sequence[Sequence[int]],
                              decode: Callable) -> None:
    if len(expected) != len(actual):
        raise Mismatch(f"{what}: {len(expected)} documents expected, got {len(actual)}")
    for index, (expected_ids, actual_ids) in enumerate(zip(expected, actual)):
        require_identical(f"{what}, document {index}", expected_ids, actual_ids, decode)


def check_sample(encoding: str, corpus: str, libs: dict[str, Any], text: str, docs: list[str],
                 short_docs: list[str]) -> dict[str, Any]:
    """Every path the benchmark times must give tiktoken's serial ids; returns those reference ids."""
    ours, theirs = libs["bytebpe"], libs["tiktoken"]
    label = f"{encoding} / {corpus}"
    expected = theirs.encode_ordinary(text)
    references: dict[str, Any] = {"sample": expected}
    require_identical(f"{label}: bytebpe.encode_ordinary vs tiktoken", expected, ours.encode_ordinary(text),
                      theirs.decode)
    # encode_to_numpy as encode_ordinary (special tokens' text is ordinary: the sample code holds "<|endoftext|>").
    require_identical(f"{label}: bytebpe.encode_to_numpy", expected,
                      ours.encode_to_numpy(text, disallowed_special=()).tolist(), theirs.decode)
    require_identical(f"{label}: tiktoken.encode_to_numpy", expected,
                      theirs.encode_to_numpy(text, disallowed_special=()).tolist(), theirs.decode)
    for name, documents in (("batch documents", docs), ("short documents", short_docs)):
        serial = [theirs.encode_ordinary(doc) for doc in documents]
        require_identical_batches(f"{label}, {name}: bytebpe loop vs tiktoken loop", serial,
                                  [ours.encode_ordinary(doc) for doc in documents], theirs.decode)
        require_identical_batches(f"{label}, {name}: bytebpe.encode_ordinary_batch vs serial", serial,
                                  ours.encode_ordinary_batch(documents), theirs.decode)
        require_identical_batches(f"{label}, {name}: tiktoken.encode_ordinary_batch vs serial", serial,
                                  theirs.encode_ordinary_batch(documents), theirs.decode)
        references[name] = serial
    return references


def huggingface_agrees(hf: Any, references: dict[str, Any], text: str, docs: list[str],
                       short_docs: list[str], decode: Callable) -> str:
    """"" when HF's ids equal tiktoken's on everything HF is timed on, else the reason not."""
    try:
        require_identical("HF encode vs tiktoken", references["sample"], hf.encode(text).ids, decode)
        require_identical_batches("HF encode_batch vs tiktoken", references["batch documents"],
                                  [e.ids for e in hf.encode_batch(docs)], decode)
        require_identical_batches("HF encode loop vs tiktoken", references["short documents"],
                                  [hf.encode(doc).ids for doc in short_docs], decode)
    except Mismatch as mismatch:
        return str(mismatch)
    return ""


# ==== timing ======================================================================================


def best_seconds(run: Callable[[], object], repeat: int) -> float:
    """Best wall time of `repeat` calls. The garbage collector is paused so that a collection triggered
    by one library's allocations is not billed to the next call; results are dropped after each run."""
    best = float("inf")
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            start = time.perf_counter()
            result = run()
            elapsed = time.perf_counter() - start
            del result
            best = min(best, elapsed)
    finally:
        if gc_was_enabled:
            gc.enable()
    gc.collect()
    return best


def timed_calls(lib_name: str, enc: Any, text: str, docs: list[str], short_docs: list[str]
                ) -> dict[str, Callable[[], object]]:
    """The call each measurement times, for one library (HF has no encode_to_numpy)."""
    if lib_name == "huggingface":
        def encode(doc: str) -> list[int]:
            return enc.encode(doc).ids
        return {
            "single": lambda: encode(text),
            "batch": lambda: [e.ids for e in enc.encode_batch(docs)],
            "loop": lambda: [encode(doc) for doc in docs],
            "short_loop": lambda: [encode(doc) for doc in short_docs],
        }
    return {
        "single": lambda: enc.encode_ordinary(text),
        "numpy": lambda: enc.encode_to_numpy(text, disallowed_special=()),
        # Each library with its default num_threads (8); bytebpe caps its pool at the usable cores.
        "batch": lambda: enc.encode_ordinary_batch(docs),
        "loop": lambda: [enc.encode_ordinary(doc) for doc in docs],
        "short_loop": lambda: [enc.encode_ordinary(doc) for doc in short_docs],
        "short_batch": lambda: enc.encode_ordinary_batch(short_docs),
    }


def measure_sample(libs: dict[str, Any], text: str, docs: list[str], short_docs: list[str],
                   repeat: int) -> dict[str, dict[str, float]]:
    """Seconds per measurement and library: {"single": {"bytebpe": s, "tiktoken": s}, "numpy": ..., ...}."""
    calls = {lib_name: timed_calls(lib_name, enc, text, docs, short_docs) for lib_name, enc in libs.items()}
    seconds: dict[str, dict[str, float]] = {}
    for measurement in ("single", "numpy", "batch", "loop", "short_loop", "short_batch"):
        # Libraries take turns within each measurement, so slow drift (heat, other load) hits all alike.
        seconds[measurement] = {lib_name: best_seconds(lib_calls[measurement], repeat)
                                for lib_name, lib_calls in calls.items() if measurement in lib_calls}
    return seconds


def measure_stages(ours: bytebpe.Encoding, text: str, repeat: int) -> dict[str, float]:
    """bytebpe's stages apart: the compiled scan alone (no piece objects), the `regex` pre-tokenizer it
    replaces, and the whole encode with each engine."""
    scanner = ours.with_pretokenizer("compiled")._pretokenize
    regex_engine = ours.with_pretokenizer("regex")
    pattern = compile_pattern(ours._pat_str)     # what the regex engine runs (tiktoken's classes spelled out)
    require_identical("compiled vs regex engine", regex_engine.encode_ordinary(text), ours.encode_ordinary(text),
                      ours.decode)
    return {
        "scan": best_seconds(lambda: scanner.count(text), repeat),
        "regex_findall": best_seconds(lambda: pattern.findall(text, concurrent=False), repeat),
        "regex_encode": best_seconds(lambda: regex_engine.encode_ordinary(text), repeat),
    }


def measure_worst_cases(ours: bytebpe.Encoding, theirs: Any) -> list[dict[str, Any]]:
    """One run each (a quadratic merge would take minutes, not a best-of-3), ids compared when both succeed."""
    rng = random.Random(1234)  # fixed seed: the same "random" text every run
    cases = {
        '"a" repeated': "a" * WORST_CASE_CHARS,
        "spaces": " " * WORST_CASE_CHARS,
        '"1234567890" repeated': ("1234567890" * (WORST_CASE_CHARS // 10 + 1))[:WORST_CASE_CHARS],
        '"-" repeated': "-" * WORST_CASE_CHARS,
        "random ASCII letters": "".join(rng.choices(string.ascii_letters, k=WORST_CASE_CHARS)),
    }
    rows = []
    for case, text in cases.items():
        row: dict[str, Any] = {"case": case, "chars": len(text)}
        outputs = {}
        for lib_name, enc in (("bytebpe", ours), ("tiktoken", theirs)):
            start = time.perf_counter()
            try:
                outputs[lib_name] = enc.encode_ordinary(text)
                row[lib_name] = time.perf_counter() - start
            except Exception as error:  # tiktoken's regex engine may give up on some inputs: report it
                row[lib_name] = f"raised {type(error).__name__}"
                row[f"{lib_name}_error"] = f"{type(error).__name__}: {error}"[:200]
        if "bytebpe" in outputs and "tiktoken" in outputs:
            require_identical(f"worst case {case}", outputs["tiktoken"], outputs["bytebpe"], theirs.decode)
            row["ids_equal"] = True
        row["tokens"] = len(outputs["bytebpe"]) if "bytebpe" in outputs else None
        rows.append(row)
    return rows


def bundled_vocabulary_environment() -> dict[str, str]:
    """The environment with BYTEBPE_DATA_DIR removed: bytebpe then loads the vocabularies it bundles, as it
    does for its users (the variable names a user's own copy, which takes precedence)."""
    return {key: value for key, value in os.environ.items() if key != "BYTEBPE_DATA_DIR"}


def measure_load_times(names: Sequence[str]) -> list[dict[str, Any]]:
    """Cold get_encoding for both libraries: in-process caches cleared, files in the OS page cache; bytebpe
    from its bundled vocabularies."""
    import regex
    import tiktoken
    import tiktoken.registry

    from bytebpe import registry as bytebpe_registry

    def clear_bytebpe() -> None:
        bytebpe_registry._clear_caches()
        # `regex` caches compiled patterns; tiktoken compiles its pattern on every load, so clear that too
        # to compare like with like.
        regex.purge()

    data_dir = os.environ.pop("BYTEBPE_DATA_DIR", None)     # only bytebpe reads it
    try:
        rows = []
        for name in names:
            row: dict[str, Any] = {"encoding": name}
            for lib_name, clear, load in (
                ("bytebpe", clear_bytebpe, bytebpe.get_encoding),
                ("tiktoken", tiktoken.registry.ENCODINGS.clear, tiktoken.get_encoding),
            ):
                best = float("inf")
                for _ in range(LOAD_REPEAT):
                    clear()
                    gc.collect()
                    start = time.perf_counter()
                    load(name)
                    best = min(best, time.perf_counter() - start)
                row[lib_name] = best
            rows.append(row)
    finally:
        if data_dir is not None:
            os.environ["BYTEBPE_DATA_DIR"] = data_dir
        clear_bytebpe()     # what later sections load comes from BYTEBPE_DATA_DIR again
    return rows


_RESIDENT_MEMORY_PROBE = """
import gc, sys
def rss_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
import {module}
before = rss_kib()
enc = {module}.get_encoding({name!r})
enc.encode_ordinary("warm up the encoder once")
gc.collect()
print(rss_kib() - before)
"""


def measure_resident_memory(names: Sequence[str]) -> list[dict[str, Any]]:
    """Resident memory a loaded encoding adds to a fresh interpreter (after importing the library)."""
    import subprocess

    rows = []
    for name in names:
        row: dict[str, Any] = {"encoding": name}
        for module in ("bytebpe", "tiktoken"):
            probe = subprocess.run([sys.executable, "-c", _RESIDENT_MEMORY_PROBE.format(module=module, name=name)],
                                   capture_output=True, text=True, env=bundled_vocabulary_environment())
            row[module] = int(probe.stdout.strip()) / 1024 if probe.returncode == 0 else None
        rows.append(row)
    return rows


# ==== reporting ===================================================================================


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as file:
            for line in file:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> str:
    try:
        return " / ".join(f"{load:.2f}" for load in os.getloadavg()) + " (1 / 5 / 15 min)"
    except OSError:
        return "unknown"


def print_header(args: argparse.Namespace, versions: dict[str, str], corpus_dir: Path) -> None:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    print(f"# bytebpe encode benchmark — {now}\n")
    print(f"- machine: {platform.platform()}; {cpu_model()}; os.cpu_count()={os.cpu_count()} "
          f"(usable by this process: {usable})")
    print(f"- load average at start (other processes share these cores): {load_average()}")
    print(f"- Python {platform.python_version()} ({platform.python_implementation()}); "
          + ", ".join(f"{name} {version}" for name, version in versions.items()))
    print(f"- corpora: {corpus_dir}, first {args.mb:g} MB of each; best of {args.repeat} run(s) per measurement; "
          f"batch documents ~{args.doc_bytes} chars, short documents ~{SHORT_DOC_CHARS} chars, both cut at "
          "line ends")
    print("- MB = 10^6 bytes of UTF-8 input. ratio = bytebpe throughput / other throughput (> 1: bytebpe faster)."
          "\n- Every id sequence was checked equal to tiktoken's before timing.")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]], text_columns: int = 2) -> str:
    """A Markdown table: the first `text_columns` columns left-aligned, the numbers right-aligned."""
    alignment = ["---" if i < text_columns else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(alignment) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def ratio(ours: float | None, other: float | None) -> str:
    return "—" if ours is None or other is None else f"{ours / other:.2f}×"


def mb_per_s(result: dict[str, Any], measurement: str, lib_name: str) -> float | None:
    """Throughput of one library in one measurement; None when it was not timed (HF outside gpt2)."""
    seconds = result["seconds"][measurement].get(lib_name)
    return None if seconds is None else result["bytes"] / MB / seconds


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]], note: str = "",
                text_columns: int = 2) -> None:
    print(f"\n## {title}\n")
    if note:
        print(f"{note}\n")
    print(markdown_table(header, rows, text_columns))


def print_single_text(results: list[dict[str, Any]], with_hf: bool) -> None:
    rows = []
    for r in results:
        ours, theirs = mb_per_s(r, "single", "bytebpe"), mb_per_s(r, "single", "tiktoken")
        hf = mb_per_s(r, "single", "huggingface")
        ours_tokens_per_s = r["tokens"] / r["seconds"]["single"]["bytebpe"] / 1e6
        theirs_tokens_per_s = r["tokens"] / r["seconds"]["single"]["tiktoken"] / 1e6
        rows.append([r["encoding"], r["corpus"], fmt(r["bytes"] / MB, 2), f"{r['tokens']:,}", fmt(ours),
                     fmt(theirs), ratio(ours, theirs), fmt(ours_tokens_per_s, 2), fmt(theirs_tokens_per_s, 2),
                     *([fmt(hf), ratio(ours, hf)] if with_hf else [])])
    print_table("1. One text, one thread: `encode_ordinary(text)`",
                ["encoding", "corpus", "MB", "tokens", "bytebpe MB/s", "tiktoken MB/s", "ratio", "bytebpe Mtok/s",
                 "tiktoken Mtok/s", *(["HF MB/s", "ratio vs HF"] if with_hf else [])], rows)


def print_numpy(results: list[dict[str, Any]]) -> None:
    rows = []
    for r in results:
        ours, theirs = mb_per_s(r, "numpy", "bytebpe"), mb_per_s(r, "numpy", "tiktoken")
        rows.append([r["encoding"], r["corpus"], fmt(ours), fmt(theirs), ratio(ours, theirs),
                     ratio(ours, mb_per_s(r, "single", "bytebpe"))])
    print_table("2. One text to a uint32 array: `encode_to_numpy(text, disallowed_special=())`",
                ["encoding", "corpus", "bytebpe MB/s", "tiktoken MB/s", "ratio", "bytebpe numpy / bytebpe list"],
                rows)


def print_batch(results: list[dict[str, Any]], with_hf: bool) -> None:
    rows = []
    for r in results:
        batch = {lib: mb_per_s(r, "batch", lib) for lib in ("bytebpe", "tiktoken", "huggingface")}
        loop = {lib: mb_per_s(r, "loop", lib) for lib in ("bytebpe", "tiktoken", "huggingface")}
        rows.append([r["encoding"], r["corpus"], f"{r['docs']:,}", fmt(batch["bytebpe"]), fmt(loop["bytebpe"]),
                     fmt(batch["tiktoken"]), fmt(loop["tiktoken"]), ratio(batch["bytebpe"], batch["tiktoken"]),
                     ratio(loop["bytebpe"], loop["tiktoken"]),
                     *([fmt(batch["huggingface"]), fmt(loop["huggingface"])] if with_hf else [])])
    print_table("3. Many documents: `encode_ordinary_batch(docs)` vs a Python loop of `encode_ordinary`",
                ["encoding", "corpus", "docs", "bytebpe batch MB/s", "bytebpe loop MB/s", "tiktoken batch MB/s",
                 "tiktoken loop MB/s", "batch ratio", "loop ratio",
                 *(["HF batch MB/s", "HF loop MB/s"] if with_hf else [])], rows,
                note="Both batches with their default num_threads=8 (bytebpe's pool has one thread per usable "
                     "core); HF with its own default parallelism.")


def print_short_documents(results: list[dict[str, Any]], with_hf: bool) -> None:
    rows = []
    for r in results:
        us_per_doc = {lib: None if seconds is None else seconds / r["short_docs"] * 1e6
                      for lib in ("bytebpe", "tiktoken", "huggingface")
                      for seconds in [r["seconds"]["short_loop"].get(lib)]}
        rows.append([r["encoding"], r["corpus"], f"{r['short_docs']:,}", fmt(us_per_doc["bytebpe"], 2),
                     fmt(us_per_doc["tiktoken"], 2), ratio(us_per_doc["tiktoken"], us_per_doc["bytebpe"]),
                     fmt(mb_per_s(r, "short_loop", "bytebpe")), fmt(mb_per_s(r, "short_loop", "tiktoken")),
                     fmt(mb_per_s(r, "short_batch", "bytebpe")), fmt(mb_per_s(r, "short_batch", "tiktoken")),
                     ratio(mb_per_s(r, "short_batch", "bytebpe"), mb_per_s(r, "short_loop", "bytebpe")),
                     *([fmt(us_per_doc["huggingface"], 2)] if with_hf else [])])
    print_table(f"4. Short documents (~{SHORT_DOC_CHARS} chars): a Python loop of `encode_ordinary` (call "
                "overhead), and `encode_ordinary_batch` of the same documents",
                ["encoding", "corpus", "docs", "bytebpe µs/doc", "tiktoken µs/doc", "loop ratio", "bytebpe loop MB/s",
                 "tiktoken loop MB/s", "bytebpe batch MB/s", "tiktoken batch MB/s", "bytebpe batch / loop",
                 *(["HF µs/doc"] if with_hf else [])], rows)


def print_stages(results: list[dict[str, Any]]) -> None:
    rows = []
    for r in results:
        stages, whole = r["stage_seconds"], r["seconds"]["single"]["bytebpe"]
        mb = r["bytes"] / MB
        rows.append([r["encoding"], r["corpus"], fmt(mb / whole), fmt(mb / stages["scan"]),
                     f"{100 * stages['scan'] / whole:.0f}%", fmt(mb / stages["regex_findall"]),
                     fmt(mb / stages["regex_encode"]), ratio(stages["regex_encode"], whole)])
    print_table("5. bytebpe stages: the compiled scanner vs the `regex` engine it replaces",
                ["encoding", "corpus", "encode MB/s", "scan alone MB/s", "scan % of encode",
                 "regex.findall MB/s", "encode with regex engine MB/s", "compiled / regex engine"], rows,
                note="`scan alone` is `Scanner.count` (pieces found, no objects made); `encode with regex engine` "
                     "is `enc.with_pretokenizer(\"regex\").encode_ordinary`, the same ids through `regex`.")


def print_tables(results: list[dict[str, Any]]) -> None:
    with_hf = any("huggingface" in r["seconds"]["single"] for r in results)
    print_single_text(results, with_hf)
    print_numpy(results)
    print_batch(results, with_hf)
    print_short_documents(results, with_hf)
    print_stages(results)
    if with_hf:
        print("\nHF = HuggingFace tokenizers, gpt2 only, built from vocab.bpe + encoder.json (ByteLevel, no "
              "prefix space); its `encode` also computes offsets, which tiktoken and bytebpe do not.")


def print_worst_cases(rows: list[dict[str, Any]]) -> None:
    def cell(value: Any) -> str:
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    table = [[row["case"], f"{row['chars']:,}", "—" if row["tokens"] is None else f"{row['tokens']:,}",
              cell(row["bytebpe"]), cell(row["tiktoken"]), "yes" if row.get("ids_equal") else "not compared"]
             for row in rows]
    print_table(f"6. Worst cases, {WORST_CASE_ENCODING}, one run each: seconds for `encode_ordinary`",
                ["input", "chars", "tokens", "bytebpe s", "tiktoken s", "ids equal"], table, text_columns=1)
    for row in rows:
        for lib_name in ("bytebpe", "tiktoken"):
            if f"{lib_name}_error" in row:
                print(f"\n- {lib_name} on {row['case']}: {row[f'{lib_name}_error']}")


def print_resident_memory(rows: list[dict[str, Any]]) -> None:
    table = [[row["encoding"], fmt(row["bytebpe"]), fmt(row["tiktoken"]),
              ratio(row["tiktoken"], row["bytebpe"]) if row["bytebpe"] and row["tiktoken"] else "—"]
             for row in rows]
    print_table("8. Resident memory of a loaded encoding (MiB added to a fresh interpreter)",
                ["encoding", "bytebpe MiB", "tiktoken MiB", "tiktoken / bytebpe"], table, text_columns=1,
                note="After one `encode_ordinary`; bytebpe from the vocabularies it bundles.")


def print_load_times(rows: list[dict[str, Any]]) -> None:
    table = [[row["encoding"], f"{row['bytebpe'] * 1e3:,.0f}", f"{row['tiktoken'] * 1e3:,.0f}",
              ratio(1 / row["bytebpe"], 1 / row["tiktoken"])] for row in rows]
    print_table(f"7. Load time: cold `get_encoding(name)`, best of {LOAD_REPEAT}",
                ["encoding", "bytebpe ms", "tiktoken ms", "ratio"], table, text_columns=1,
                note="In-process caches cleared before each load (bytebpe's registry, compiled pattern and regex "
                     "cache; tiktoken's ENCODINGS); the files are already in the OS page cache. bytebpe loads "
                     "the vocabularies it bundles (BYTEBPE_DATA_DIR unset), tiktoken its cached `.tiktoken` "
                     "files.")


# ==== peers: unseen text, fresh and primed objects, 2-thread batches ==============================
#
# Libraries that keep state across calls (bytebpe's persistent piece cache, gigatoken's pre-token cache)
# would time cache hits if a repeat re-encoded text they had seen. So every timed run here gets BOTH a
# fresh slice of the corpus that nothing in the process has encoded (repeat r takes the r-th slice after
# the priming text) AND a fresh object: `Peer.make()` builds a new one (bytebpe: its shared piece cache
# emptied). "primed" runs first encode PRIMING_MB of *other* text from the same file with that object,
# through the call that is then timed (`_primer`).
# Ids are checked equal to tiktoken's on every timed slice (with an object that is then thrown away)
# before anything is timed; a peer that differs is reported with the first differing position, not timed.

PEER_NAMES = ("gigatoken", "quicktok", "tokie", "bpe-openai")
PRIMING_MB = 2.0
BATCH_THREADS = 2
BATCH_DOC_CHARS = (1000, 4000)      # 1-4 KB documents, cut at line ends


@dataclass
class Peer:
    """How one library is built and called. `make` returns a fresh object; each call takes (object, input)."""

    name: str
    version: str
    make: Callable[[], Any]
    encode_list: Callable[[Any, str], Sequence[int]]
    encode_numpy: Callable[[Any, str], Any] | None = None
    batch_list: Callable[[Any, list[str]], Sequence[Sequence[int]]] | None = None     # 2 threads
    batch_numpy: Callable[[Any, list[str]], Any] | None = None     # 2 threads; (flat ids, offsets)
    primed: bool = False        # keeps a cache across calls: also timed after PRIMING_MB of other text
    note: str = ""


def _bytebpe_peer(encoding: str, vocab_dir: Path) -> Peer:
    registry_copy = bytebpe.get_encoding(encoding)
    cache_bytes = registry_copy.piece_cache_info().max_bytes

    def make() -> bytebpe.Encoding:
        # The piece cache belongs to the merge table, shared by every copy of the encoding: setting the
        # bound drops what it held, so the next call starts from an empty cache.
        registry_copy.set_piece_cache_bytes(0)
        registry_copy.set_piece_cache_bytes(cache_bytes)
        return registry_copy

    return Peer("bytebpe", bytebpe.__version__, make,
                lambda enc, text: enc.encode_ordinary(text),
                lambda enc, text: enc.encode_to_numpy(text, disallowed_special=()),
                lambda enc, docs: enc.encode_ordinary_batch(docs, num_threads=BATCH_THREADS),
                lambda enc, docs: enc.encode_batch_to_numpy(docs, num_threads=BATCH_THREADS, disallowed_special=()),
                primed=True, note=f"piece cache {cache_bytes / 2**20:g} MiB, emptied before each run")


def _tiktoken_peer(encoding: str, vocab_dir: Path) -> Peer:
    import tiktoken

    return Peer("tiktoken", _version("tiktoken"), lambda: tiktoken.get_encoding(encoding),
                lambda enc, text: enc.encode_ordinary(text),
                lambda enc, text: enc.encode_to_numpy(text, disallowed_special=()),
                lambda enc, docs: enc.encode_ordinary_batch(docs, num_threads=BATCH_THREADS),
                note="no state across calls")


# gigatoken takes the split pattern from the .tiktoken file's name; gpt2 has r50k_base's ranks and pattern.
_GIGATOKEN_FILES = {"gpt2": "r50k_base", "r50k_base": "r50k_base", "cl100k_base": "cl100k_base",
                    "o200k_base": "o200k_base"}


def _gigatoken_peer(encoding: str, vocab_dir: Path) -> Peer:
    import gigatoken

    if encoding not in _GIGATOKEN_FILES:
        raise ValueError(f"reads only {', '.join(sorted(_GIGATOKEN_FILES))}")
    path = vocab_dir / f"{_GIGATOKEN_FILES[encoding]}.tiktoken"

    def make() -> tuple[Any, Any]:
        tokenizer = gigatoken.Tokenizer.from_tiktoken(path)
        return tokenizer, tokenizer.as_tiktoken()

    def batch_numpy(made: tuple[Any, Any], docs: list[str]) -> Any:
        # encode_batch gives an awkward Array; its flat content and offsets are the numpy form.
        layout = made[0].encode_batch(docs).layout
        return layout.content.data, layout.offsets.data

    return Peer("gigatoken", _version("gigatoken"), make,
                lambda made, text: made[1].encode_ordinary(text),
                lambda made, text: made[0].encode(text),
                lambda made, docs: made[1].encode_ordinary_batch(docs, num_threads=BATCH_THREADS),
                batch_numpy, primed=True,
                note="`Tokenizer.from_tiktoken` per run; list = `.as_tiktoken().encode_ordinary`, numpy = "
                     "`Tokenizer.encode`; batches on its own Rust pool (no thread count; this box has 2 cores)")


def _quicktok_peer(encoding: str, vocab_dir: Path) -> Peer:
    import quicktok

    if encoding not in ("cl100k_base", "o200k_base", "o200k_harmony"):
        raise ValueError("bundles cl100k_base, o200k_base, o200k_harmony (and non-OpenAI ones) only")
    return Peer("quicktok", _version(PEER_DISTRIBUTIONS["quicktok"]), lambda: quicktok.Tokenizer(encoding, ""),
                lambda tok, text: tok.encode_ordinary(text),
                lambda tok, text: tok.encode_batch([text], 1)[0],
                None,
                lambda tok, docs: tok.encode_batch(docs, BATCH_THREADS),
                note="numpy = `encode_batch([text], 1)` (flat uint32); its batch has numpy output only")


def _tokie_peer(encoding: str, vocab_dir: Path) -> Peer:
    import tokie

    # tokie reads Hugging Face tokenizer.json files only: bytebpe writes one for the encoding (and the ids
    # are checked against tiktoken's like every peer's).
    with tempfile.TemporaryDirectory(prefix="bench-tokie-") as folder:
        path = Path(folder) / "tokenizer.json"
        bytebpe.get_encoding(encoding).to_tokenizer_json(path)
        tokenizer = tokie.Tokenizer.from_json(str(path))
    return Peer("tokie", _version("tokie"), lambda: tokenizer,
                lambda tok, text: tok.encode(text, add_special_tokens=False).ids,
                None,
                lambda tok, docs: [e.ids for e in tok.encode_batch(docs, add_special_tokens=False)],
                note="from bytebpe's `to_tokenizer_json`; one object (no cross-call cache); batch on its own "
                     "Rust pool")


def _bpe_openai_peer(encoding: str, vocab_dir: Path) -> Peer:
    import bpe_openai
    from bpe_openai import _bindings

    if encoding not in _bindings.supported_encodings():
        raise ValueError(f"supports {', '.join(_bindings.supported_encodings())}")
    wrapper = bpe_openai.get_encoding(encoding)
    return Peer("bpe-openai", _version("bpe-openai"), lambda: _bindings.tokenizer_for_encoding(encoding),
                lambda tok, text: tok.encode(text),
                None,
                lambda tok, docs: wrapper.encode_ordinary_batch(docs, num_threads=BATCH_THREADS),
                note="list = the Rust binding's `encode` (the tiktoken-style wrapper refuses texts over 200,000 "
                     "tokens); batch = the wrapper's `encode_ordinary_batch` (a Python thread pool)")


PEER_BUILDERS: dict[str, Callable[[str, Path], Peer]] = {
    "gigatoken": _gigatoken_peer, "quicktok": _quicktok_peer, "tokie": _tokie_peer, "bpe-openai": _bpe_openai_peer}
PEER_MODULES = {"gigatoken": "gigatoken", "quicktok": "quicktok", "tokie": "tokie", "bpe-openai": "bpe_openai"}
PEER_DISTRIBUTIONS = {"gigatoken": "gigatoken", "quicktok": "quicktok-v1", "tokie": "tokie", "bpe-openai": "bpe-openai"}


def installed_peers() -> list[str]:
    import importlib.util

    return [name for name in PEER_NAMES if importlib.util.find_spec(PEER_MODULES[name]) is not None]


def read_range(path: Path, start_mb: float, megabytes: float) -> str:
    """`megabytes` of a UTF-8 file from byte `start_mb` MB on, both ends moved to whole characters."""
    with open(path, "rb") as file:
        file.seek(int(start_mb * MB))
        data = file.read(int(megabytes * MB) + 4)
    begin = 0
    while begin < len(data) and 0x80 <= data[begin] < 0xC0:     # skip a cut character's tail
        begin += 1
    end = min(len(data), begin + int(megabytes * MB))
    while end < len(data) and 0x80 <= data[end] < 0xC0:         # and stop before one's tail
        end -= 1
    if end - begin < int(megabytes * MB) * 0.9:
        sys.exit(f"bench_encode: {path} is too short for {start_mb + megabytes:g} MB; lower --mb or --peer-mb")
    return data[begin:end].decode("utf-8")


def cut_random_documents(text: str, rng: random.Random) -> list[str]:
    """`text` cut at line ends into documents of BATCH_DOC_CHARS characters (a random size each)."""
    documents, start = [], 0
    while start < len(text):
        end = text.find("\n", start + rng.randint(*BATCH_DOC_CHARS) - 1)
        end = len(text) if end < 0 else end + 1
        documents.append(text[start:end])
        start = end
    return documents


def _as_flat(result: Any) -> tuple[list[int], list[int]]:
    ids, offsets = result
    return np.asarray(ids).tolist(), np.asarray(offsets).tolist()


def _offsets_of(batches: Sequence[Sequence[int]]) -> list[int]:
    offsets = [0]
    for ids in batches:
        offsets.append(offsets[-1] + len(ids))
    return offsets


# What each measurement calls and how its output becomes ids to compare with tiktoken's.
PEER_KINDS = ("list", "numpy", "batch_list", "batch_numpy")


def _call(peer: Peer, kind: str) -> Callable[[Any, Any], Any] | None:
    return {"list": peer.encode_list, "numpy": peer.encode_numpy, "batch_list": peer.batch_list,
            "batch_numpy": peer.batch_numpy}[kind]


def _comparable(kind: str, output: Any) -> Any:
    if kind == "list":
        return list(output)
    if kind == "numpy":
        return np.asarray(output).tolist()
    if kind == "batch_list":
        return [list(ids) for ids in output]
    ids, offsets = _as_flat(output)
    return [ids[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


def check_peer(peer: Peer, kind: str, inputs: Sequence[Any], expected: Sequence[Any]) -> str:
    """"" when `peer`'s `kind` output equals tiktoken's on every input, else why not (first difference)."""
    call = _call(peer, kind)
    assert call is not None
    obj = peer.make()       # thrown away: timed runs use objects that have not seen these inputs
    for index, (item, reference) in enumerate(zip(inputs, expected)):
        try:
            actual = _comparable(kind, call(obj, item))
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:     # a Rust panic is a BaseException: report it as a refusal
            return f"refused input {index}: {type(error).__name__}: {str(error)[:120]}"
        if kind.startswith("batch"):
            if len(actual) != len(reference):
                return f"input {index}: {len(actual)} documents back for {len(reference)}"
            for document, (want, got) in enumerate(zip(reference, actual)):
                position = first_difference(want, got)
                if position is not None:
                    return f"inexact: input {index}, document {document}, first difference at token {position}"
        else:
            position = first_difference(reference, actual)
            if position is not None:
                return (f"inexact: input {index}, first difference at token {position} "
                        f"(lengths {len(reference)} vs {len(actual)})")
    return ""


def _primer(peer: Peer, kind: str) -> Callable[[Any, str], Any]:
    """How a `kind` run is primed: through the call that is then timed (a batch call on the priming text cut
    into documents). gigatoken's tiktoken wrapper (its list calls) and its `Tokenizer` (its numpy calls)
    keep caches of their own: primed through the wrapper, its numpy path was timed with a cold cache."""
    call = _call(peer, kind)
    assert call is not None
    if kind in ("list", "numpy"):
        return call
    return lambda obj, text: call(obj, cut_random_documents(text, random.Random(17)))


def time_fresh_runs(peer: Peer, kind: str, inputs: Sequence[Any], input_bytes: Sequence[int],
                    priming: str | None, primer: Callable[[Any, str], Any] | None = None) -> dict[str, float]:
    """Best MB/s over the inputs, each timed once with a fresh object (primed first when `priming`, by
    `primer`, by default `_primer`'s); also that run's CPU time / wall time, to show a library that used
    more than one core for one call, and the MB/s of every input in order (`per_slice`, for the same-slice
    ratios of table 12)."""
    call = _call(peer, kind)
    assert call is not None
    prime = primer or _primer(peer, kind)
    best_rate, cpu_share = 0.0, 0.0
    per_slice = []
    for item, size in zip(inputs, input_bytes):
        obj = peer.make()
        if priming is not None:
            prime(obj, priming)
        gc.collect()
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            cpu_start, start = time.process_time(), time.perf_counter()
            result = call(obj, item)
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        finally:
            if gc_was_enabled:
                gc.enable()
        del result
        rate = size / MB / elapsed
        per_slice.append(rate)
        if rate > best_rate:
            best_rate, cpu_share = rate, cpu / elapsed
    return {"mb_per_s": best_rate, "cpu_per_wall": cpu_share, "per_slice": per_slice}


def measure_peers_on(encoding: str, corpus: str, path: Path, peers: list[Peer], args: argparse.Namespace,
                     vocab_dir: Path) -> dict[str, Any]:
    """Check, then time, every peer on unseen slices of one corpus (layout in the section comment)."""
    print(f"[peers: {encoding} / {corpus}]", file=sys.stderr, flush=True)
    start = args.mb     # the sections above encoded the first --mb MB: this section starts after them
    priming_mb = getattr(args, "priming_mb", PRIMING_MB)
    # The special tokens' text left out of the priming, for every library alike: gigatoken refuses to encode
    # it as ordinary text, and a library that primed on nothing would be timed cold.
    priming = read_range(path, start, priming_mb)
    for special in bytebpe.get_encoding(encoding).special_tokens_set:
        priming = priming.replace(special, "")
    start += priming_mb
    slices = [read_range(path, start + r * args.peer_mb, args.peer_mb) for r in range(args.repeat)]
    start += args.repeat * args.peer_mb
    rng = random.Random(13)     # the same documents every run
    batches = [cut_random_documents(read_range(path, start + r * args.peer_mb, args.peer_mb), rng)
               for r in range(args.repeat)]
    slice_bytes = [len(text.encode("utf-8")) for text in slices]
    batch_bytes = [sum(len(doc.encode("utf-8")) for doc in docs) for docs in batches]
    reference = peers[1]        # tiktoken
    expected_single = [reference.encode_list(reference.make(), text) for text in slices]
    expected_batch = [[reference.encode_list(reference.make(), doc) for doc in docs] for docs in batches]
    result: dict[str, Any] = {
        "encoding": encoding, "corpus": corpus, "slice_bytes": slice_bytes, "batch_bytes": batch_bytes,
        "batch_docs": [len(docs) for docs in batches], "tokens": [len(ids) for ids in expected_single],
        "rates": {}, "excluded": {}, "isolation": args.isolation, "priming_mb": priming_mb}
    workload = PeerWorkload(slices, slice_bytes, batches, batch_bytes, priming, args.scaling_turns)
    for peer in peers:
        kinds = []
        for kind in PEER_KINDS:
            if _call(peer, kind) is None:
                continue
            single = kind in ("list", "numpy")
            inputs, expected = (slices, expected_single) if single else (batches, expected_batch)
            why = check_peer(peer, kind, inputs, expected)
            if why:
                if peer.name in ("bytebpe", "tiktoken"):
                    raise Mismatch(f"{encoding} / {corpus}: {peer.name} {kind}: {why}")
                result["excluded"][f"{peer.name} {kind}"] = why
                continue
            kinds.append(kind)
        if args.isolation == "process":
            timed = time_peer_in_fresh_process(peer.name, encoding, vocab_dir, kinds, workload)
        else:
            timed = time_peer(peer, kinds, workload)
        result["rates"].update(timed.pop("rates"))
        for key, value in timed.items():
            if key in ("first_call_seconds", "timing_pid"):
                result.setdefault(key, {})[peer.name] = value
            else:
                result[key] = value
    return result


@dataclass
class PeerWorkload:
    """What every library is timed on for one encoding and corpus (sent whole to a child process)."""

    slices: list[str]
    slice_bytes: list[int]
    batches: list[list[str]]
    batch_bytes: list[int]
    priming: str
    scaling_turns: int


def time_peer(peer: Peer, kinds: Sequence[str], work: PeerWorkload) -> dict[str, Any]:
    """Every timing of one library on `work`, for the output kinds that passed the check."""
    timed: dict[str, Any] = {"rates": {}, "timing_pid": os.getpid()}
    rates = timed["rates"]
    if peer.primed:     # a fresh object's first call: its one-time setup, which every fresh run times
        obj = peer.make()
        start_time = time.perf_counter()
        peer.encode_list(obj, "a")
        timed["first_call_seconds"] = time.perf_counter() - start_time
    for kind in kinds:
        single = kind in ("list", "numpy")
        inputs, sizes = (work.slices, work.slice_bytes) if single else (work.batches, work.batch_bytes)
        rates[f"{peer.name} {kind} fresh"] = time_fresh_runs(peer, kind, inputs, sizes, None)
        if peer.primed:
            rates[f"{peer.name} {kind} primed"] = time_fresh_runs(peer, kind, inputs, sizes, work.priming)
            if peer.name == "bytebpe" and kind == "list":
                info = peer.make()
                peer.encode_list(info, work.priming)
                before = info.piece_cache_info()
                peer.encode_list(info, work.slices[0])
                after = info.piece_cache_info()
                lookups = after.lookups - before.lookups
                timed["bytebpe_primed_hit_rate"] = (after.hits - before.hits) / lookups if lookups else None
    if peer.name == "bytebpe":     # the single-thread loops the 2-thread batches are compared with
        for kind, call in (("loop_list", peer.encode_list), ("loop_numpy", peer.encode_numpy)):
            loop_peer = Peer(peer.name, peer.version, peer.make,
                             lambda enc, docs, call=call: [call(enc, doc) for doc in docs])
            rates[f"bytebpe {kind} fresh"] = time_fresh_runs(loop_peer, "list", work.batches, work.batch_bytes,
                                                             None)
        timed["scaling"] = measure_scaling(peer, work.batches, work.batch_bytes, work.scaling_turns, work.priming)
    return timed


# Measured (2026-12-01, ad-hoc scripts over this file's own time_fresh_runs, cl100k, English slices at 6-8 MB,
# 2 MB of priming): bytebpe alone in a process ran 122-138 MB/s, and 100-118 MB/s in the same process after
# gigatoken or tiktoken had encoded text there; one library per process, bytebpe primed ran 118-143 MB/s and
# gigatoken primed 109-111. Whatever the cause (memory layout, allocator state), timing every library in a
# process where nothing else ran is the comparison that does not depend on the order of the peers.
def time_peer_in_fresh_process(name: str, encoding: str, vocab_dir: Path, kinds: Sequence[str],
                               work: PeerWorkload) -> dict[str, Any]:
    """time_peer in a new interpreter (spawned, not forked: a fork would inherit this process's state)."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as executor:
        return executor.submit(_time_peer_by_name, name, encoding, vocab_dir, list(kinds), work).result()


def _time_peer_by_name(name: str, encoding: str, vocab_dir: Path, kinds: list[str],
                       work: PeerWorkload) -> dict[str, Any]:
    builders: dict[str, Callable[[str, Path], Peer]] = {
        "bytebpe": _bytebpe_peer, "tiktoken": _tiktoken_peer, **PEER_BUILDERS}
    return time_peer(builders[name](encoding, vocab_dir), kinds, work)


def measure_scaling(peer: Peer, batches: Sequence[list[str]], batch_bytes: Sequence[int], turns: int,
                    priming: str | None = None) -> dict[str, float]:
    """bytebpe's 2-thread batch / its own single-thread loop over the same documents, list and numpy; with
    `priming`, also numpy with the cache primed on it first (`numpy_primed`).

    One pass over a 1 MB batch takes ~10 ms, and single passes on this shared machine varied by 1.5x, so
    the ratio is taken from `turns` turns per slice, loop and batch alternating, each run with a fresh
    object whose piece cache is emptied (so text seen in an earlier turn is new to it), best of each."""
    calls = {
        "loop_list": lambda enc, docs: [enc.encode_ordinary(doc) for doc in docs],
        "batch_list": peer.batch_list,
        "loop_numpy": lambda enc, docs: [enc.encode_to_numpy(doc, disallowed_special=()) for doc in docs],
        "batch_numpy": peer.batch_numpy,
    }
    runs = [(kind, None) for kind in calls] + ([("loop_numpy", priming), ("batch_numpy", priming)] if priming else [])
    best = dict.fromkeys(runs, 0.0)
    for docs, size in zip(batches, batch_bytes):
        for _ in range(turns):
            for kind, primer in runs:
                call = calls[kind]
                assert call is not None
                # (Timed as the "numpy" call of a peer; primed by bytebpe's list call: every call of an
                # encoding shares its table's piece cache.)
                single = Peer(peer.name, peer.version, peer.make, peer.encode_list, encode_numpy=call)
                best[kind, primer] = max(best[kind, primer],
                                         time_fresh_runs(single, "numpy", [docs], [size], primer,
                                                         peer.encode_list)["mb_per_s"])
    scaling = {"list": best["batch_list", None] / best["loop_list", None],
               "numpy": best["batch_numpy", None] / best["loop_numpy", None],
               "loop_list_mb_per_s": best["loop_list", None], "turns": turns}
    if priming:
        scaling["numpy_primed"] = best["batch_numpy", priming] / best["loop_numpy", priming]
    return scaling


def build_peers(encoding: str, names: Sequence[str], vocab_dir: Path, notes: list[str]) -> list[Peer]:
    """bytebpe and tiktoken, then each requested peer that can load `encoding` (a note for each that cannot)."""
    peers = [_bytebpe_peer(encoding, vocab_dir), _tiktoken_peer(encoding, vocab_dir)]
    for name in names:
        try:
            peer = PEER_BUILDERS[name](encoding, vocab_dir)
            peer.make()     # a distribution of that name with another API fails here, with a note, not mid-run
            peers.append(peer)
        except ImportError as error:
            notes.append(f"{name}: not installed ({error})")
        except Exception as error:
            notes.append(f"{name}: no {encoding} ({type(error).__name__}: {error})")
    return peers


def _cell(result: dict[str, Any], key: str, reference_key: str) -> str:
    """"ratio× (MB/s)" of one measurement against tiktoken's, "inexact"/"refused" or "—" when absent."""
    rate = result["rates"].get(key)
    if rate is None:
        name, kind, _ = key.split(" ")
        why = result["excluded"].get(f"{name} {kind}")
        return "" if why is None else ("inexact" if why.startswith("inexact") else "refused")
    reference = result["rates"][reference_key]["mb_per_s"]
    flag = "*" if rate["cpu_per_wall"] > 1.3 and "batch" not in key else ""
    return f"{rate['mb_per_s'] / reference:.2f}×{flag} ({rate['mb_per_s']:.1f})"


# The columns of the batch table: (library, output, fresh or primed).
BATCH_COLUMNS = (("bytebpe", "batch_list", "fresh"), ("bytebpe", "batch_list", "primed"),
                 ("bytebpe", "batch_numpy", "fresh"), ("bytebpe", "batch_numpy", "primed"),
                 ("gigatoken", "batch_list", "fresh"), ("gigatoken", "batch_list", "primed"),
                 ("gigatoken", "batch_numpy", "fresh"), ("gigatoken", "batch_numpy", "primed"),
                 ("quicktok", "batch_numpy", "fresh"), ("tokie", "batch_list", "fresh"),
                 ("bpe-openai", "batch_list", "fresh"))


def print_peer_tables(results: list[dict[str, Any]], peer_notes: dict[str, str], notes: list[str]) -> None:
    single_columns = [("bytebpe", "fresh"), ("bytebpe", "primed"), ("gigatoken", "fresh"), ("gigatoken", "primed"),
                      ("quicktok", "fresh"), ("tokie", "fresh"), ("bpe-openai", "fresh")]
    present = {key.rsplit(" ", 2)[0] for r in results for key in r["rates"]} | \
              {key.split(" ")[0] for r in results for key in r["excluded"]}

    def table(kind: str, columns: list[tuple[str, str]], reference: str, title: str, note: str) -> None:
        columns = [(name, variant) for name, variant in columns if name in present]
        rows = []
        for r in results:
            rows.append([r["encoding"], r["corpus"], fmt(r["rates"][reference]["mb_per_s"]),
                         *[_cell(r, f"{name} {kind} {variant}", reference) for name, variant in columns]])
        print_table(title, ["encoding", "corpus", "tiktoken MB/s",
                            *[f"{name} {variant}" for name, variant in columns]], rows, note=note)

    priming_mb = results[0]["priming_mb"] if results else PRIMING_MB
    print(f"\n# Peers on text the process has not seen ({priming_mb:g} MB priming, "
          f"{results[0]['slice_bytes'][0] / MB:.2f} MB slices)" if results else "")
    if results:
        print("\nEvery library's timings ran in " + (
            "a fresh process of its own (spawned; ids checked in this one)." if results[0]["isolation"] == "process"
            else "this one process, one library after another (`--isolation none`)."))
    table("list", single_columns, "tiktoken list fresh",
          "9. One thread, list output, unseen text: × tiktoken `encode_ordinary` (MB/s)",
          "Each run: a fresh object and a slice nothing in the process has encoded; best of the slices. "
          f"primed = that fresh object first encoded {priming_mb:g} MB of other text from the same file, "
          "through the call then timed. "
          "* = the call used more than 1.3 CPUs (CPU time / wall time).")
    table("numpy", [("bytebpe", "fresh"), ("bytebpe", "primed"), ("gigatoken", "fresh"), ("gigatoken", "primed"),
                    ("quicktok", "fresh"), ("tiktoken", "fresh")], "tiktoken list fresh",
          "10. One thread, numpy output, unseen text: × tiktoken `encode_ordinary` (list) (MB/s)",
          "bytebpe `encode_to_numpy`, gigatoken `Tokenizer.encode`, quicktok `encode_batch([text], 1)`, "
          "tiktoken `encode_to_numpy`.")
    rows = []
    for r in results:
        rates = r["rates"]
        scaling = r["scaling"]
        row = [r["encoding"], r["corpus"], f"{sum(r['batch_docs']) // len(r['batch_docs']):,}",
               fmt(rates["tiktoken batch_list fresh"]["mb_per_s"]), fmt(scaling["loop_list_mb_per_s"]),
               f"{scaling['list']:.2f}×", f"{scaling['numpy']:.2f}×",
               f"{scaling['numpy_primed']:.2f}×" if "numpy_primed" in scaling else ""]
        for name, kind, variant in BATCH_COLUMNS:
            if name in present:
                row.append(_cell(r, f"{name} {kind} {variant}", "tiktoken batch_list fresh"))
        rows.append(row)
    batch_header = [f"{name} {kind.replace('batch_', '')} {variant}" for name, kind, variant in BATCH_COLUMNS
                    if name in present]
    print_table(f"11. {BATCH_THREADS}-thread batch, {BATCH_DOC_CHARS[0]}–{BATCH_DOC_CHARS[1]}-character documents: "
                f"× tiktoken `encode_ordinary_batch(num_threads={BATCH_THREADS})` (MB/s)",
                ["encoding", "corpus", "docs/run", "tiktoken batch MB/s", "bytebpe 1-thread loop MB/s",
                 "bytebpe list batch / loop", "bytebpe numpy batch / numpy loop",
                 "bytebpe numpy batch / numpy loop, primed", *batch_header], rows,
                note="The scaling columns divide bytebpe's 2-thread batch by its own single-thread loop of "
                     "`encode_ordinary` (list) or `encode_to_numpy` (numpy) over the same documents: best of "
                     f"{results[0]['scaling']['turns'] if results else 0} turns per slice, loop and batch taking "
                     "turns, each with a fresh object (piece cache emptied; primed: then primed as in table 9).")
    print_same_slice_ratios(results, present)
    for r in results:
        if r.get("bytebpe_primed_hit_rate") is not None:
            notes.append(f"bytebpe piece cache hit rate on an unseen slice after {r['priming_mb']:g} MB priming, "
                         f"{r['encoding']} / {r['corpus']}: {100 * r['bytebpe_primed_hit_rate']:.1f}%")
        for name, seconds in r.get("first_call_seconds", {}).items():
            if seconds < 1e-3:
                continue    # nothing to say
            notes.append(f"{name}: a fresh object's first `encode_ordinary(\"a\")` takes {seconds * 1e3:,.1f} ms "
                         f"({r['encoding']} / {r['corpus']}; one-time setup, timed in every fresh run)")
        for what, why in r["excluded"].items():
            notes.append(f"{what} not timed on {r['encoding']} / {r['corpus']}: {why}")
    print("\nPeers: " + "; ".join(f"**{name}** — {note}" for name, note in peer_notes.items()))


# Table 12's columns: (output kind, fresh or primed).
SAME_SLICE_COLUMNS = (("numpy", "primed"), ("list", "primed"), ("batch_numpy", "primed"), ("batch_list", "primed"),
                      ("numpy", "fresh"), ("list", "fresh"), ("batch_numpy", "fresh"), ("batch_list", "fresh"))


def same_slice_ratio(r: dict[str, Any], peer: str, kind: str, variant: str) -> str:
    """bytebpe's MB/s ÷ the peer's on each slice both timed: "median (lowest–highest)", or "" when absent."""
    ratios = slice_ratios(r, f"bytebpe {kind} {variant}", f"{peer} {kind} {variant}")
    if not ratios:
        return ""
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})"


def print_same_slice_ratios(results: list[dict[str, Any]], present: set[str]) -> None:
    """Table 12: the tables above give each library its best slice, which on a corpus of many languages
    can be a different language for each; here each slice's two rates are divided, then the median taken."""
    for peer in ("gigatoken", "quicktok"):
        if peer not in present:
            continue
        rows = [[r["encoding"], r["corpus"], *[same_slice_ratio(r, peer, kind, variant)
                                               for kind, variant in SAME_SLICE_COLUMNS]] for r in results]
        if not any(cell for row in rows for cell in row[2:]):
            continue
        print_table(f"12. bytebpe ÷ {peer} on the same slice: median (lowest–highest) over the slices",
                    ["encoding", "corpus", *[f"{kind.replace('_', ' ')} {variant}"
                                             for kind, variant in SAME_SLICE_COLUMNS]], rows,
                    note="Each slice (batch) is timed once per library as in tables 9-11, and the two rates on it "
                         "divided: > 1, bytebpe faster on that text. The median is over the slices; the tables "
                         "above take each library's best slice, which on the multilingual corpus can be a "
                         "different language for each library.")


def run_peers(args: argparse.Namespace, vocab_dir: Path, corpus_dir: Path) -> list[dict[str, Any]]:
    notes: list[str] = []
    peer_notes: dict[str, str] = {}
    results = []
    for encoding in args.encodings:
        peers = build_peers(encoding, args.peers, vocab_dir, notes)
        for peer in peers:
            peer_notes.setdefault(f"{peer.name} {peer.version}", peer.note)
        for corpus in args.corpora:
            results.append(measure_peers_on(encoding, corpus, corpus_dir / corpus, peers, args, vocab_dir))
    print_peer_tables(results, peer_notes, notes)
    print("")
    for note in dict.fromkeys(notes):
        print(f"- {note}")
    return results


# ==== main ========================================================================================


def measure_corpus(encoding: str, corpus: str, text: str, libs: dict[str, Any], hf_gpt2: Any,
                   args: argparse.Namespace, notes: list[str]) -> dict[str, Any]:
    """Check, then time, one encoding on one corpus sample. HF joins only for gpt2 and only when exact."""
    print(f"[measuring {encoding} / {corpus}]", file=sys.stderr, flush=True)
    docs = split_into_documents(text, args.doc_bytes)
    short_docs = split_into_documents(text, SHORT_DOC_CHARS)
    references = check_sample(encoding, corpus, libs, text, docs, short_docs)
    timed_libs = dict(libs)
    if encoding == "gpt2" and hf_gpt2 is not None:
        reason = huggingface_agrees(hf_gpt2, references, text, docs, short_docs, libs["tiktoken"].decode)
        if reason:
            notes.append(f"HF tokenizers excluded for gpt2 / {corpus}: its ids differ from tiktoken's.\n{reason}")
        else:
            timed_libs["huggingface"] = hf_gpt2
    return {
        "encoding": encoding, "corpus": corpus, "bytes": len(text.encode("utf-8")), "chars": len(text),
        "tokens": len(references["sample"]), "docs": len(docs), "short_docs": len(short_docs),
        "seconds": measure_sample(timed_libs, text, docs, short_docs, args.repeat),
        "stage_seconds": measure_stages(libs["bytebpe"], text, args.repeat),
    }


def run(args: argparse.Namespace, vocab_dir: Path) -> dict[str, Any]:
    """Everything after the offline tiktoken cache is in place; returns the raw numbers."""
    import tiktoken  # only now: TIKTOKEN_CACHE_DIR is set

    corpus_dir = corpus_dir_for(args, vocab_dir)
    versions = {"bytebpe": bytebpe.__version__, "tiktoken": _version("tiktoken"),
                "tokenizers": _version("tokenizers")}
    hf_gpt2, hf_missing = huggingface_gpt2(vocab_dir) if "gpt2" in args.encodings else (None, "")
    notes = [f"HF tokenizers excluded: {hf_missing}"] if hf_missing else []
    versions.update({name: _version(PEER_DISTRIBUTIONS[name]) for name in args.peers})
    print_header(args, versions, corpus_dir)
    if args.sections == "peers":
        peers = run_peers(args, vocab_dir, corpus_dir)
        return {"versions": versions, "args": {k: str(v) for k, v in vars(args).items()}, "peers": peers}

    samples = {name: read_sample(corpus_dir / name, args.mb) for name in args.corpora}
    results = []
    for encoding in args.encodings:
        libs = {"bytebpe": bytebpe.get_encoding(encoding), "tiktoken": tiktoken.get_encoding(encoding)}
        for corpus, text in samples.items():
            results.append(measure_corpus(encoding, corpus, text, libs, hf_gpt2, args, notes))
    print_tables(results)
    for note in notes:
        print(f"\nNote: {note}")

    worst = []
    if args.worst:
        print("[measuring worst cases]", file=sys.stderr, flush=True)
        worst = measure_worst_cases(bytebpe.get_encoding(WORST_CASE_ENCODING),
                                    tiktoken.get_encoding(WORST_CASE_ENCODING))
        print_worst_cases(worst)
    print("[measuring load times]", file=sys.stderr, flush=True)
    loads = measure_load_times(args.encodings)
    print_load_times(loads)
    print("[measuring resident memory]", file=sys.stderr, flush=True)
    memory = measure_resident_memory(args.encodings)
    print_resident_memory(memory)
    peers = run_peers(args, vocab_dir, corpus_dir)
    return {"versions": versions, "args": {k: str(v) for k, v in vars(args).items()}, "results": results,
            "worst_cases": worst, "load_times": loads, "resident_memory": memory, "notes": notes,
            "peers": peers}


def _version(module_name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(module_name)
    except metadata.PackageNotFoundError:
        return "not installed"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-tiktoken-cache-") as cache_dir, \
                tempfile.TemporaryDirectory(prefix="bench-vocabularies-") as fresh_clone_dir:
            vocab_dir = vocab_dir_from_env(Path(fresh_clone_dir))
            link_offline_tiktoken_cache(vocab_dir, Path(cache_dir))
            raw = run(args, vocab_dir)
    except Mismatch as mismatch:
        print(f"\nbench_encode: MISMATCH, benchmark aborted (numbers printed so far are for checked cases):\n"
              f"{mismatch}",
              file=sys.stderr)
        return 1
    raw["total_seconds"] = time.perf_counter() - started
    print(f"\n(whole run: {raw['total_seconds']:.0f} s; load average at end: {load_average()})")
    if args.json:
        args.json.write_text(json.dumps(raw, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
