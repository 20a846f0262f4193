"""encode_files: every document's ids equal tiktoken's, in input order, for every input format and worker
count; bad input is reported by file and line (or skipped and counted); a failed or interrupted run leaves
no output file."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import bytebpe
from bytebpe import BadDocumentError, datasets
from bytebpe.tokens import arrays
from bytebpe.registry import UnknownEncodingError

from .test_cli import texts_of

CORPORA = ["docs_english.jsonl", "docs_code.jsonl", "docs_multilingual.jsonl"]
# Small batches, so that the test corpora make many batches and some batches span two files.
SMALL_BATCH = 1 << 20


def read_jsonl(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as file:
        return [json.loads(line)["text"] for line in file if line.strip()]


@pytest.fixture(scope="module")
def corpus_texts(corpus_dir) -> dict[str, list[str]]:
    return {name: read_jsonl(corpus_dir / name) for name in CORPORA}


@pytest.fixture(scope="module")
def cl100k_reference(tiktoken_encoding, corpus_texts) -> list[list[int]]:
    """tiktoken's ids of every document of the three corpora, in order."""
    reference = tiktoken_encoding("cl100k_base")
    return [reference.encode_ordinary(text) for name in CORPORA for text in corpus_texts[name]]


def load_output(prefix: Path, format: str = "npy") -> tuple[np.ndarray, np.ndarray]:
    paths = datasets.output_paths(prefix, format)
    offsets = np.load(paths.offsets, mmap_mode="r")
    if format == "npy":
        return np.load(paths.tokens, mmap_mode="r"), offsets
    return np.memmap(paths.tokens, dtype=np.uint32, mode="r"), offsets


def assert_documents_equal(tokens: np.ndarray, offsets: np.ndarray, expected: list[list[int]]) -> None:
    assert offsets.dtype == np.int64
    assert len(offsets) == len(expected) + 1 and offsets[0] == 0 and offsets[-1] == len(tokens)
    for i, ids in enumerate(expected):
        got = tokens[offsets[i]:offsets[i + 1]].tolist()
        assert got == ids, f"document {i} differs from tiktoken"


def gzip_copy(source: Path, target: Path) -> Path:
    with open(source, "rb") as src, gzip.open(target, "wb", compresslevel=1) as dst:
        dst.write(src.read())
    return target


def parquet_copy(texts: list[str], target: Path) -> Path:
    import pyarrow as pa     # in the `test` extra: a missing pyarrow fails here, it is never skipped
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": list(range(len(texts))), "text": texts}), target, row_group_size=200)
    return target


def no_files_but(folder: Path, *names: str) -> None:
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)


# ==== exactness on the real corpora ================================================================


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("variant", ["jsonl", "jsonl.gz", "parquet"])
def test_every_document_of_the_corpora_has_tiktokens_ids_in_input_order(
        tmp_path, corpus_dir, corpus_texts, cl100k_reference, variant, workers):
    if variant == "jsonl":
        inputs = [corpus_dir / name for name in CORPORA]
    elif variant == "jsonl.gz":
        inputs = [gzip_copy(corpus_dir / name, tmp_path / f"{name}.gz") for name in CORPORA]
    else:
        inputs = [parquet_copy(corpus_texts[name], tmp_path / f"{name}.parquet") for name in CORPORA]
    summary = bytebpe.encode_files(inputs, encoding="cl100k_base", output=tmp_path / "out" / "train",
                                   workers=workers, batch_bytes=SMALL_BATCH)
    tokens, offsets = load_output(tmp_path / "out" / "train")
    assert tokens.dtype == np.uint32
    assert_documents_equal(tokens, offsets, cl100k_reference)
    assert summary.documents == len(cl100k_reference) and summary.tokens == len(tokens)
    all_texts = [text for name in CORPORA for text in corpus_texts[name]]
    assert summary.bytes == sum(len(text.encode("utf-8")) for text in all_texts)
    assert [s.documents for s in summary.files] == [len(corpus_texts[name]) for name in CORPORA]
    assert summary.outputs == list(datasets.output_paths(tmp_path / "out" / "train"))
    no_files_but(tmp_path / "out", "train.tokens.npy", "train.offsets.npy", "train.meta.json")


def test_a_vocabulary_below_65536_ids_gives_uint16_with_tiktokens_ids(tmp_path, corpus_dir, corpus_texts,
                                                                      tiktoken_encoding):
    reference = tiktoken_encoding("gpt2")
    bytebpe.encode_files(corpus_dir / "docs_code.jsonl", encoding="gpt2", output=tmp_path / "code", workers=2)
    tokens, offsets = load_output(tmp_path / "code")
    assert tokens.dtype == np.uint16
    assert_documents_equal(tokens, offsets, [reference.encode_ordinary(t) for t in corpus_texts["docs_code.jsonl"]])


def test_eot_ends_every_document_inside_its_span_and_bin_is_nanogpts_raw_format(
        tmp_path, corpus_dir, corpus_texts, cl100k_reference):
    summary = bytebpe.encode_files([corpus_dir / name for name in CORPORA], encoding="cl100k_base",
                                   output=tmp_path / "train", eot=True, format="bin", batch_bytes=SMALL_BATCH)
    no_files_but(tmp_path, "train.bin", "train.offsets.npy", "train.meta.json")
    tokens, offsets = load_output(tmp_path / "train", "bin")
    assert_documents_equal(tokens, offsets, [ids + [100257] for ids in cl100k_reference])
    assert summary.tokens == sum(map(len, cl100k_reference)) + len(cl100k_reference)


def test_special_token_text_in_a_document_is_ordinary_text(tmp_path, tiktoken_encoding):
    text = "a <|endoftext|> b <|fim_prefix|>"
    (tmp_path / "d.jsonl").write_text(json.dumps({"text": text}) + "\n")
    bytebpe.encode_files(tmp_path / "d.jsonl", encoding="cl100k_base", output=tmp_path / "o", eot=True)
    tokens, _ = load_output(tmp_path / "o")
    assert tokens.tolist() == tiktoken_encoding("cl100k_base").encode_ordinary(text) + [100257]


def test_surrogates_escaped_in_json_are_repaired_as_tiktoken_repairs_them(tmp_path, tiktoken_encoding):
    # JSON may escape a valid pair (one character) or a lone surrogate (not encodable as UTF-8).
    (tmp_path / "d.jsonl").write_text('{"text": "smile \\ud83d\\ude00 lone \\ud800 end"}\n')
    summary = bytebpe.encode_files(tmp_path / "d.jsonl", encoding="cl100k_base", output=tmp_path / "o")
    text = json.loads((tmp_path / "d.jsonl").read_text())["text"]
    assert "\ud800" in text
    assert load_output(tmp_path / "o")[0].tolist() == tiktoken_encoding("cl100k_base").encode_ordinary(text)
    assert summary.documents == 1


def test_inputs_without_documents_give_empty_arrays_that_load(tmp_path):
    (tmp_path / "empty.jsonl").write_bytes(b"")
    summary = bytebpe.encode_files(tmp_path / "empty.jsonl", encoding="gpt2", output=tmp_path / "o")
    tokens, offsets = load_output(tmp_path / "o")
    assert (tokens.shape, tokens.dtype, offsets.tolist()) == ((0,), np.uint16, [0])
    assert (summary.documents, summary.tokens, summary.bytes_per_token) == (0, 0, 0.0)


# ==== input formats ================================================================================


def test_txt_is_one_document_and_with_lines_one_per_line_keeping_empty_lines(tmp_path, tiktoken_encoding):
    reference = tiktoken_encoding("cl100k_base")
    content = "first line\r\nsecond  line\n\nlast line without newline"
    (tmp_path / "a.txt").write_bytes(content.encode())
    bytebpe.encode_files(tmp_path / "a.txt", encoding="cl100k_base", output=tmp_path / "whole")
    assert_documents_equal(*load_output(tmp_path / "whole"), [reference.encode_ordinary(content)])
    summary = bytebpe.encode_files(tmp_path / "a.txt", encoding="cl100k_base", output=tmp_path / "lines",
                                   lines=True)
    lines = ["first line", "second  line", "", "last line without newline"]
    assert_documents_equal(*load_output(tmp_path / "lines"), [reference.encode_ordinary(t) for t in lines])
    assert summary.documents == 4


def test_a_folder_is_its_input_files_sorted_by_path_recursively(tmp_path, tiktoken_encoding):
    reference = tiktoken_encoding("cl100k_base")
    data = tmp_path / "data"
    (data / "b").mkdir(parents=True)
    (data / "a").mkdir()
    (data / "b" / "2.txt").write_text("doc from b/2.txt")
    with gzip.open(data / "a" / "z.jsonl.gz", "wt") as file:
        file.write(json.dumps({"body": "doc one of a/z"}) + "\n" + json.dumps({"body": "doc two of a/z"}) + "\n")
    (data / "c.txt").write_text("doc from c.txt")
    (data / "table.csv").write_text("not an input")
    (data / "README.md").write_text("notes beside the data: passed over, and reported")
    (data / "a" / "z.jsonl.gz").rename(data / "a" / "z.JSONL.gz")     # suffixes are case-insensitive
    # A file of another kind is an error naming it, before any work, unless ignore_unknown.
    with pytest.raises(ValueError, match="1 file.* of unknown format .*table.csv.*--ignore-unknown"):
        bytebpe.encode_files(data, encoding="cl100k_base", output=tmp_path / "o", field="body")
    no_files_but(tmp_path, "data")
    with pytest.raises(BadDocumentError, match="no field 'text'"):
        bytebpe.encode_files(data, encoding="cl100k_base", output=tmp_path / "o", ignore_unknown=True)
    # The .txt files ignore --field; the JSONL file needs it.
    summary = bytebpe.encode_files(data, encoding="cl100k_base", output=tmp_path / "o", field="body",
                                   ignore_unknown=True)
    assert summary.ignored == [data / "table.csv", data / "README.md"]
    assert "ignored 2 files that are not inputs" in summary.describe()
    expected = ["doc one of a/z", "doc two of a/z", "doc from b/2.txt", "doc from c.txt"]
    assert_documents_equal(*load_output(tmp_path / "o"), [reference.encode_ordinary(t) for t in expected])
    assert [s.path.name for s in summary.files] == ["z.JSONL.gz", "2.txt", "c.txt"]


def test_blank_jsonl_lines_are_not_documents(tmp_path):
    (tmp_path / "d.jsonl").write_text('{"text": "a"}\n\n   \n{"text": "b"}\n')
    summary = bytebpe.encode_files(tmp_path / "d.jsonl", encoding="cl100k_base", output=tmp_path / "o")
    assert summary.documents == 2 and summary.skipped == 0


def test_an_empty_document_has_an_empty_span(tmp_path):
    (tmp_path / "d.jsonl").write_text('{"text": ""}\n{"text": "hi"}\n{"text": ""}\n')
    bytebpe.encode_files(tmp_path / "d.jsonl", encoding="cl100k_base", output=tmp_path / "o", eot=True)
    tokens, offsets = load_output(tmp_path / "o")
    assert offsets.tolist() == [0, 1, 3, 4] and tokens.tolist() == [100257, 6151, 100257, 100257]


# ==== bad input ====================================================================================

BAD_LINES = [
    (b'{"text": "ok"\n', "not valid JSON"),
    (b'{"other": "x"}\n', "no field 'text'"),
    (b'{"text": 42}\n', "field 'text' is int, not a string"),
    (b'{"text": null}\n', "field 'text' is NoneType, not a string"),
    (b'["text"]\n', "expected a JSON object, got list"),
    (b'{"text": "caf\xe9"}\n', "invalid UTF-8"),
]


@pytest.mark.parametrize(("bad_line", "reason"), BAD_LINES)
def test_a_bad_jsonl_line_is_an_error_naming_file_and_line_and_no_output_remains(tmp_path, bad_line, reason):
    path = tmp_path / "in" / "d.jsonl"
    path.parent.mkdir()
    path.write_bytes(b'{"text": "good"}\n' * 3 + bad_line + b'{"text": "good"}\n')
    (tmp_path / "out").mkdir()
    with pytest.raises(BadDocumentError, match="in/d.jsonl:4: " + reason) as raised:
        bytebpe.encode_files(path, encoding="cl100k_base", output=tmp_path / "out" / "o")
    assert (raised.value.line, raised.value.path) == (4, str(path))
    no_files_but(tmp_path / "out")


def test_skip_bad_skips_and_counts_every_bad_document_and_keeps_the_good_ones(tmp_path, tiktoken_encoding):
    reference = tiktoken_encoding("cl100k_base")
    lines, good = [], []
    for i, (bad_line, _) in enumerate(BAD_LINES):
        good.append(f"good document {i}")
        lines.append(json.dumps({"text": good[-1]}).encode() + b"\n")
        lines.append(bad_line)
    (tmp_path / "d.jsonl").write_bytes(b"".join(lines))
    summary = bytebpe.encode_files(tmp_path / "d.jsonl", encoding="cl100k_base", output=tmp_path / "o",
                                   skip_bad=True)
    assert summary.skipped == len(BAD_LINES) == summary.files[0].skipped
    assert [example.split(": ")[0] for example in summary.skipped_examples] == [
        f"{tmp_path / 'd.jsonl'}:{2 * i + 2}" for i in range(len(BAD_LINES))]
    assert "skipped 6 bad documents" in summary.describe()
    assert_documents_equal(*load_output(tmp_path / "o"), [reference.encode_ordinary(t) for t in good])


def test_invalid_utf8_in_a_txt_file_names_the_line_it_is_on(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"line one\nline two\nline \xff three\n")
    with pytest.raises(BadDocumentError, match=r"a\.txt:3: invalid UTF-8 \(byte 0xff\)"):
        bytebpe.encode_files(tmp_path / "a.txt", encoding="cl100k_base", output=tmp_path / "o")
    no_files_but(tmp_path, "a.txt")


def test_a_parquet_null_is_a_bad_row_and_a_missing_column_an_error(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": ["a", None, "c"]}), tmp_path / "d.parquet")
    with pytest.raises(BadDocumentError, match="d.parquet: row 2: column 'text' is null"):
        bytebpe.encode_files(tmp_path / "d.parquet", encoding="cl100k_base", output=tmp_path / "o")
    summary = bytebpe.encode_files(tmp_path / "d.parquet", encoding="cl100k_base", output=tmp_path / "o",
                                   skip_bad=True)
    assert (summary.documents, summary.skipped) == (2, 1)
    with pytest.raises(BadDocumentError, match="no column 'body'"):
        bytebpe.encode_files(tmp_path / "d.parquet", encoding="cl100k_base", output=tmp_path / "p", field="body")


def test_a_truncated_gzip_file_is_an_error_naming_the_file(tmp_path, corpus_dir):
    whole = gzip_copy(corpus_dir / "docs_code.jsonl", tmp_path / "whole.jsonl.gz").read_bytes()
    (tmp_path / "cut.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(BadDocumentError, match="cut.jsonl.gz: cannot read the file after line"):
        bytebpe.encode_files(tmp_path / "cut.jsonl.gz", encoding="cl100k_base", output=tmp_path / "out" / "o",
                             skip_bad=True)
    no_files_but(tmp_path / "out")


def test_a_missing_input_or_unknown_encoding_fails_before_any_output_is_created(tmp_path):
    (tmp_path / "ok.jsonl").write_text('{"text": "a"}\n')
    out = tmp_path / "out"
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        bytebpe.encode_files([tmp_path / "ok.jsonl", tmp_path / "missing.jsonl"], encoding="cl100k_base",
                             output=out / "o")
    with pytest.raises(UnknownEncodingError, match="no_such_encoding"):
        bytebpe.encode_files(tmp_path / "ok.jsonl", encoding="no_such_encoding", output=out / "o")
    (tmp_path / "notes.csv").write_text("a,b\n")
    with pytest.raises(ValueError, match="unknown input format"):
        bytebpe.encode_files(tmp_path / "notes.csv", encoding="cl100k_base", output=out / "o")
    assert not out.exists()


def test_eot_with_an_encoding_that_has_none_fails_before_work(tmp_path):
    enc = bytebpe.Encoding("bytes_only", pat_str=r"\S+|\s+",
                           mergeable_ranks={bytes([b]): b for b in range(256)}, special_tokens={})
    (tmp_path / "ok.jsonl").write_text('{"text": "ab"}\n')
    with pytest.raises(ValueError, match="has none of the usual eot tokens .*name one .*it has none"):
        bytebpe.encode_files(tmp_path / "ok.jsonl", encoding=enc, output=tmp_path / "o", eot=True)
    assert not (tmp_path / "o.tokens.npy").exists()
    # Without eot, any Encoding object works, and a 256-id vocabulary is uint16.
    bytebpe.encode_files(tmp_path / "ok.jsonl", encoding=enc, output=tmp_path / "o")
    assert load_output(tmp_path / "o")[0].tolist() == [97, 98]
    assert load_output(tmp_path / "o")[0].dtype == np.uint16


def sentencepiece_style(specials: dict[str, int]) -> bytebpe.Encoding:
    """Byte tokens only, and the given special tokens (as Mistral's or Llama's files name them)."""
    return bytebpe.Encoding("sp_style", pat_str=r"\S+|\s+", mergeable_ranks={bytes([b]): b for b in range(256)},
                            special_tokens=specials)


@pytest.mark.parametrize("specials, eot, bos", [
    ({"<s>": 256, "</s>": 257}, 257, 256),                                         # Mistral, SentencePiece
    ({"<|begin_of_text|>": 256, "<|end_of_text|>": 257, "<|eot_id|>": 258}, 257, 256),     # Llama 3
    ({"<|endoftext|>": 256, "<|im_end|>": 257}, 256, None),                        # Qwen
    ({"<｜begin▁of▁sentence｜>": 256, "<｜end▁of▁sentence｜>": 257}, 257, 256),   # DeepSeek
])
def test_eot_and_bos_take_the_models_own_document_tokens(tmp_path, specials, eot, bos):
    (tmp_path / "in.jsonl").write_text('{"text": "ab"}\n{"text": ""}\n{"text": "c"}\n')
    enc = sentencepiece_style(specials)
    bytebpe.encode_files(tmp_path / "in.jsonl", encoding=enc, output=tmp_path / "e", eot=True)
    tokens, offsets = load_output(tmp_path / "e")
    assert tokens.tolist() == [97, 98, eot, eot, 99, eot] and offsets.tolist() == [0, 3, 4, 6]
    if bos is None:
        with pytest.raises(ValueError, match="none of the usual bos tokens"):
            bytebpe.encode_files(tmp_path / "in.jsonl", encoding=enc, output=tmp_path / "b", bos=True)
        return
    summary = bytebpe.encode_files(tmp_path / "in.jsonl", encoding=enc, output=tmp_path / "b", bos=True, eot=True)
    tokens, offsets = load_output(tmp_path / "b")
    assert tokens.tolist() == [bos, 97, 98, eot, bos, eot, bos, 99, eot] and offsets.tolist() == [0, 4, 6, 9]
    meta = bytebpe.load_token_files(tmp_path / "b").meta
    assert meta.eot_token == eot and meta.extra["bos_token"] == bos and summary.tokens == 9


def test_eot_and_bos_named_by_text_or_id_and_refused_clearly(tmp_path):
    (tmp_path / "in.jsonl").write_text('{"text": "ab"}\n')
    enc = bytebpe.get_encoding("cl100k_base")
    for eot, expected in [("<|fim_prefix|>", 100258), (100276, 100276), ("ab", 370)]:
        bytebpe.encode_files(tmp_path / "in.jsonl", encoding=enc, output=tmp_path / "o", eot=eot)
        assert load_output(tmp_path / "o")[0].tolist() == [370, expected]
    for bad, error, message in [("<|nothing|>", ValueError, "is not one token"), (10**9, ValueError, "not a token"),
                                (2.5, TypeError, "eot must be")]:
        with pytest.raises(error, match=message):
            bytebpe.encode_files(tmp_path / "in.jsonl", encoding=enc, output=tmp_path / "x", eot=bad)
    assert not (tmp_path / "x.tokens.npy").exists()
    result = subprocess.run([sys.executable, "-m", "bytebpe", "encode", str(tmp_path / "in.jsonl"), "-o",
                             str(tmp_path / "c"), "--encoding", "cl100k_base", "--eot-token", "<|fim_suffix|>",
                             "--bos-token", "100258", "-q"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert load_output(tmp_path / "c")[0].tolist() == [100258, 370, 100260]


# ==== failures and interrupts mid-run ==============================================================


@pytest.mark.parametrize("error", [KeyboardInterrupt, OSError("disk full")])
def test_an_interrupt_or_error_mid_run_leaves_no_output_and_stops_the_reader(
        tmp_path, corpus_dir, monkeypatch, error):
    (tmp_path / "out").mkdir()
    # An older finished output of the same name must survive a failed run untouched.
    old = datasets.output_paths(tmp_path / "out" / "o")
    for path in old[:2]:
        np.save(path, np.arange(3))
    old.meta.write_text("the old metadata")
    writes = []
    real_write = arrays.TokenFileWriter.write

    def failing_write(self, items):
        writes.append(len(items))
        if len(writes) == 5:        # the third batch: tokens and offsets of two batches were written
            raise error
        real_write(self, items)

    monkeypatch.setattr(arrays.TokenFileWriter, "write", failing_write)
    with pytest.raises(type(error) if isinstance(error, Exception) else error):
        bytebpe.encode_files([corpus_dir / name for name in CORPORA], encoding="cl100k_base",
                             output=tmp_path / "out" / "o", batch_bytes=SMALL_BATCH)
    assert len(writes) == 5
    no_files_but(tmp_path / "out", *(p.name for p in old))
    assert all(np.array_equal(np.load(p), np.arange(3)) for p in old[:2])
    assert old.meta.read_text() == "the old metadata"
    assert not [t for t in threading.enumerate() if t.name == "bytebpe-reader"]


def test_memory_does_not_grow_with_the_input(tmp_path, corpus_dir):
    """Peak Python-level allocations (texts, numpy arrays: tracemalloc sees both) of 1x and 4x the input."""
    import tracemalloc

    data = (corpus_dir / "docs_code.jsonl").read_bytes()
    (tmp_path / "x1.jsonl").write_bytes(data)
    (tmp_path / "x4.jsonl").write_bytes(data * 4)
    enc = bytebpe.get_encoding("gpt2")
    batch = 256 * 1024
    bytebpe.encode_files(tmp_path / "x1.jsonl", encoding=enc, output=tmp_path / "warm", batch_bytes=batch)
    peaks = {}
    for name in ("x1", "x4"):
        tracemalloc.start()
        try:
            summary = bytebpe.encode_files(tmp_path / f"{name}.jsonl", encoding=enc, output=tmp_path / name,
                                           batch_bytes=batch)
            peaks[name] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    # Holding the texts or the ids of the whole input would add ~9 MB (texts) or ~7 MB (ids) at 4x.
    assert peaks["x4"] < peaks["x1"] + 1_000_000, peaks
    assert peaks["x4"] < 2 * len(data) < summary.bytes, peaks


# ==== count_files ==================================================================================


def test_count_files_gives_per_file_documents_bytes_and_tiktokens_token_counts(
        corpus_dir, corpus_texts, tiktoken_encoding):
    reference = tiktoken_encoding("gpt2")
    summary = bytebpe.count_files([corpus_dir / name for name in CORPORA[:2]], encoding="gpt2")
    for stats, name in zip(summary.files, CORPORA[:2]):
        texts = corpus_texts[name]
        assert stats.documents == len(texts)
        assert stats.bytes == sum(len(t.encode()) for t in texts)
        assert stats.tokens == sum(len(reference.encode_ordinary(t)) for t in texts)
    assert summary.tokens == sum(s.tokens for s in summary.files)
    assert summary.outputs == []


# ==== train / val split ============================================================================


def test_val_fraction_splits_by_documents_deterministically_whatever_the_batches(tmp_path, corpus_dir,
                                                                                   corpus_texts, cl100k_reference):
    path = corpus_dir / "docs_english.jsonl"
    n = len(corpus_texts["docs_english.jsonl"])
    reference = cl100k_reference[:n]
    summary = bytebpe.encode_files(path, encoding="cl100k_base", output=tmp_path / "a", val_fraction=0.1, seed=7,
                                   eot=True, batch_bytes=SMALL_BATCH)
    again = bytebpe.encode_files(path, encoding="cl100k_base", output=tmp_path / "b", val_fraction=0.1, seed=7,
                                 eot=True, batch_bytes=SMALL_BATCH // 7, workers=1)
    other_seed = bytebpe.encode_files(path, encoding="cl100k_base", output=tmp_path / "c", val_fraction=0.1,
                                      seed=8, eot=True)
    train, val = bytebpe.load_token_files(tmp_path / "a.train"), bytebpe.load_token_files(tmp_path / "a.val")
    for name in ("train", "val"):
        assert np.array_equal(bytebpe.load_token_files(tmp_path / f"a.{name}").tokens,
                              bytebpe.load_token_files(tmp_path / f"b.{name}").tokens)
    assert not np.array_equal(val.tokens, bytebpe.load_token_files(tmp_path / "c.val").tokens)
    # Every document is in exactly one set, in input order, with tiktoken's ids.
    documents = [train.document(i).tolist() for i in range(train.meta.documents)]
    held_out = [val.document(i).tolist() for i in range(val.meta.documents)]
    assert train.meta.documents + val.meta.documents == n == summary.documents
    assert 0.05 * n < val.meta.documents < 0.2 * n
    eot = 100257
    expected = [ids + [eot] for ids in reference]
    it = iter(expected)
    assert all(any(doc == candidate for candidate in it) for doc in documents)     # a subsequence, in order
    assert sorted(map(tuple, documents + held_out)) == sorted(map(tuple, expected))
    assert (summary.splits["train"].tokens, summary.splits["val"].tokens) == (train.meta.tokens, val.meta.tokens)
    assert train.meta.tokens + val.meta.tokens == summary.tokens
    assert train.meta.inputs[0].documents == train.meta.documents
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("a.")) == sorted(
        f"a.{name}.{kind}" for name in ("train", "val") for kind in ("tokens.npy", "offsets.npy", "meta.json"))


def test_val_fraction_must_be_between_0_and_1(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    for bad in (0, 1, -0.5, 2.0, "0.1"):
        with pytest.raises(ValueError, match="val_fraction must be a number between 0 and 1"):
            bytebpe.encode_files(tmp_path / "a.txt", encoding="gpt2", output=tmp_path / "o", val_fraction=bad)
    no_files_but(tmp_path, "a.txt")


# ==== budgets: max_tokens and count's budget ========================================================


def test_max_tokens_keeps_each_documents_first_ids_before_bos_and_eot(tmp_path, corpus_dir, tiktoken_encoding):
    texts = texts_of(corpus_dir / "docs_english.jsonl")[:60] + ["", "short"]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"text": text}) + "\n" for text in texts))
    reference = tiktoken_encoding("cl100k_base")
    for bos, eot in [(False, False), ("<|fim_prefix|>", True)]:
        summary = bytebpe.encode_files(tmp_path / "in.jsonl", encoding="cl100k_base", output=tmp_path / "o",
                                       max_tokens=50, bos=bos, eot=eot, batch_bytes=1 << 14)
        tokens, offsets = load_output(tmp_path / "o")
        wrap = ([100258] if bos else [], [100257] if eot else [])
        expected = [wrap[0] + reference.encode_ordinary(text)[:50] + wrap[1] for text in texts]
        assert [tokens[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
        assert summary.tokens == sum(map(len, expected))
        assert bytebpe.load_token_files(tmp_path / "o").meta.extra["max_tokens"] == 50
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_tokens must be a positive int"):
            bytebpe.encode_files(tmp_path / "in.jsonl", encoding="cl100k_base", output=tmp_path / "x", max_tokens=bad)


def test_count_with_a_budget_counts_the_documents_over_it(tmp_path, corpus_dir, tiktoken_encoding, capsys):
    from bytebpe import cli

    path = corpus_dir / "docs_english.jsonl"
    lengths = [len(tiktoken_encoding("o200k_base").encode_ordinary(text)) for text in texts_of(path)]
    summary = bytebpe.count_files(path, encoding="o200k_base", budget=1000)
    assert summary.over_budget == summary.files[0].over_budget == sum(n > 1000 for n in lengths) > 0
    assert summary.longest == summary.files[0].longest == max(lengths)
    assert bytebpe.count_files(path, encoding="o200k_base").over_budget == 0     # no budget: nothing counted
    assert cli.main(["count", str(path), "--encoding", "o200k_base", "--budget", "1000"]) == 0
    out, err = capsys.readouterr()
    header, row = out.splitlines()[:2]
    assert header.split()[-2:] == ["over", "1,000"] and row.split()[-2:] == [f"{max(lengths):,}",
                                                                            f"{summary.over_budget:,}"]
    assert f"{summary.over_budget:,} documents of {len(lengths):,} over the budget of 1,000 tokens" in err
    with pytest.raises(ValueError, match="budget must be"):
        bytebpe.count_files(path, encoding="o200k_base", budget=-1)


def test_output_options_are_one_object_or_a_prefix_and_keywords_never_both(tmp_path):
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(json.dumps({"text": f"document {i} " * 30}) + "\n" for i in range(40)), encoding="utf-8")
    options = bytebpe.OutputOptions(tmp_path / "a", format="bin", shard_tokens=500, val_fraction=0.25, seed=3)
    by_object = bytebpe.encode_files(data, encoding="gpt2", output=options)
    by_keywords = bytebpe.encode_files(data, encoding="gpt2", output=tmp_path / "b", format="bin", shard_tokens=500,
                                       val_fraction=0.25, seed=3)
    assert by_object.splits.keys() == by_keywords.splits.keys() == {"train", "val"}
    assert (by_object.documents, by_object.tokens) == (by_keywords.documents, by_keywords.tokens)
    for part in ("train", "val"):
        ours = bytebpe.load_tokens(tmp_path / f"a.{part}")
        theirs = bytebpe.load_tokens(tmp_path / f"b.{part}")
        assert ours.n_documents == theirs.n_documents > 0
        assert all((ours.document(i) == theirs.document(i)).all() for i in range(ours.n_documents))
    with pytest.raises(TypeError, match="output=OutputOptions\\(...\\) or as keywords, not both \\(format="):
        bytebpe.encode_files(data, encoding="gpt2", output=bytebpe.OutputOptions(tmp_path / "c"), format="bin")
    for bad, message in [(dict(format="txt"), "format must be 'npy' or 'bin'"),
                         (dict(val_fraction=1.0), "val_fraction must be a number between 0 and 1"),
                         (dict(seed=-1), "seed must be a non-negative int"),
                         (dict(shard_tokens=0), "shard_tokens must be a positive int")]:
        with pytest.raises(ValueError, match=message):
            bytebpe.OutputOptions(tmp_path / "d", **bad)
    assert not list(tmp_path.glob("c.*")) and not list(tmp_path.glob("d.*"))
