"""`bytebpe bench`: with no files it measures the sample corpus the package ships, next to every peer that is
installed; each peer's ids are checked before it is timed — the oracle's must be equal (else the command
fails), any other peer that differs or refuses a text is left out of that row with the reason printed."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

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


def test_bytebpe_too_times_text_it_has_not_seen_its_cache_emptied_and_primed_on_other_text(monkeypatch, capsys):
    events: list[str] = []
    real_encode, real_reset = bytebpe.Encoding.encode_ordinary, bytebpe.Encoding.set_piece_cache_bytes

    def encode_ordinary(self, text, **options):
        events.append(text)
        return real_encode(self, text, **options)

    def set_piece_cache_bytes(self, max_bytes):
        events.append("<emptied>")
        return real_reset(self, max_bytes)

    monkeypatch.setattr(bench, "PEER_BUILDERS", {})
    monkeypatch.setattr(bytebpe.Encoding, "encode_ordinary", encode_ordinary)
    monkeypatch.setattr(bytebpe.Encoding, "set_piece_cache_bytes", set_piece_cache_bytes)
    assert cli.main(["bench", "--repeat", "2", "--encoding", "gpt2"]) == 0
    english = bench.SAMPLE_DIR.joinpath("english.txt").read_text(encoding="utf-8")
    # The one-text row of english.txt: the id check, then per timed run the cache emptied, the other files, the
    # text itself.
    runs = " ".join("E" if event == english else "X" if event == "<emptied>" else "o" for event in events)
    assert runs.startswith("E X o o E X o o E")
    out = capsys.readouterr().out
    assert "never on the text timed" in out
    # The sample's files are ~0.15 MB each: the batch rows say why two threads cannot win on them.
    from bytebpe import batching

    assert ("cannot pay for their start" in out) == (batching.pool_size() > 1)


# ==== benchmarks/bench_encode.py: the peers sections (9-11) =========================================

BENCH_ENCODE = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_encode.py"


def load_bench_encode():
    spec = importlib.util.spec_from_file_location("bench_encode", BENCH_ENCODE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_encode"] = module    # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def test_bench_encode_quick_runs_every_section_with_bytebpe_and_tiktoken_and_no_peer(data_dir, corpus_dir,
                                                                                      tmp_path):
    pytest.importorskip("tiktoken")
    raw = tmp_path / "raw.json"
    # --quick with less text and no worst cases: every section, in seconds. `--peers` with no name: the
    # optional peers are left out whether installed or not; bytebpe and tiktoken always run.
    finished = subprocess.run(
        [sys.executable, str(BENCH_ENCODE), "--quick", "--mb", "0.1", "--peer-mb", "0.05", "--no-worst",
         "--corpus-dir", str(corpus_dir), "--peers", "--json", str(raw)],
        capture_output=True, text=True, env={**os.environ, "BYTEBPE_DATA_DIR": str(data_dir)}, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    out = finished.stdout
    assert out.count("load average") == 2          # at start and at end
    for title in ("## 1. One text", "## 9. One thread, list output, unseen text",
                  "## 10. One thread, numpy output", "## 11. 2-thread batch"):
        assert title in out
    peers = json.loads(raw.read_text())["peers"]
    assert [r["corpus"] for r in peers] == ["english_prose.txt", "code.txt", "multilingual.txt"]
    for result in peers:
        assert {key.split(" ")[0] for key in result["rates"]} == {"bytebpe", "tiktoken"}
        assert result["excluded"] == {}
        for key in ("bytebpe list fresh", "bytebpe list primed", "bytebpe numpy fresh", "bytebpe numpy primed",
                    "bytebpe batch_list fresh", "bytebpe batch_numpy fresh", "bytebpe loop_list fresh",
                    "tiktoken list fresh", "tiktoken numpy fresh", "tiktoken batch_list fresh"):
            assert result["rates"][key]["mb_per_s"] > 0
        assert result["scaling"]["turns"] == 1 and result["scaling"]["list"] > 0 and result["scaling"]["numpy"] > 0
        assert result["scaling"]["numpy_primed"] > 0     # the same with the cache primed first
        # --quick times every library in this one process
        assert result["isolation"] == "none" and len(set(result["timing_pid"].values())) == 1
        # Slices of about --peer-mb each, after the --mb of the other sections and the 2 MB priming text.
        assert all(0.04e6 < size <= 0.05e6 for size in result["slice_bytes"])
        # Every slice's rate is kept, in order, for the same-slice ratios (table 12).
        per_slice = result["rates"]["bytebpe numpy primed"]["per_slice"]
        assert len(per_slice) == len(result["slice_bytes"]) and max(per_slice) == pytest.approx(
            result["rates"]["bytebpe numpy primed"]["mb_per_s"])


def test_same_slice_ratios_divide_the_rates_slice_by_slice_then_take_the_median():
    # The best-of tables can compare bytebpe's best slice with a peer's best, which on the multilingual corpus
    # may be another language; table 12 divides the two rates of each slice.
    result = {"rates": {"bytebpe numpy primed": {"mb_per_s": 200.0, "per_slice": [100.0, 50.0, 200.0]},
                        "gigatoken numpy primed": {"mb_per_s": 100.0, "per_slice": [50.0, 100.0, 100.0]}}}
    bench_encode = load_bench_encode()
    assert bench_encode.same_slice_ratio(result, "gigatoken", "numpy", "primed") == "2.00 (0.50–2.00)"
    assert bench_encode.same_slice_ratio(result, "gigatoken", "list", "primed") == ""      # not timed: an empty cell
    assert bench_encode.same_slice_ratio(result, "quicktok", "numpy", "primed") == ""


def test_a_primed_run_is_primed_through_the_call_it_times():
    # gigatoken's tiktoken wrapper (list) and its Tokenizer (numpy) keep separate caches: priming one and
    # timing the other timed a cold cache. Each kind is primed by its own call, batches on documents.
    bench_encode = load_bench_encode()
    calls: list[tuple[str, object]] = []

    def record(kind):
        return lambda obj, item: calls.append((kind, item))

    peer = bench_encode.Peer("two caches", "1", object, record("list"), record("numpy"), record("batch_list"),
                             record("batch_numpy"), primed=True)
    priming = "a line of priming text\n" * 500
    for kind, timed in (("list", "x"), ("numpy", "x"), ("batch_list", ["x"]), ("batch_numpy", ["x"])):
        calls.clear()
        bench_encode.time_fresh_runs(peer, kind, [timed], [1], priming)
        assert [call[0] for call in calls] == [kind, kind]
        primed_with = calls[0][1]
        if kind.startswith("batch"):
            assert len(primed_with) > 1 and "".join(primed_with) == priming
        else:
            assert primed_with == priming
        assert calls[1][1] == timed


def test_bench_collector_times_list_batches_with_the_collector_on_after_checking_ids(data_dir, corpus_dir):
    pytest.importorskip("tiktoken")
    finished = subprocess.run(
        [sys.executable, str(BENCH_ENCODE.parent / "bench_collector.py"), "--mb", "0.05", "--batch-mb", "0.02",
         "--repeat", "1", "--encodings", "cl100k_base", "--corpora", "code.txt", "--threads", "1", "2",
         "--corpus-dir", str(corpus_dir)],
        capture_output=True, text=True, env={**os.environ, "BYTEBPE_DATA_DIR": str(data_dir)}, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    rows = [line for line in finished.stdout.splitlines() if line.startswith("| cl100k_base | code.txt |")]
    assert [row.split(" | ")[2] for row in rows] == ["1", "2"]
    for row in rows:
        assert float(row.split(" | ")[3]) > 0 and float(row.split(" | ")[4]) > 0    # bytebpe, tiktoken MB/s


def test_bench_encode_runs_on_a_fresh_clone_with_the_bundled_vocabularies_and_sample(tmp_path):
    # No BYTEBPE_DATA_DIR, no corpus: the vocabularies' original files are written from the bundled ones and
    # the package's sample corpus stands in (its code holds special tokens' text, which gigatoken refuses).
    pytest.importorskip("tiktoken")
    raw = tmp_path / "raw.json"
    env = {key: value for key, value in os.environ.items() if key not in ("BYTEBPE_DATA_DIR", "TIKTOKEN_CACHE_DIR")}
    finished = subprocess.run(
        [sys.executable, str(BENCH_ENCODE), "--quick", "--sections", "peers", "--isolation", "none",
         "--peers", "--json", str(raw)], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert f"corpora: {bench.SAMPLE_DIR}" in finished.stdout
    peers = json.loads(raw.read_text())["peers"]
    assert [r["corpus"] for r in peers] == ["english.txt", "code.txt", "multilingual.txt"]
    for result in peers:
        assert result["rates"]["bytebpe list fresh"]["mb_per_s"] > 0 and result["excluded"] == {}


def test_bench_encode_times_each_library_in_a_process_of_its_own(data_dir, corpus_dir, tmp_path):
    # The default of a full run (--quick turns it off): bytebpe was measured 15-20% slower in a process where
    # another library had encoded text before it, so each library's timings run in a spawned interpreter.
    pytest.importorskip("tiktoken")
    raw = tmp_path / "raw.json"
    finished = subprocess.run(
        [sys.executable, str(BENCH_ENCODE), "--quick", "--sections", "peers", "--isolation", "process",
         "--mb", "0.1", "--peer-mb", "0.05", "--corpus-dir", str(corpus_dir), "--corpora", "code.txt",
         "--peers", "--json", str(raw)],
        capture_output=True, text=True, env={**os.environ, "BYTEBPE_DATA_DIR": str(data_dir)}, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "ran in a fresh process of its own" in finished.stdout
    (result,) = json.loads(raw.read_text())["peers"]
    assert result["isolation"] == "process" and result["excluded"] == {}
    for key in ("bytebpe list fresh", "bytebpe list primed", "bytebpe loop_list fresh", "tiktoken list fresh",
                "tiktoken batch_list fresh"):
        assert result["rates"][key]["mb_per_s"] > 0
    assert result["scaling"]["list"] > 0 and result["bytebpe_primed_hit_rate"] is not None
    pids = result["timing_pid"]     # the process each library was timed in: two, neither of them the same
    assert set(pids) == {"bytebpe", "tiktoken"} and pids["bytebpe"] != pids["tiktoken"]


def run_peers_with_quicktok_as(bench_encode, builder, data_dir, corpus_dir, monkeypatch, capsys) -> str:
    """The output of a quick peers section with `builder` standing in for quicktok's."""
    monkeypatch.setattr(bench_encode, "PEER_BUILDERS", {"quicktok": builder})
    monkeypatch.setenv("BYTEBPE_DATA_DIR", str(data_dir))
    assert bench_encode.main(["--quick", "--sections", "peers", "--mb", "0.1", "--peer-mb", "0.05",
                              "--corpus-dir", str(corpus_dir), "--corpora", "english_prose.txt",
                              "--peers", "quicktok"]) == 0
    return capsys.readouterr().out


def test_bench_encode_reports_an_inexact_peer_where_it_differs_and_does_not_time_it(data_dir, corpus_dir,
                                                                                   monkeypatch, capsys):
    pytest.importorskip("tiktoken")
    bench_encode = load_bench_encode()
    made: list[object] = []

    def wrong_peer(encoding, vocab_dir):
        enc = bytebpe.get_encoding(encoding)

        def make():
            made.append(object())
            return enc

        def off_by_one(ids):
            return [*ids[:5], ids[5] + 1, *ids[6:]]

        return bench_encode.Peer("quicktok", "9.9", make, lambda e, text: off_by_one(e.encode_ordinary(text)),
                                 encode_numpy=lambda e, text: e.encode_to_numpy(text), note="a fake")

    out = run_peers_with_quicktok_as(bench_encode, wrong_peer, data_dir, corpus_dir, monkeypatch, capsys)
    assert "quicktok list not timed on cl100k_base / english_prose.txt: inexact: input 0, first difference " \
           "at token 5" in out
    row = next(line for line in out.splitlines() if line.startswith("| cl100k_base | english_prose.txt")
               and "inexact" in line)
    assert row.count("inexact") == 1
    # One object made when the peer is built (to see that it loads), one to check the list output (then not
    # timed), one to check the numpy output, and a fresh one for its one timed run (--quick: one repeat).
    assert len(made) == 4


def test_bench_encode_notes_a_peer_that_cannot_be_made_and_goes_on(data_dir, corpus_dir, monkeypatch, capsys):
    # A distribution installed under a peer's name with another API (quicktok 0.2 has no Tokenizer) fails
    # when its object is made: the run says so and times the others, instead of stopping halfway.
    pytest.importorskip("tiktoken")
    bench_encode = load_bench_encode()

    def other_api(encoding, vocab_dir):
        def make():
            raise AttributeError("module 'quicktok' has no attribute 'Tokenizer'")
        return bench_encode.Peer("quicktok", "0.2.0", make, lambda tok, text: [])

    out = run_peers_with_quicktok_as(bench_encode, other_api, data_dir, corpus_dir, monkeypatch, capsys)
    assert "quicktok: no cl100k_base (AttributeError: module 'quicktok' has no attribute 'Tokenizer')" in out
    assert "| cl100k_base | english_prose.txt |" in out
