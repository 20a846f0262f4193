"""bytebpe.ray on a local Ray cluster this module starts (2 CPUs): the token column holds the local encoder's ids,
and write_token_files writes the arrays `bytebpe encode` writes, byte for byte, for the same documents — read by
Ray from the shared corpora's JSONL and a Parquet copy, with and without end-of-text ids and shards; bad input
fails with nothing left behind; a worker killed mid-job is retried and the output is still the same.
`bytebpe encode --engine ray` writes the local engine's files (arrays byte for byte, sidecars equal but for
the time), names bad documents by file and line, and counts skipped ones and replaced bytes across workers.

Slow (Ray's start takes ~10 s): `.ci/run` runs it; `pip install '.[ray]'` to run it elsewhere.
"""
from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import bytebpe
import bytebpe.readers
from bytebpe.tokens.layout import read_index

# One worker runs the module on one cluster, first thing (tests/conftest.py, the long groups).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

CORPORA = ["docs_english.jsonl", "docs_code.jsonl", "docs_multilingual.jsonl"]


@pytest.fixture(scope="module")
def ray():
    if os.environ.get("BYTEBPE_REQUIRE_DATA") == "1":
        import ray          # CI installs the `ray` extra: its absence is a failure there
    else:
        ray = pytest.importorskip("ray", reason="needs Ray Data: pip install 'bytebpe[ray]'")
    import ray.data

    import bytebpe.ray

    # Ray 2.60's threaded file listing can fail on a first-import race (see settle_fsspec_http_import): settled
    # here and in every worker.
    bytebpe.ray.settle_fsspec_http_import()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True,
             runtime_env={"worker_process_setup_hook": "bytebpe.ray.settle_fsspec_http_import"})
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()


@pytest.fixture(autouse=True)
def time_limit():
    """A Ray job that hangs fails the test after 300 s instead of holding CI until its own limit."""
    def on_alarm(signum, frame):
        raise TimeoutError("a Ray test ran past 300 s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(300)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def texts_of(path: Path) -> list[str]:
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def test_the_token_column_holds_the_local_ids_as_an_arrow_list_of_the_smallest_fitting_type(ray, corpus_dir):
    import bytebpe.ray

    texts = texts_of(corpus_dir / "docs_multilingual.jsonl")[:200]
    ds = ray.data.from_items([{"text": text, "n": i} for i, text in enumerate(texts)])
    for name, value_type in [("gpt2", "uint16"), ("o200k_base", "uint32")]:
        enc = bytebpe.get_encoding(name)
        tokenized = bytebpe.ray.tokenize(ds, name, eot=True).materialize()     # one Ray job, read twice
        batch = tokenized.take_batch(5, batch_format="pyarrow")
        assert str(batch.column("tokens").type) == f"list<item: {value_type}>"
        rows = tokenized.take_all()
        assert sorted(row["n"] for row in rows) == list(range(len(texts)))      # other columns are kept
        for row in rows:
            assert list(row["tokens"]) == enc.encode_ordinary(texts[row["n"]]) + [enc.eot_token]


def test_special_token_text_is_ordinary_unless_allowed(ray):
    import bytebpe.ray

    enc = bytebpe.get_encoding("cl100k_base")
    ds = ray.data.from_items([{"body": "a <|endoftext|> b"}])
    (ordinary,) = bytebpe.ray.tokenize(ds, enc, column="body", output_column="ids").take_all()
    (special,) = bytebpe.ray.tokenize(ds, enc, column="body", output_column="ids",
                                      allowed_special={"<|endoftext|>"}).take_all()
    assert list(ordinary["ids"]) == enc.encode_ordinary("a <|endoftext|> b")
    assert list(special["ids"]) == enc.encode("a <|endoftext|> b", allowed_special="all")
    with pytest.raises(ValueError, match="does not have"):
        bytebpe.ray.tokenize(ds, enc, column="body", allowed_special={"<|im_start|>"})


def test_a_trained_encoding_travels_by_value_from_its_saved_file(ray, tmp_path):
    import bytebpe.ray

    mine = bytebpe.train(["hello world, hello bytebpe"] * 20, 300, name="mine_for_ray")
    mine.save(tmp_path / "mine.json")
    ds = ray.data.from_items([{"text": "hello world"}])
    (row,) = bytebpe.ray.tokenize(ds, str(tmp_path / "mine.json")).take_all()
    assert list(row["tokens"]) == mine.encode_ordinary("hello world")


# Each source with one of the two output modes (the reading and the writing are independent steps; every Ray
# job costs seconds of start-up, so the pairs, not their product).
@pytest.mark.parametrize(("source", "eot"), [("jsonl", False), ("parquet", True)])
def test_write_token_files_gives_the_local_commands_arrays_byte_for_byte(ray, corpus_dir, tmp_path, eot, source):
    import pyarrow as pa
    import pyarrow.parquet as pq

    import bytebpe.ray

    inputs = [corpus_dir / name for name in CORPORA]
    shard_tokens = 700_000 if eot else None     # with eot, in shards too
    local = bytebpe.encode_files(inputs, encoding="o200k_base", output=tmp_path / "local" / "o", eot=eot,
                                 shard_tokens=shard_tokens)
    if source == "jsonl":
        ds = ray.data.read_json([str(path) for path in inputs])
    else:
        (tmp_path / "parquet").mkdir()
        for i, path in enumerate(inputs):
            pq.write_table(pa.table({"text": texts_of(path)}), tmp_path / "parquet" / f"{i}.parquet")
        ds = ray.data.read_parquet(sorted(str(path) for path in (tmp_path / "parquet").iterdir()))
    if source == "jsonl":
        meta = bytebpe.ray.write_token_files(ds, tmp_path / "ray" / "o", encoding="o200k_base", eot=eot,
                                             batch_size=100, shard_tokens=shard_tokens)
    else:   # the output options as one object
        options = bytebpe.OutputOptions(tmp_path / "ray" / "o", shard_tokens=shard_tokens)
        meta = bytebpe.ray.write_token_files(ds, options, encoding="o200k_base", eot=eot, batch_size=100)
    names = sorted(os.listdir(tmp_path / "local"))
    assert sorted(os.listdir(tmp_path / "ray")) == names
    assert len(names) == (3 * local.shards[str(tmp_path / "local" / "o")] + 1 if eot else 3)
    for name in names:
        if name.endswith(".npy"):
            assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    if eot:
        ray_index, local_index = (read_index(tmp_path / where / "o") for where in ("ray", "local"))
        assert ray_index.shards == local_index.shards and ray_index.meta == meta
        return
    recorded = bytebpe.load_token_files(tmp_path / "ray" / "o").meta
    assert recorded == meta
    for key in ("encoding", "vocabulary_sha256", "n_vocab", "dtype", "documents", "tokens", "bytes", "eot",
                "eot_token"):
        assert getattr(meta, key) == getattr(local, key) if hasattr(local, key) else True
    assert (meta.documents, meta.tokens, meta.bytes) == (local.documents, local.tokens, local.bytes)
    assert meta.extra["engine"] == "ray"


def test_bad_input_fails_naming_the_column_and_leaves_nothing(ray, tmp_path):
    import bytebpe.ray

    ds = ray.data.from_items([{"text": "fine"}, {"text": None}, {"text": "also fine"}])
    with pytest.raises(Exception, match="holds a NoneType in row"):
        bytebpe.ray.write_token_files(ds, tmp_path / "o", encoding="gpt2")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(Exception, match="no column 'body'"):
        bytebpe.ray.write_token_files(ray.data.from_items([{"text": "x"}]), tmp_path / "o", encoding="gpt2",
                                      column="body")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="writes one set: split the dataset first"):
        bytebpe.ray.write_token_files(ray.data.from_items([{"text": "x"}]),
                                      bytebpe.OutputOptions(tmp_path / "o", val_fraction=0.1), encoding="gpt2")
    assert list(tmp_path.iterdir()) == []


def die_once(batch, marker: str):
    """A step before tokenizing whose worker process dies the first time it runs (the marker says so)."""
    if not os.path.exists(marker):
        Path(marker).write_text("died")
        os._exit(1)
    return batch


def test_a_worker_killed_mid_job_is_retried_and_the_output_is_unchanged(ray, corpus_dir, tmp_path):
    import bytebpe.ray

    path = corpus_dir / "docs_code.jsonl"
    local = bytebpe.encode_files(path, encoding="cl100k_base", output=tmp_path / "local" / "o")
    ds = ray.data.read_json(str(path)).map_batches(die_once, fn_kwargs={"marker": str(tmp_path / "marker")},
                                                   batch_size=200)
    bytebpe.ray.write_token_files(ds, tmp_path / "ray" / "o", encoding="cl100k_base", batch_size=200)
    assert (tmp_path / "marker").read_text() == "died"      # a worker did die
    for suffix in (".tokens.npy", ".offsets.npy"):
        assert (tmp_path / "ray" / f"o{suffix}").read_bytes() == (tmp_path / "local" / f"o{suffix}").read_bytes()
    assert local.documents == int(np.load(tmp_path / "ray" / "o.offsets.npy").size - 1)


# ==== bytebpe encode --engine ray ================================================================


def assert_same_outputs(ray_dir: Path, local_dir: Path) -> None:
    """Every array byte for byte; every sidecar and index equal but for the time it was written."""
    names = sorted(os.listdir(local_dir))
    assert sorted(os.listdir(ray_dir)) == names
    for name in names:
        mine, theirs = (ray_dir / name).read_bytes(), (local_dir / name).read_bytes()
        if name.endswith(".json"):
            mine, theirs = (json.loads(data) for data in (mine, theirs))
            mine["created"] = theirs["created"]
        assert mine == theirs, name


PLAIN = []
SHARDED = ["--eot", "--shard-tokens", "300000", "--val-fraction", "0.1"]
CAPPED = ["--eot-token", "<|endofprompt|>", "--bos-token", "199999", "--max-tokens", "700"]


# Every option set once and each source at least once (the pairs, not the product: see above).
@pytest.mark.parametrize(("source", "options"), [("jsonl", PLAIN), ("parquet", SHARDED), ("jsonl", CAPPED)],
                         ids=["jsonl-plain", "parquet-sharded", "jsonl-capped"])
def test_encode_engine_ray_writes_the_local_engines_files(ray, corpus_dir, tmp_path, options, source):
    from bytebpe import cli

    if source == "jsonl":
        inputs = [str(corpus_dir / name) for name in CORPORA]
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        (tmp_path / "in").mkdir()
        for i, name in enumerate(CORPORA):
            pq.write_table(pa.table({"text": texts_of(corpus_dir / name)}), tmp_path / "in" / f"{i}.parquet",
                           row_group_size=100)
        inputs = [str(tmp_path / "in")]
    common = ["--encoding", "o200k_base", "-q", *options]
    assert cli.main(["encode", *inputs, *common, "-o", str(tmp_path / "local" / "o")]) == 0
    assert cli.main(["encode", *inputs, *common, "-o", str(tmp_path / "ray" / "o"), "--engine", "ray",
                     "--workers", "2"]) == 0
    assert_same_outputs(tmp_path / "ray", tmp_path / "local")


def write_with_bad_lines(path: Path, texts: list[str], bad_every: int) -> int:
    """`texts` as JSONL with a bad line (a number, or not JSON) every `bad_every` lines; returns how many."""
    lines, bad = [], 0
    for i, text in enumerate(texts):
        if i % bad_every == 3:
            lines.append('{"text": 5}' if bad % 2 else '{"text": "unterminated')
            bad += 1
        lines.append(json.dumps({"text": text}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return bad


def test_bad_input_under_ray_is_named_by_file_and_line_and_skip_bad_counts_across_workers(ray, corpus_dir,
                                                                                          tmp_path):
    inputs = []
    expected_bad = 0
    for i, name in enumerate(CORPORA):
        inputs.append(tmp_path / f"{i}.jsonl")
        expected_bad += write_with_bad_lines(inputs[-1], texts_of(corpus_dir / name), 97)
    with pytest.raises(bytebpe.BadDocumentError, match=r"0\.jsonl:4: "):
        bytebpe.encode_files(inputs, encoding="gpt2", output=tmp_path / "out" / "o", engine="ray")
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []

    local = bytebpe.encode_files(inputs, encoding="gpt2", output=tmp_path / "local" / "o", skip_bad=True)
    remote = bytebpe.encode_files(inputs, encoding="gpt2", output=tmp_path / "ray" / "o", skip_bad=True,
                                  engine="ray", workers=2, batch_bytes=1 << 18)
    assert remote.skipped == local.skipped == expected_bad > 10
    assert remote.skipped_examples == local.skipped_examples
    assert [f.skipped for f in remote.files] == [f.skipped for f in local.files]
    assert_same_outputs(tmp_path / "ray", tmp_path / "local")


def test_replaced_bytes_under_ray_are_counted_as_locally(ray, tmp_path):
    (tmp_path / "a.txt").write_bytes(b"fine line\nbad \xff byte\nanother \xfe\xfd one\n" * 50)
    options = dict(encoding="gpt2", lines=True, errors="replace")
    local = bytebpe.encode_files(tmp_path / "a.txt", output=tmp_path / "local" / "o", **options)
    remote = bytebpe.encode_files(tmp_path / "a.txt", output=tmp_path / "ray" / "o", engine="ray", **options)
    assert (remote.replaced, remote.replaced_bytes) == (local.replaced, local.replaced_bytes) == (100, 150)
    assert remote.replaced_examples == local.replaced_examples
    assert_same_outputs(tmp_path / "ray", tmp_path / "local")


def test_engine_ray_refuses_standard_input_and_address_needs_the_ray_engine(tmp_path, capsys):
    from bytebpe import cli

    with pytest.raises(ValueError, match="standard input cannot be one"):
        bytebpe.encode_files("-", encoding="gpt2", output=tmp_path / "o", engine="ray")
    assert cli.main(["encode", "-", "--encoding", "gpt2", "-o", str(tmp_path / "o"), "--address", "auto"]) == 1
    assert "--address is for --engine ray" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_the_command_starts_and_stops_its_own_cluster(corpus_dir, tmp_path):
    """What a user runs: no cluster yet, `bytebpe encode --engine ray` starts one on this machine."""
    import subprocess
    import sys

    if os.environ.get("BYTEBPE_REQUIRE_DATA") != "1":
        pytest.importorskip("ray", reason="needs Ray Data: pip install 'bytebpe[ray]'")

    path = str(corpus_dir / "docs_code.jsonl")
    local = bytebpe.encode_files(path, encoding="cl100k_base", output=tmp_path / "local" / "o", eot=True)
    env = {**os.environ, "RAY_ADDRESS": ""}
    env.pop("RAY_ADDRESS")
    done = subprocess.run([sys.executable, "-m", "bytebpe", "encode", path, "--encoding", "cl100k_base", "--eot",
                           "-o", str(tmp_path / "ray" / "o"), "--engine", "ray"],
                          capture_output=True, text=True, timeout=240, env=env)
    assert done.returncode == 0, done.stderr
    assert f"{local.documents:,} documents, {local.bytes:,} bytes of text (UTF-8), {local.tokens:,} tokens" in done.stderr
    assert_same_outputs(tmp_path / "ray", tmp_path / "local")


def test_engine_ray_retries_a_read_task_whose_worker_died_and_the_output_is_unchanged(ray, corpus_dir, tmp_path,
                                                                                      monkeypatch):
    from bytebpe import datasets
    from bytebpe.readers import find_input_files

    marker = tmp_path / "marker"
    inputs = [corpus_dir / name for name in CORPORA]
    local = bytebpe.encode_files(inputs, encoding="cl100k_base", output=tmp_path / "local" / "o", eot=True)

    def dying_files(*args, **kwargs):
        return [DyingInputFile(file.path, file.format, file.compression, file.size, file.mtime_ns, str(marker))
                for file in find_input_files(*args, **kwargs)]

    monkeypatch.setattr(datasets, "find_input_files", dying_files)
    remote = bytebpe.encode_files(inputs, encoding="cl100k_base", output=tmp_path / "ray" / "o", eot=True,
                                  engine="ray")
    assert marker.read_text() == "died"     # a read task's worker did die, half-way through the second file
    assert remote.documents == local.documents
    assert_same_outputs(tmp_path / "ray", tmp_path / "local")


@dataclass(frozen=True)
class DyingInputFile(bytebpe.readers.InputFile):
    """An input whose reading process dies half-way the first time the second corpus is read."""

    marker: str = ""

    def documents(self, **options):
        for number, item in enumerate(super().documents(**options)):
            if self.path.name == CORPORA[1] and number == 200 and not os.path.exists(self.marker):
                Path(self.marker).write_text("died")
                os._exit(1)
            yield item
