"""Sharded outputs (`encode_files(shard_tokens=N)`, `bytebpe encode --shard-tokens N`): numbered shards of at
most N tokens, each a set that loads and decodes by itself, an index listing them, documents whole unless
longer than a shard, the same shards whatever the batches, and nothing stale or half-written left behind."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytebpe
from bytebpe import cli
from bytebpe.tokens import arrays
from bytebpe.atomic_write import OutputInUseError
from bytebpe.tokens.layout import load_token_files, load_token_shards, read_index
from bytebpe.tokens.writer import TokenSetWriter

from ..integration.test_datasets import no_files_but, read_jsonl

ENGLISH = "docs_english.jsonl"


def fake_meta(counts, extra):
    return bytebpe.TokenFilesMeta(
        encoding="test", vocabulary_sha256="0" * 64, n_vocab=1000, dtype="uint32", format="npy",
        documents=counts.documents, tokens=counts.tokens, bytes=counts.bytes, skipped=0, eot=False,
        eot_token=None, field="text", lines=False, inputs=(), bytebpe_version=bytebpe.__version__,
        created="2026-11-30T00:00:00Z", extra=extra)


def write_sharded(prefix: Path, documents: list[list[int]], shard_tokens: int, batches: list[int]) -> None:
    """Write `documents` through a TokenSetWriter, fed in batches of the given numbers of documents."""
    with TokenSetWriter(os.fspath(prefix), dtype=np.uint32, format="npy", shard_tokens=shard_tokens) as out:
        start = 0
        for size in batches:
            chunk = documents[start:start + size]
            start += size
            ids = np.array([i for doc in chunk for i in doc], np.uint32)
            offsets = np.concatenate([[0], np.cumsum([len(doc) for doc in chunk])]).astype(np.int64)
            out.write(ids, offsets, np.array([len(doc) * 3 for doc in chunk], np.int64))
        out.finish(fake_meta)
        out.commit()


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(0, 40), max_size=30), shard_tokens=st.integers(1, 25), data=st.data())
def test_packing_keeps_documents_whole_unless_longer_than_a_shard_whatever_the_batches(
        tmp_path_factory, lengths, shard_tokens, data):
    documents = [[(d * 1000 + i) for i in range(n)] for d, n in enumerate(lengths)]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(documents)), max_size=5)))
    batches = np.diff([0, *cuts, len(documents)]).tolist()
    folder = tmp_path_factory.mktemp("shards")
    write_sharded(folder / "a", documents, shard_tokens, [len(documents)])
    write_sharded(folder / "b", documents, shard_tokens, batches)

    a, b = load_token_shards(folder / "a"), load_token_shards(folder / "b")
    # The same shards whatever the batches.
    assert [s.tokens.tolist() for s in a.shards] == [s.tokens.tolist() for s in b.shards]
    assert [s.offsets.tolist() for s in a.shards] == [s.offsets.tolist() for s in b.shards]
    # At most N tokens a shard; every token once, in order; the documents joined again are the documents.
    assert all(len(s.tokens) <= shard_tokens for s in a.shards)
    assert [i for s in a.shards for i in s.tokens.tolist()] == [i for doc in documents for i in doc]
    assert [d.tolist() for d in a.documents()] == documents
    # A document no longer than a shard is never cut; one that is longer is cut only at shard ends.
    spans = [span.tolist() for s in a.shards for span in (s.document(i) for i in range(len(s)))]
    for doc in documents:
        if len(doc) <= shard_tokens:
            assert doc in spans
    # Greedy: a shard is closed only when the next document (or its first part) did not fit.
    for record, nxt in zip(a.index.shards, a.index.shards[1:]):
        if not nxt.continues:
            first_of_next = documents[nxt.first_document]
            assert record.tokens + len(first_of_next) > shard_tokens
    index = a.index
    assert index.meta.documents == len(documents) and index.meta.tokens == sum(lengths)
    assert index.meta.bytes == 3 * sum(lengths) == sum(r.bytes for r in index.shards)
    assert [r.tokens for r in index.shards] == [len(s.tokens) for s in a.shards]


def test_shards_of_the_corpus_are_the_unsharded_output_cut_at_document_ends(tmp_path, corpus_dir):
    path = corpus_dir / ENGLISH
    whole = bytebpe.encode_files(path, encoding="cl100k_base", output=tmp_path / "whole", eot=True)
    sharded = bytebpe.encode_files(path, encoding="cl100k_base", output=tmp_path / "s", eot=True,
                                   shard_tokens=200_000, batch_bytes=1 << 19)
    again = bytebpe.encode_files(path, encoding="cl100k_base", output=tmp_path / "t", eot=True,
                                 shard_tokens=200_000, workers=1)
    reference = load_token_files(tmp_path / "whole")
    shards = load_token_shards(tmp_path / "s")
    assert sharded.shards == {str(tmp_path / "s"): len(shards)} and len(shards) > 3
    assert np.array_equal(np.concatenate([s.tokens for s in shards.shards]), reference.tokens)
    joined = list(shards.documents())
    assert len(joined) == len(reference) == whole.documents
    assert all(np.array_equal(doc, reference.document(i)) for i, doc in enumerate(joined))
    for shard, other in zip(shards.shards, load_token_shards(tmp_path / "t").shards):
        assert np.array_equal(shard.tokens, other.tokens) and np.array_equal(shard.offsets, other.offsets)
        assert shard.meta.inputs[0].tokens == shard.meta.tokens == len(shard.tokens) <= 200_000
        assert shard.meta.extra["shards"] == len(shards) and shard.meta.extra["index"] == "s.index.json"
    index = read_index(tmp_path / "s")
    assert (index.meta.documents, index.meta.tokens, index.meta.bytes) == (whole.documents, whole.tokens, whole.bytes)
    assert index.meta.inputs == reference.meta.inputs
    assert again.tokens == whole.tokens


def test_a_document_longer_than_a_shard_is_cut_and_its_parts_marked(tmp_path, tiktoken_encoding):
    lines = ("word" + " word" * 899, "short one", "word" + " word" * 29)
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    reference = tiktoken_encoding("gpt2")
    expected = [reference.encode_ordinary(line) for line in lines]
    assert [len(ids) for ids in expected] == [900, 2, 30]
    bytebpe.encode_files(tmp_path / "in.txt", encoding="gpt2", lines=True, output=tmp_path / "o", shard_tokens=400)
    shards = load_token_shards(tmp_path / "o")
    assert [len(s.tokens) for s in shards.shards] == [400, 400, 100 + 2 + 30]
    assert [r.continues for r in shards.index.shards] == [False, True, True]
    assert [r.first_document for r in shards.index.shards] == [0, 0, 0]
    assert [len(s) for s in shards.shards] == [1, 1, 3]
    assert [d.tolist() for d in shards.documents()] == expected
    # Its bytes count once, in the shard where it starts.
    assert [r.bytes for r in shards.index.shards] == [len(lines[0]), 0, len(lines[1]) + len(lines[2])]


def test_load_tokens_opens_every_layout_and_numbers_documents_across_shards(tmp_path, tiktoken_encoding, capsys):
    from bytebpe import cli

    lines = ["short", "word" + " word" * 899, "two words", "word" + " word" * 450, "x", "word" + " word" * 29]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    expected = [tiktoken_encoding("gpt2").encode_ordinary(line) for line in lines]
    bytebpe.encode_files(tmp_path / "in.txt", encoding="gpt2", lines=True, output=tmp_path / "s", shard_tokens=300)
    shards = bytebpe.load_tokens(tmp_path / "s")
    assert isinstance(shards, bytebpe.TokenShards) and shards.n_documents == len(lines)
    assert any(record.continues for record in shards.index.shards)
    assert [shards.document(i).tolist() for i in range(len(lines))] == expected
    assert [shards.document(-i).tolist() for i in range(1, len(lines) + 1)] == expected[::-1]
    with pytest.raises(IndexError, match="there are 6"):
        shards.document(6)
    # decode of a sharded set: all of it, or one document of the whole set.
    assert cli.main(["decode", str(tmp_path / "s")]) == 0
    assert capsys.readouterr().out == "".join(lines)
    assert cli.main(["decode", str(tmp_path / "s"), "--doc", "1"]) == 0
    assert capsys.readouterr().out == lines[1]
    bytebpe.encode_files(tmp_path / "in.txt", encoding="gpt2", lines=True, output=tmp_path / "w")
    assert isinstance(bytebpe.load_tokens(tmp_path / "w"), bytebpe.TokenFiles)
    bytebpe.encode_files(tmp_path / "in.txt", encoding="gpt2", lines=True, output=tmp_path / "v", val_fraction=0.5,
                         seed=3)
    split = bytebpe.load_tokens(tmp_path / "v")
    assert set(split) == {"train", "val"} and sum(len(part) for part in split.values()) == len(lines)
    with pytest.raises(FileNotFoundError):
        bytebpe.load_tokens(tmp_path / "nothing")


def test_val_fraction_with_shards_shards_each_split_and_records_the_split(tmp_path, corpus_dir):
    path = corpus_dir / ENGLISH
    plain = bytebpe.encode_files(path, encoding="cl100k_base", output=tmp_path / "p", val_fraction=0.2, seed=3)
    bytebpe.encode_files(path, encoding="cl100k_base", output=tmp_path / "s", val_fraction=0.2, seed=3,
                         shard_tokens=300_000)
    for split in ("train", "val"):
        whole = load_token_files(tmp_path / f"p.{split}")
        assert whole.meta.extra == {"split": split, "val_fraction": 0.2, "seed": 3}
        shards = load_token_shards(tmp_path / f"s.{split}")
        assert np.array_equal(np.concatenate([s.tokens for s in shards.shards]), whole.tokens)
        assert shards.index.meta.extra == whole.meta.extra
        assert shards.index.meta.documents == plain.splits[split].documents
        assert all(s.meta.extra["split"] == split for s in shards.shards)


def test_a_new_run_replaces_every_file_of_an_earlier_one_and_nothing_else(tmp_path, corpus_dir):
    path, out = corpus_dir / ENGLISH, tmp_path / "out"
    out.mkdir()
    (out / "x.00099.notes.txt").write_text("not ours")      # not a name bytebpe gives: never touched
    bytebpe.encode_files(path, encoding="cl100k_base", output=out / "x", shard_tokens=150_000)
    many = sorted(p.name for p in out.iterdir())
    assert len(many) > 3 * 5
    summary = bytebpe.encode_files(path, encoding="cl100k_base", output=out / "x", shard_tokens=600_000)
    n = summary.shards[str(out / "x")]
    assert n == 2 and len(summary.removed_earlier) == len(many) - 1 - 3 * n - 1    # the note, the new files
    no_files_but(out, "x.00099.notes.txt", "x.index.json",
                 *(f"x.{i:05d}.{kind}" for i in range(n) for kind in ("tokens.npy", "offsets.npy", "meta.json")))
    bytebpe.encode_files(path, encoding="cl100k_base", output=out / "x")        # unsharded: the shards go
    no_files_but(out, "x.00099.notes.txt", "x.tokens.npy", "x.offsets.npy", "x.meta.json")
    bytebpe.encode_files(path, encoding="cl100k_base", output=out / "x", shard_tokens=10**9)   # and back
    no_files_but(out, "x.00099.notes.txt", "x.index.json", "x.00000.tokens.npy", "x.00000.offsets.npy",
                 "x.00000.meta.json")


def test_a_new_run_replaces_an_earlier_split_or_whole_layout_under_the_same_prefix(tmp_path, corpus_dir, capsys):
    from bytebpe import cli

    path, out = corpus_dir / ENGLISH, tmp_path / "out"
    out.mkdir()
    bytebpe.encode_files(path, encoding="gpt2", output=out / "own.train")   # a set of its own, named so
    whole = ("x.tokens.npy", "x.offsets.npy", "x.meta.json")
    own = ("own.train.tokens.npy", "own.train.offsets.npy", "own.train.meta.json")
    split = tuple(f"x.{part}.{kind}" for part in ("train", "val") for kind in ("tokens.npy", "offsets.npy", "meta.json"))
    bytebpe.encode_files(path, encoding="gpt2", output=out / "x")
    bytebpe.encode_files(path, encoding="gpt2", output=out / "x", val_fraction=0.1)     # whole -> split
    no_files_but(out, *own, *split)
    bytebpe.encode_files(path, encoding="gpt2", output=out / "x", val_fraction=0.1, shard_tokens=300_000)
    assert (out / "x.train.index.json").is_file() and not (out / "x.train.meta.json").exists()
    summary = bytebpe.encode_files(path, encoding="gpt2", output=out / "x")             # split -> whole
    assert summary.removed_earlier
    no_files_but(out, *own, *whole)
    bytebpe.encode_files(path, encoding="gpt2", output=out / "own")     # whole at "own": own.train is not its split
    assert all((out / name).is_file() for name in own)
    # info on a split run's prefix shows both parts; load and decode name them.
    bytebpe.encode_files(path, encoding="gpt2", output=out / "x", val_fraction=0.1)
    assert cli.main(["info", str(out / "x")]) == 0
    shown = capsys.readouterr().out
    assert f"{out / 'x.train'}:" in shown and f"{out / 'x.val'}:" in shown
    assert cli.main(["info", str(out / "x"), "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {str(out / "x.train"), str(out / "x.val")}
    with pytest.raises(FileNotFoundError, match=r"x was split into .*x\.train and .*x\.val"):
        bytebpe.load_token_files(out / "x")
    assert cli.main(["decode", str(out / "x")]) == 1
    assert "decode one of them" in capsys.readouterr().err


def test_a_failed_run_leaves_no_shard_and_keeps_the_earlier_output(tmp_path, corpus_dir, monkeypatch):
    path, out = corpus_dir / ENGLISH, tmp_path / "out"
    bytebpe.encode_files(path, encoding="cl100k_base", output=out / "x", shard_tokens=400_000)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    writes = []
    real_write = arrays.TokenFileWriter.write

    def failing_write(self, items):
        writes.append(1)
        if len(writes) == 12:
            raise OSError("disk full")
        real_write(self, items)

    monkeypatch.setattr(arrays.TokenFileWriter, "write", failing_write)
    with pytest.raises(OSError, match="disk full"):
        bytebpe.encode_files(path, encoding="cl100k_base", output=out / "x", shard_tokens=100_000,
                             batch_bytes=1 << 19)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_partial_shard_files_of_a_dead_run_are_removed_and_a_live_runs_kept(tmp_path):
    (tmp_path / "in.txt").write_text("hello world")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    leftovers = [tmp_path / f".x.00003.tokens.npy.{dead_pid}.0123456789ab.partial",
                 tmp_path / f".x.index.json.{dead_pid}.0123456789ab.partial"]
    live = tmp_path / f".x.00003.tokens.npy.{os.getppid()}.0123456789ab.partial"
    for path in (*leftovers, live):
        path.write_bytes(b"x")
    summary = bytebpe.encode_files(tmp_path / "in.txt", encoding="gpt2", output=tmp_path / "x", shard_tokens=5)
    assert sorted(summary.removed_leftovers) == sorted(leftovers)
    assert live.exists()


def test_loading_a_sharded_set_as_one_or_the_reverse_says_what_to_call(tmp_path):
    (tmp_path / "in.txt").write_text("hello world")
    bytebpe.encode_files(tmp_path / "in.txt", encoding="gpt2", output=tmp_path / "s", shard_tokens=5)
    bytebpe.encode_files(tmp_path / "in.txt", encoding="gpt2", output=tmp_path / "w")
    with pytest.raises(FileNotFoundError, match=r"written in shards .*load_token_shards"):
        bytebpe.load_token_files(tmp_path / "s")
    with pytest.raises(FileNotFoundError, match=r"not a sharded set \(load it with load_token_files\)"):
        bytebpe.load_token_shards(tmp_path / "w")
    assert bytebpe.load_token_files(tmp_path / "s.00000").document(0).tolist() == [31373, 995]


def test_an_index_that_disagrees_with_its_shards_is_an_error(tmp_path):
    (tmp_path / "in.txt").write_text("hello world\nand more words here\n")
    bytebpe.encode_files(tmp_path / "in.txt", encoding="gpt2", lines=True, output=tmp_path / "s", shard_tokens=3)
    index_path = tmp_path / "s.index.json"
    record = json.loads(index_path.read_text())
    record["shards"][0]["tokens"] += 1
    record["shards"][1]["tokens"] -= 1
    index_path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="does not match"):
        load_token_shards(tmp_path / "s")
    record["shards"][0]["tokens"] += 5
    index_path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="the shards hold"):
        load_token_shards(tmp_path / "s")


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_shard_tokens_must_be_a_positive_int(tmp_path, bad):
    (tmp_path / "in.txt").write_text("x")
    with pytest.raises(ValueError, match="shard_tokens must be a positive int"):
        bytebpe.encode_files(tmp_path / "in.txt", encoding="gpt2", output=tmp_path / "o", shard_tokens=bad)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_cli_shard_tokens_info_and_decode(tmp_path, corpus_dir, capsys):
    path = corpus_dir / ENGLISH
    assert cli.main(["encode", str(path), "--encoding", "o200k_base", "-o", str(tmp_path / "x"), "--shard-tokens",
                     "500000", "--format", "bin"]) == 0
    out = capsys.readouterr().err
    assert f"{tmp_path / 'x'}: 3 shards, listed in {tmp_path / 'x'}.index.json" in out
    assert cli.main(["info", str(tmp_path / "x")]) == 0
    assert "shards             3 of at most 500,000 tokens" in capsys.readouterr().out
    assert cli.main(["info", str(tmp_path / "x.index.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["shard_tokens"] == 500_000
    assert cli.main(["decode", str(tmp_path / "x")]) == 0      # the whole set, shard after shard
    assert capsys.readouterr().out == "".join(read_jsonl(path))
    # A shard decodes by itself, with the encoding its own sidecar records.
    second = load_token_shards(tmp_path / "x").index.shards[1]
    assert not second.continues
    assert cli.main(["decode", str(tmp_path / "x.00001.bin"), "--doc", "0"]) == 0
    assert capsys.readouterr().out == read_jsonl(path)[second.first_document]
    with pytest.raises(SystemExit):
        cli.main(["encode", str(path), "--encoding", "gpt2", "-o", str(tmp_path / "y"), "--shard-tokens", "0"])
    assert "--shard-tokens: " in capsys.readouterr().err
    assert not list(tmp_path.glob("y*"))


def test_a_set_that_only_looks_like_a_shard_is_never_removed(tmp_path):
    (tmp_path / "in.txt").write_text("hello world")
    bytebpe.encode_files(tmp_path / "in.txt", encoding="gpt2", output=tmp_path / "data.00001")   # the user's own
    mine = sorted(p.name for p in tmp_path.iterdir())
    bytebpe.encode_files(tmp_path / "in.txt", encoding="gpt2", output=tmp_path / "data", shard_tokens=10)
    bytebpe.encode_files(tmp_path / "in.txt", encoding="gpt2", output=tmp_path / "data")
    assert set(mine) <= {p.name for p in tmp_path.iterdir()}
    assert load_token_files(tmp_path / "data.00001").document(0).tolist() == [31373, 995]


# ---- one job per output --------------------------------------------------------------------------------------

HOLD_THE_LOCK = """
import sys, time
from bytebpe.atomic_write import locked_output
with locked_output(sys.argv[1]):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_second_job_on_an_output_being_written_is_refused_and_writes_nothing(tmp_path, corpus_dir):
    prefix = tmp_path / "out"
    # Another job, in another process, holding the output's lock (as `bytebpe encode` does while it writes).
    holder = subprocess.Popen([sys.executable, "-c", HOLD_THE_LOCK, os.fspath(prefix)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputInUseError,
                           match=rf"another bytebpe job is writing .*out.* \(process {holder.pid}\)"):
            bytebpe.encode_files(corpus_dir / ENGLISH, encoding="cl100k_base", output=prefix, shard_tokens=5000)
        no_files_but(tmp_path, ".out.bytebpe-lock")
        result = subprocess.run([sys.executable, "-m", "bytebpe", "encode", os.fspath(corpus_dir / ENGLISH), "-o",
                                 os.fspath(prefix), "--encoding", "cl100k_base", "--shard-tokens", "5000", "-q"],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode != 0
        assert "another bytebpe job is writing" in result.stderr and "Traceback" not in result.stderr
    finally:
        holder.kill()       # as a crash would: the system drops the lock with the process
        holder.wait()
    summary = bytebpe.encode_files(corpus_dir / ENGLISH, encoding="cl100k_base", output=prefix, shard_tokens=5000)
    n_shards = summary.shards[os.fspath(prefix)]
    assert n_shards > 3 and len(list(tmp_path.glob("out.*.tokens.npy"))) == n_shards
    assert not (tmp_path / ".out.bytebpe-lock").exists()    # the finished job removed its lock file


def test_jobs_on_different_outputs_of_one_folder_do_not_block_each_other(tmp_path, corpus_dir):
    from bytebpe.atomic_write import locked_output

    with locked_output(tmp_path / "a"):
        bytebpe.encode_files(corpus_dir / ENGLISH, encoding="cl100k_base", output=tmp_path / "b")
        with pytest.raises(OutputInUseError):
            with locked_output(tmp_path / "a"):
                pass
    with locked_output(tmp_path / "a"):     # free again once the block is left
        pass
