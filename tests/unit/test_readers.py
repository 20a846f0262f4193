"""One reader for encode, count and train, in the library and the CLI: the same documents from the same
files, errors naming file:line, bad bytes decided by `errors`, nothing left out silently."""
from __future__ import annotations

from collections.abc import Callable

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytebpe
from bytebpe import cli, readers, training
from bytebpe.readers import BadDocumentError


def write_jsonl(path: Path, texts: list[str], field: str = "text") -> Path:
    path.write_text("".join(json.dumps({field: text}) + "\n" for text in texts), encoding="utf-8")
    return path


def documents_of(path: Path, **options) -> list[str]:
    (file,) = readers.find_input_files(path)
    return [text for text, _line in file.documents(**options)]


@pytest.fixture()
def trained_texts(monkeypatch) -> list[list[str]]:
    """Every text list that training counts from now on (train, train_from_files, count_pieces_from_files and
    `bytebpe train` / `count-pieces` all go through `training._count`), as str: the file reader hands a
    compiled scanner a .txt's UTF-8 bytes."""
    calls: list[list[str]] = []
    original = training._count

    def recording_count(texts, *args, **kwargs):
        texts = list(texts)
        calls.append([text.decode("utf-8") if isinstance(text, bytes) else text for text in texts])
        return original(texts, *args, **kwargs)

    monkeypatch.setattr(training, "_count", recording_count)
    return calls


# ==== item 5: one reader ===========================================================================


def test_train_from_files_reads_folders_and_parquet_as_encode_files_does(tmp_path, trained_texts):
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    write_jsonl(data / "a.jsonl", ["first document", "second document"])
    pq.write_table(pa.table({"text": ["third, from parquet"]}), data / "sub" / "b.parquet")
    enc = bytebpe.train_from_files(data, 260)
    assert trained_texts == [["first document", "second document", "third, from parquet"]]
    summary = bytebpe.encode_files(data, encoding=enc, output=tmp_path / "o")
    assert summary.documents == 3


def test_train_from_files_names_file_and_line_of_bad_utf8(tmp_path):
    (tmp_path / "d.jsonl").write_bytes(b'{"text": "ok"}\n{"text": "caf\xe9"}\n')
    with pytest.raises(BadDocumentError, match=r"d\.jsonl:2: invalid UTF-8 \(byte 0xe9\)"):
        bytebpe.train_from_files(tmp_path / "d.jsonl", 260)
    (tmp_path / "d.txt").write_bytes(b"line one\nline \xff two\n")
    with pytest.raises(BadDocumentError, match=r"d\.txt:2: invalid UTF-8 \(byte 0xff\)"):
        bytebpe.train_from_files(tmp_path / "d.txt", 260)
    (tmp_path / "d.md").write_text("not an input format")
    with pytest.raises(ValueError, match="unknown input format"):
        bytebpe.train_from_files(tmp_path / "d.md", 260)


def test_train_from_files_skips_and_reports_bad_documents(tmp_path, trained_texts):
    (tmp_path / "d.jsonl").write_bytes(b'{"text": "good one"}\n{"text": 5}\nnot json\n{"text": "good two"}\n')
    with pytest.warns(UserWarning, match="skipped 2 bad documents"):
        bytebpe.train_from_files(tmp_path / "d.jsonl", 260, skip_bad=True)
    assert trained_texts == [["good one", "good two"]]
    tally = readers.ReadTally()
    bytebpe.train_from_files(tmp_path / "d.jsonl", 260, skip_bad=True, tally=tally)
    assert (tally.documents, tally.skipped) == (2, 2) and tally.examples[0].endswith("d.jsonl:2: field 'text' is "
                                                                                    "int, not a string")


def test_a_large_txt_is_cut_for_training_but_one_document_for_encoding(tmp_path, monkeypatch, trained_texts,
                                                                      tiktoken_encoding):
    monkeypatch.setattr(readers, "CUT_CHARS", 100)
    text = "".join(f"Line {i} of the text, with words.\n" for i in range(200))
    (tmp_path / "big.txt").write_text(text, encoding="utf-8")
    whole = bytebpe.train([text], 400).mergeable_ranks
    assert trained_texts.pop() == [text]
    assert bytebpe.train_from_files(tmp_path / "big.txt", 400).mergeable_ranks == whole
    assert len(trained_texts[0]) > 20 and max(map(len, trained_texts[0])) < 200
    assert "".join(trained_texts[0]) == text
    # bytebpe train reads it the same way: in pieces, never the whole file as one string.
    assert cli.main(["train", str(tmp_path / "big.txt"), "--vocab-size", "400", "-o", str(tmp_path / "t.json"),
                     "-q"]) == 0
    assert trained_texts[1] == trained_texts[0]
    assert bytebpe.load(tmp_path / "t.json").mergeable_ranks == whole
    # encode: one document, whose ids are the whole text's.
    summary = bytebpe.encode_files(tmp_path / "big.txt", encoding="cl100k_base", output=tmp_path / "o")
    tokens = bytebpe.load_token_files(tmp_path / "o").tokens
    assert summary.documents == 1
    assert tokens.tolist() == tiktoken_encoding("cl100k_base").encode_ordinary(text)


# ==== bad bytes in .txt: errors=strict|replace; --skip-bad never drops a whole file ====================


def test_a_bad_byte_in_a_txt_is_an_error_even_with_skip_bad_and_says_how_to_keep_the_file(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"good text\nmore \xff text\n")
    with pytest.raises(BadDocumentError, match=r"a\.txt:2: invalid UTF-8 \(byte 0xff\).*--errors replace"):
        bytebpe.encode_files(tmp_path / "a.txt", encoding="cl100k_base", output=tmp_path / "o", skip_bad=True)
    assert not (tmp_path / "o.tokens.npy").exists()


def test_errors_replace_reads_bad_bytes_as_u_fffd_and_counts_them(tmp_path, tiktoken_encoding):
    (tmp_path / "a.txt").write_bytes(b"good text\nmore \xff\xfe text\n")
    summary = bytebpe.encode_files(tmp_path / "a.txt", encoding="cl100k_base", output=tmp_path / "o",
                                   errors="replace")
    expected = "good text\nmore \ufffd\ufffd text\n"
    assert bytebpe.load_token_files(tmp_path / "o").tokens.tolist() == \
        tiktoken_encoding("cl100k_base").encode_ordinary(expected)
    assert (summary.documents, summary.replaced, summary.replaced_bytes, summary.skipped) == (1, 1, 2, 0)
    assert summary.replaced_examples[0].startswith(f"{tmp_path / 'a.txt'}:2: invalid UTF-8 (byte 0xff)")
    assert "replaced 2 invalid UTF-8 bytes with U+FFFD in 1 document" in summary.describe()
    # --lines: each line is a document, so a bad line may be skipped (and counted) or replaced.
    summary = bytebpe.encode_files(tmp_path / "a.txt", encoding="cl100k_base", output=tmp_path / "p", lines=True,
                                   skip_bad=True)
    assert (summary.documents, summary.skipped) == (1, 1)
    assert documents_of(tmp_path / "a.txt", lines=True, errors="replace") == ["good text", "more \ufffd\ufffd text"]
    # Training reads the same text.
    tally = readers.ReadTally()
    bytebpe.train_from_files(tmp_path / "a.txt", 260, errors="replace", tally=tally)
    assert (tally.replaced, tally.replaced_bytes) == (1, 2)


@pytest.mark.parametrize("command", ["encode", "count", "train"])
def test_the_cli_reports_skipped_and_replaced_documents_even_with_quiet(tmp_path, capsys, command):
    (tmp_path / "d.jsonl").write_bytes(b'{"text": "good"}\n{"text": 5}\n{"text": "caf\xe9"}\n')
    args = [command, str(tmp_path / "d.jsonl"), "--skip-bad", "--errors", "replace", "-q"]
    args += {"encode": ["--encoding", "gpt2", "-o", str(tmp_path / "o")],
             "count": ["--encoding", "gpt2"], "train": ["--vocab-size", "260", "-o", str(tmp_path / "t.json")]}[command]
    assert cli.main(args) == 0
    err = capsys.readouterr().err
    assert "skipped 1 bad documents" in err and "d.jsonl:2: field 'text' is int" in err
    assert "replaced 1 invalid UTF-8 bytes with U+FFFD in 1 document" in err and "d.jsonl:3" in err


def test_lines_with_a_jsonl_is_an_error_not_ignored(tmp_path, capsys):
    write_jsonl(tmp_path / "d.jsonl", ["a"])
    with pytest.raises(ValueError, match=r"--lines \(lines=True\) applies to \.txt files only.*d\.jsonl is jsonl"):
        bytebpe.encode_files(tmp_path / "d.jsonl", encoding="gpt2", output=tmp_path / "o", lines=True)
    with pytest.raises(ValueError, match="applies to .txt files only"):
        bytebpe.train_from_files(tmp_path / "d.jsonl", 260, lines=True)
    assert cli.main(["count", str(tmp_path / "d.jsonl"), "--lines", "-q"]) == 1
    assert "applies to .txt files only" in capsys.readouterr().err


# ==== item 6: formats ==============================================================================

TEXTS = ["first document", "second, with ünïcödé", "third\nspans lines"]


def compress(data: bytes, path: Path) -> Path:
    import bz2
    import gzip
    import lzma

    import zstandard    # in the `test` extra: a missing zstandard fails here, it is never skipped

    codec = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress,
             ".zst": zstandard.ZstdCompressor().compress}[path.suffix.lower()]
    path.write_bytes(codec(data))
    return path


@pytest.mark.parametrize("name", ["d.jsonl", "d.ndjson", "d.json", "strings.json", "d.jsonl.gz", "d.ndjson.bz2",
                                  "d.json.xz", "d.jsonl.zst", "d.JSONL.ZST"])
def test_every_json_format_and_compression_gives_the_same_documents(tmp_path, name):
    lines = "".join(json.dumps({"text": text}) + "\n" for text in TEXTS).encode()
    array = json.dumps([{"text": text} for text in TEXTS], indent=1).encode()
    if name.startswith("strings"):
        data = json.dumps(TEXTS).encode()
    else:
        data = array if ".json." in name.lower() + "." else lines
    path = tmp_path / name
    if name.lower().endswith((".gz", ".bz2", ".xz", ".zst")):
        compress(data, path)
    else:
        path.write_bytes(data)
    assert documents_of(path) == TEXTS
    summary = bytebpe.count_files(path, encoding="gpt2")
    assert summary.documents == 3


@pytest.mark.parametrize("name", ["a.txt", "a.txt.gz", "a.txt.bz2", "a.txt.xz", "a.txt.zst"])
def test_a_bom_is_dropped_from_every_text_format(tmp_path, name):
    text = "a document\nof two lines\n"
    data = b"\xef\xbb\xbf" + text.encode()
    path = compress(data, tmp_path / name) if not name.endswith(".txt") else tmp_path / name
    if name.endswith(".txt"):
        path.write_bytes(data)
    assert documents_of(path) == [text]
    assert documents_of(path, lines=True) == ["a document", "of two lines"]
    assert documents_of(path, cut=True) == [text]
    (tmp_path / "b.jsonl").write_bytes(b"\xef\xbb\xbf" + json.dumps({"text": "x"}).encode() + b"\n")
    assert documents_of(tmp_path / "b.jsonl") == ["x"]
    (tmp_path / "c.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(["y"]).encode())
    assert documents_of(tmp_path / "c.json") == ["y"]


def test_a_json_file_must_hold_one_array_and_bad_items_are_named_by_line(tmp_path):
    (tmp_path / "obj.json").write_text('{"text": "one object"}')
    with pytest.raises(BadDocumentError, match=r"obj\.json:1: a \.json input must hold one array"):
        documents_of(tmp_path / "obj.json")
    (tmp_path / "items.json").write_text('[\n {"text": "good"},\n 42,\n {"body": "x"},\n "fine"\n]\n')
    with pytest.raises(BadDocumentError, match=r"items\.json:3: expected a JSON object or string, got int"):
        documents_of(tmp_path / "items.json")
    skipped: list[BadDocumentError] = []
    (file,) = readers.find_input_files(tmp_path / "items.json")
    assert [t for t, _ in file.documents(skip_bad=True, on_skip=skipped.append)] == ["good", "fine"]
    assert [error.line for error in skipped] == [3, 4]
    (tmp_path / "broken.json").write_text('[\n "a",\n "b" "c"\n]')
    with pytest.raises(BadDocumentError, match=r"broken\.json:3: not valid JSON"):
        documents_of(tmp_path / "broken.json")


def test_a_zst_input_without_zstandard_is_an_error_naming_the_extra(tmp_path, monkeypatch, capsys):
    path = compress(b'{"text": "x"}\n', tmp_path / "d.jsonl.zst")
    monkeypatch.setitem(__import__("sys").modules, "zstandard", None)     # as if it were not installed
    with pytest.raises(ImportError, match=r"pip install 'bytebpe\[zstd\]'"):
        bytebpe.encode_files(path, encoding="gpt2", output=tmp_path / "o")
    assert cli.main(["count", str(path), "-q"]) == 1
    assert "bytebpe[zstd]" in capsys.readouterr().err


def test_a_compressed_parquet_is_refused(tmp_path):
    (tmp_path / "d.parquet.zst").write_bytes(b"")
    with pytest.raises(ValueError, match="compressed .parquet is not supported"):
        readers.find_input_files(tmp_path / "d.parquet.zst")


def test_stdin_is_text_by_default_and_jsonl_or_json_when_asked(tmp_path, tiktoken_encoding):
    import subprocess
    import sys

    reference = tiktoken_encoding("gpt2")
    lines = "".join(json.dumps({"text": text}) + "\n" for text in TEXTS)
    for stdin, extra, expected in [("\ufeffplain text\n", [], ["plain text\n"]),
                                   (lines, ["--stdin-format", "jsonl"], TEXTS),
                                   (json.dumps(TEXTS), ["--stdin-format", "json"], TEXTS)]:
        out = tmp_path / f"o{len(extra)}{len(stdin)}"
        result = subprocess.run([sys.executable, "-m", "bytebpe", "encode", "-", "--encoding", "gpt2", "-o",
                                 str(out), "-q", *extra], input=stdin.encode(), capture_output=True, timeout=120)
        assert result.returncode == 0, result.stderr
        data = bytebpe.load_token_files(out)
        assert [data.document(i).tolist() for i in range(len(expected))] == \
            [reference.encode_ordinary(t) for t in expected]
        assert data.meta.inputs[0].path == "<stdin>"
    with pytest.raises(ValueError, match="given twice"):
        readers.find_input_files(["-", "-"])


def test_ignore_unknown_skips_and_counts_other_files_in_folders(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl(data / "a.jsonl", ["x"])
    (data / "scores.csv").write_text("not data")
    (data / ".hidden").write_text("never read")
    assert cli.main(["count", str(data), "-q"]) == 1
    err = capsys.readouterr().err
    assert "scores.csv" in err and "--ignore-unknown to skip them" in err and "ignore_unknown=True" not in err
    assert cli.main(["count", str(data), "-q", "--ignore-unknown"]) == 0
    assert "ignored 1 file that is not an input" in capsys.readouterr().err
    files = readers.find_input_files(data, ignore_unknown=True)
    assert [f.path.name for f in files] == ["a.jsonl"] and files.ignored == [data / "scores.csv"]


def test_notes_beside_a_dataset_are_passed_over_and_reported(tmp_path, capsys):
    # A dataset folder often holds its README, licence and checksums (as bytebpe's own sample folder does).
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl(data / "a.jsonl", ["x"])
    for name in ("README.md", "PROVENANCE.md", "LICENSE", "SHA256SUMS", "notes.rst"):
        (data / name).write_text("about the data")
    files = readers.find_input_files(data)
    assert [f.path.name for f in files] == ["a.jsonl"] and len(files.ignored) == 5
    assert cli.main(["count", str(data), "-q"]) == 0
    assert "ignored 5 files that are not inputs" in capsys.readouterr().err


@pytest.mark.parametrize("content", [b"", b"plain ascii\n", b"caf\xc3\xa9 au lait", b"\xef\xbb\xbfwith a bom",
                                     b"ascii then \xff bad"])
def test_a_whole_txt_reads_the_same_in_place_or_decoded(tmp_path, content):
    # ASCII files are read straight into the str (no bytes copy); any other byte takes the decoding path.
    (tmp_path / "a.txt").write_bytes(content)
    expected = content.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace")
    assert documents_of(tmp_path / "a.txt", errors="replace") == [expected]
    progress: list[int] = []
    (file,) = readers.find_input_files(tmp_path / "a.txt")
    list(file.documents(errors="replace", on_progress=progress.append))
    assert sum(progress) == len(content)


def cut_where_lines_allow(text: str, cut_chars: int, size: Callable[[str], int] = len) -> list[tuple[str, int]]:
    """The cutting rule of `readers._cut_documents`, line by line: the oracle for its block-wise reading
    (`size`: how a line's length counts against `cut_chars`: characters, or bytes for the UTF-8 reader)."""
    documents, parts, chars, previous, start = [], [], 0, "", 1
    for number, line in enumerate(text.splitlines(keepends=True) if text else [], start=1):
        if (chars >= cut_chars and line[:1].isalnum() and previous.endswith("\n") and len(previous) >= 2
                and not previous[-2].isspace()):
            documents.append(("".join(parts), start))
            parts, chars, start = [], 0, number
        parts.append(line)
        chars += size(line)
        previous = line
    if parts:
        documents.append(("".join(parts), start))
    return documents


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(st.text(st.sampled_from("ab 1\t\u00e9\u4e2d\U0001f600_"), max_size=12) | st.text(max_size=3),
                      max_size=40),
       cut_chars=st.integers(1, 40), bom=st.booleans(), final_newline=st.booleans(), utf8=st.booleans())
def test_cutting_a_txt_for_training_follows_the_line_rule_whatever_the_blocks(tmp_path_factory, lines, cut_chars,
                                                                                bom, final_newline, utf8):
    # Both readers: str documents, and the UTF-8 bytes that a compiled scanner counts (blocks in bytes).
    text = "\n".join(line.replace("\r", "").replace("\n", "") for line in lines)
    text = text.replace("\x0b", "").replace("\x0c", "").replace("\x1c", "").replace("\x1d", "").replace(
        "\x1e", "").replace("\x85", "").replace("\u2028", "").replace("\u2029", "")   # only \n ends a line here
    text += "\n" if final_newline and text else ""
    path = tmp_path_factory.mktemp("cut") / "t.txt"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8", "surrogatepass"))
    original = readers.CUT_CHARS
    readers.CUT_CHARS = cut_chars
    try:
        got = list(readers.InputFile.of(path).documents(cut=True, errors="replace", utf8=utf8))
    finally:
        readers.CUT_CHARS = original
    readable = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if utf8:
        expected = [(document.encode("utf-8"), line)
                    for document, line in cut_where_lines_allow(readable, cut_chars, lambda line: len(line.encode()))]
    else:
        expected = cut_where_lines_allow(readable, cut_chars)
    assert got == expected


def test_reading_options_are_one_object_or_keywords_never_both(tmp_path, tiktoken_encoding):
    data = tmp_path / "docs.jsonl"
    write_jsonl(data, ["first document", "second"])
    (tmp_path / "bad.jsonl").write_text('{"text": "ok"}\nnot json\n', encoding="utf-8")
    options = bytebpe.ReadOptions(field="text", skip_bad=True)
    # The same reading, given either way.
    by_object = bytebpe.count_files([data, tmp_path / "bad.jsonl"], encoding="cl100k_base", read=options)
    by_keywords = bytebpe.count_files([data, tmp_path / "bad.jsonl"], encoding="cl100k_base", skip_bad=True)
    assert (by_object.documents, by_object.tokens, by_object.skipped) == \
        (by_keywords.documents, by_keywords.tokens, by_keywords.skipped) == (3, by_keywords.tokens, 1)
    counts = bytebpe.count_pieces_from_files(data, read=options)
    assert counts.to_dict() == bytebpe.count_pieces_from_files(data, skip_bad=True).to_dict() != {}
    enc = bytebpe.train_from_files(data, 260, read=options)
    assert enc.n_vocab == bytebpe.train_from_files(data, 260, skip_bad=True).n_vocab
    with pytest.raises(TypeError, match="read=ReadOptions\\(...\\) or as keywords, not both \\(lines="):
        bytebpe.count_files(data, encoding="cl100k_base", read=options, lines=True)
    with pytest.raises(TypeError, match="read must be a ReadOptions"):
        bytebpe.encode_files(data, encoding="cl100k_base", output=tmp_path / "o", read={"field": "text"})
    assert not list(tmp_path.glob("o.*"))


@pytest.mark.parametrize(("options", "error", "message"), [
    (dict(errors="ignore"), ValueError, "errors must be one of strict, replace"),
    (dict(stdin_format="csv"), ValueError, "stdin_format must be one of txt, jsonl, json"),
    (dict(lines="yes"), TypeError, "lines must be a bool"),
    (dict(field=3), TypeError, "field must be a str"),
])
def test_reading_options_are_checked_when_made(options, error, message):
    with pytest.raises(error, match=message):
        bytebpe.ReadOptions(**options)
