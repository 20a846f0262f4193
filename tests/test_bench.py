"""`bytebpe bench`: with no files it measures the sample corpus the package ships, next to every peer that is
installed; each peer's ids are checked before it is timed — the oracle's must be equal (else the command
fails), any other peer that differs or refuses a text is left out of that row with the reason printed."""
from __future__ import annotations

import hashlib
import re

import pytest

import bytebpe
from bytebpe import bench, cli


def test_the_sample_corpus_is_in_the_package_as_its_provenance_records_it():
    provenance = (bench.SAMPLE_DIR / "PROVENANCE.md").read_text(encoding="utf-8")
    for path in bench.sample_files():
        data = path.read_bytes()
        row = next(line for line in provenance.splitlines() if line.startswith(f"| `{path.name}`"))
        assert f"| {len(data):,} |" in row and hashlib.sha256(data).hexdigest() in row
        assert "public domain" in row or "MIT" in row
    texts = {path.name: path.read_text(encoding="utf-8") for path in bench.sample_files()}
    assert "Carrie" in texts["english.txt"] and "def " in texts["code.txt"]
    for script in ("世界人权宣言", "世界人権宣言", "세 계 인 권 선 언", "Всеобщая", "الإعلان", "मानव", "吾輩は猫"):
        assert script in texts["multilingual.txt"]


@pytest.mark.parametrize("text", ["", "one line", "a\nb\n", "x" * 10_000, "ab\ncd\nef\n" * 2000])
def test_cut_documents_cuts_at_line_ends_and_loses_nothing(text):
    documents = bench.cut_documents(text, 64)
    assert "".join(documents) == text
    assert all(doc.endswith("\n") for doc in documents[:-1])
    assert all(len(doc) < 64 + 10 for doc in documents if "\n" in doc[:-1])


def rows_of(output: str) -> list[list[str]]:
    """The table's rows (after the two header lines and the column names), split on runs of spaces."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("text "))
    return [re.split(r"\s{2,}", line.strip()) for line in lines[start + 1:] if not line.startswith("note:")]


def test_with_no_files_it_benchmarks_the_shipped_sample_against_tiktoken(capsys):
    pytest.importorskip("tiktoken")
    assert cli.main(["bench", "--repeat", "1", "--encoding", "o200k_base"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"bytebpe {bytebpe.__version__} vs tiktoken")
    assert "o200k_base" in out and "the sample corpus shipped with bytebpe" in out
    rows = rows_of(out)
    assert [row[0] for row in rows] == ["english.txt", "english.txt", "code.txt", "code.txt",
                                        "multilingual.txt", "multilingual.txt"]
    for row in rows:
        assert row[1] in ("1 text, 1 thread",) or re.fullmatch(r"\d+ docs, \d+ threads?", row[1])
        # bytebpe MB/s, tiktoken MB/s, and their ratio, all measured.
        bytebpe_rate, tiktoken_rate, ratio = float(row[3]), float(row[4]), float(row[5].rstrip("×"))
        assert bytebpe_rate > 0 and tiktoken_rate > 0
        assert ratio == pytest.approx(bytebpe_rate / tiktoken_rate, rel=0.05, abs=0.01)


class WrongPeer:
    """A peer whose ids differ from bytebpe's on one document."""

    def __init__(self, enc):
        self.enc = enc

    def encode_ordinary(self, text):
        ids = self.enc.encode_ordinary(text)
        return ids[:-1] + [ids[-1] + 1] if "Carrie" in text else ids

    def encode_ordinary_batch(self, texts, num_threads=1):
        return [self.encode_ordinary(text) for text in texts]


class RefusingPeer(WrongPeer):
    def encode_ordinary(self, text):
        raise NotImplementedError("not this text")


def test_a_peer_with_other_ids_or_that_refuses_a_text_is_left_out_of_those_rows_with_a_note(monkeypatch, capsys):
    enc = bytebpe.get_encoding("gpt2")
    monkeypatch.setattr(bench, "PEER_BUILDERS", {
        "wrong": lambda name: bench.Peer("wrong 1.0", WrongPeer(enc)),
        "refusing": lambda name: bench.Peer("refusing 2.0", RefusingPeer(enc)),
    })
    assert cli.main(["bench", "--repeat", "1", "--encoding", "gpt2"]) == 0
    out = capsys.readouterr().out
    assert "vs wrong 1.0, refusing 2.0" in out
    for row in rows_of(out):
        wrong_rate, refusing_rate = row[4], row[6]
        assert refusing_rate == "—"
        assert (wrong_rate == "—") == (row[0] == "english.txt")
    assert "note: wrong 1.0 left out of english.txt: ids differ from bytebpe's in english.txt, document 0" in out
    assert "note: refusing 2.0 left out of code.txt: NotImplementedError: not this text" in out


def test_when_the_oracle_differs_the_command_fails_naming_where(monkeypatch, capsys):
    enc = bytebpe.get_encoding("gpt2")
    monkeypatch.setattr(bench, "PEER_BUILDERS", {
        "tiktoken": lambda name: bench.Peer("tiktoken 0.0", WrongPeer(enc), must_match=True)})
    assert cli.main(["bench", "--repeat", "1", "--encoding", "gpt2"]) == cli.EXIT_FAILED
    err = capsys.readouterr().err
    assert "tiktoken 0.0: ids differ from bytebpe's in english.txt" in err and "bytebpe verify" in err


def test_a_missing_peer_is_named_with_how_to_install_it(monkeypatch, capsys):
    def absent(name):
        raise ImportError("No module named 'fastpeer'")

    monkeypatch.setattr(bench, "PEER_BUILDERS", {"fastpeer": absent})
    assert cli.main(["bench", "--repeat", "1", "--encoding", "gpt2"]) == 0
    out = capsys.readouterr().out
    assert "vs no peer (none installed)" in out and "note: fastpeer: not installed (pip install fastpeer)" in out
    assert len(rows_of(out)) == 6


def test_a_caching_peer_times_a_fresh_instance_that_has_seen_only_other_text(monkeypatch, capsys):
    enc = bytebpe.get_encoding("gpt2")
    seen_by_instance: list[list[str]] = []

    class CachingPeer(WrongPeer):
        def __init__(self):
            self.seen: list[str] = []
            seen_by_instance.append(self.seen)

        def encode_ordinary(self, text):
            self.seen.append(text)
            return enc.encode_ordinary(text)

    monkeypatch.setattr(bench, "PEER_BUILDERS", {
        "caching": lambda name: bench.Peer("caching 1.0", CachingPeer(), fresh=CachingPeer)})
    assert cli.main(["bench", "--repeat", "2", "--encoding", "gpt2"]) == 0
    english = bench.SAMPLE_DIR.joinpath("english.txt").read_text(encoding="utf-8")
    # Instance 0 checks the ids; then each timed run has its own: primed with the other two files only.
    timed = seen_by_instance[1:]
    assert len(timed) == 2 * 6
    first_english_run = timed[0]
    assert english not in first_english_run[:2] and first_english_run[-1] == english
    assert "keeps a piece cache across calls" in capsys.readouterr().out
