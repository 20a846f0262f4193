#!/usr/bin/env python
"""Encode throughput of bytebpe next to stock tiktoken (and HuggingFace `tokenizers` for gpt2), same run.

Every comparison is checked for identical ids before anything is timed; any difference aborts with a
non-zero exit and the first differing position. Tables are Markdown, ready to paste into the README.

    BYTEBPE_DATA_DIR=../shared/vocab python benchmarks/bench_encode.py            # full run, < 5 min
    BYTEBPE_DATA_DIR=../shared/vocab python benchmarks/bench_encode.py --quick    # smoke test

Units: MB = 10**6 bytes of UTF-8 input; times are the best of N wall-clock runs (time.perf_counter).
A ratio is bytebpe throughput / other throughput, so above 1 means bytebpe is faster.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import hashlib
import json
import os
import platform
import random
import string
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import bytebpe
from bytebpe.registry import ENCODING_SPECS

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
    args = parser.parse_args(argv)
    if args.quick:
        # --quick only changes the defaults: flags given explicitly next to it still win.
        parser.set_defaults(mb=1.0, repeat=1, encodings=["cl100k_base"])
        args = parser.parse_args(argv)
    if args.repeat < 1 or args.mb <= 0 or args.doc_bytes < 1:
        parser.error("--repeat, --mb and --doc-bytes must be positive")
    return args


def vocab_dir_from_env() -> Path:
    """The first BYTEBPE_DATA_DIR entry that holds the vocabularies (bytebpe reads the same variable)."""
    raw = os.environ.get("BYTEBPE_DATA_DIR", "")
    for entry in raw.split(os.pathsep):
        if entry and (Path(entry) / "cl100k_base.tiktoken").is_file():
            return Path(entry)
    sys.exit(f"bench_encode: BYTEBPE_DATA_DIR={raw!r} holds no cl100k_base.tiktoken; point it at the vocabularies")


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
    require_identical(f"{label}: bytebpe.encode_to_numpy", expected, ours.encode_to_numpy(text).tolist(),
                      theirs.decode)
    require_identical(f"{label}: tiktoken.encode_to_numpy", expected, theirs.encode_to_numpy(text).tolist(),
                      theirs.decode)
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
        "numpy": lambda: enc.encode_to_numpy(text),
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
    require_identical("compiled vs regex engine", regex_engine.encode_ordinary(text), ours.encode_ordinary(text),
                      ours.decode)
    return {
        "scan": best_seconds(lambda: scanner.count(text), repeat),
        "regex_findall": best_seconds(lambda: regex_engine._pattern.findall(text, concurrent=False), repeat),
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

    from bytebpe import encoding as bytebpe_encoding
    from bytebpe import registry as bytebpe_registry

    def clear_bytebpe() -> None:
        if hasattr(bytebpe_registry, "_clear_caches"):
            bytebpe_registry._clear_caches()
        # The compiled split pattern is cached apart from the registry; tiktoken compiles its pattern on
        # every load, so clear ours too to compare like with like.
        if hasattr(bytebpe_encoding, "_compile_pattern") and hasattr(bytebpe_encoding._compile_pattern,
                                                                       "cache_clear"):
            bytebpe_encoding._compile_pattern.cache_clear()
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
    print_table("2. One text to a uint32 array: `encode_to_numpy(text)`",
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

    corpus_dir = args.corpus_dir or vocab_dir.parent / "corpus"
    versions = {"bytebpe": bytebpe.__version__, "tiktoken": _version("tiktoken"),
                "tokenizers": _version("tokenizers")}
    hf_gpt2, hf_missing = huggingface_gpt2(vocab_dir) if "gpt2" in args.encodings else (None, "")
    notes = [f"HF tokenizers excluded: {hf_missing}"] if hf_missing else []
    print_header(args, versions, corpus_dir)

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
    return {"versions": versions, "args": {k: str(v) for k, v in vars(args).items()}, "results": results,
            "worst_cases": worst, "load_times": loads, "resident_memory": memory, "notes": notes}


def _version(module_name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(module_name)
    except metadata.PackageNotFoundError:
        return "not installed"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    vocab_dir = vocab_dir_from_env()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-tiktoken-cache-") as cache_dir:
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
