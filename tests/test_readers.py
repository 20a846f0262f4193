"""One reader for encode, count and train, in the library and the CLI: the same documents from the same
files, errors naming file:line, bad bytes decided by `errors`, nothing left out silently."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

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
    """Every text list that `train` receives from now on (train_from_files and `bytebpe train` go through it)."""
    calls: list[list[str]] = []
    original = training.train

    def recording_train(texts, *args, **kwargs):
        texts = list(texts)
        calls.append(texts)
        return original(texts, *args, **kwargs)

    monkeypatch.setattr(training, "train", recording_train)
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
    assert "replaced 2 invalid UTF-8 bytes with U+FFFD in 1 documents" in summary.describe()
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
    assert "replaced 1 invalid UTF-8 bytes with U+FFFD in 1 documents" in err and "d.jsonl:3" in err


def test_lines_with_a_jsonl_is_an_error_not_ignored(tmp_path, capsys):
    write_jsonl(tmp_path / "d.jsonl", ["a"])
    with pytest.raises(ValueError, match=r"--lines \(lines=True\) applies to \.txt files only.*d\.jsonl is jsonl"):
        bytebpe.encode_files(tmp_path / "d.jsonl", encoding="gpt2", output=tmp_path / "o", lines=True)
    with pytest.raises(ValueError, match="applies to .txt files only"):
        bytebpe.train_from_files(tmp_path / "d.jsonl", 260, lines=True)
    assert cli.main(["count", str(tmp_path / "d.jsonl"), "--lines", "-q"]) == 1
    assert "applies to .txt files only" in capsys.readouterr().err
