"""The `bytebpe` command: every subcommand, run as `python -m bytebpe` in a subprocess and through the console
entry point in-process; exit statuses, error messages naming file and line, Ctrl-C leaving nothing behind."""
from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import bytebpe
from bytebpe import bundled, cli, compare, registry


def run(*args: str, env_extra: dict[str, str] | None = None, timeout: float = 120,
        cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "bytebpe", *args], capture_output=True, env=env, timeout=timeout,
                          cwd=cwd)


def first_lines(source: Path, target: Path, n: int) -> Path:
    with open(source, "rb") as file:
        target.write_bytes(b"".join(line for _, line in zip(range(n), file)))
    return target


def texts_of(path: Path) -> list[str]:
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def small_jsonl(tmp_path_factory) -> Path:
    """40 documents of code and six scripts, cut from the sample corpus the package ships (the CLI tests are
    about plumbing, and run on a fresh clone; exactness at scale is test_datasets.py's)."""
    from bytebpe.bench import cut_documents, sample_files

    code, multilingual = (sample_files()[i].read_text(encoding="utf-8") for i in (1, 2))
    documents = cut_documents(code, 3000)[:30] + cut_documents(multilingual, 3000)[:10]
    assert len(documents) == 40
    path = tmp_path_factory.mktemp("cli") / "small.jsonl"
    path.write_text("".join(json.dumps({"text": text}) + "\n" for text in documents), encoding="utf-8")
    return path


def test_the_console_script_is_declared_and_is_cli_main():
    (entry_point,) = importlib.metadata.entry_points(group="console_scripts", name="bytebpe")
    assert entry_point.load() is cli.main


@pytest.mark.parametrize("command", ["count", "decode", "download", "verify", "bench"])
def test_every_subcommand_runs_as_python_m_and_through_the_entry_point_alike(
        command, tmp_path, small_jsonl, tiktoken_cache, monkeypatch, capsysbinary):
    assert cli.main(["encode", str(small_jsonl), "--encoding", "gpt2", "-o", str(tmp_path / "o"), "-q"]) == 0
    args = {
        "count": ["count", str(small_jsonl), "--encoding", "gpt2", "-q"],
        "decode": ["decode", str(tmp_path / "o.tokens.npy"), "--encoding", "gpt2", "--doc", "2"],
        "download": ["download", "gpt2", "cl100k_base"],
        "verify": ["verify", "--against", "tiktoken", str(small_jsonl), "--encoding", "gpt2", "-q"],
        "bench": ["bench", str(small_jsonl), "--encoding", "gpt2", "--repeat", "1"],
    }[command]
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tiktoken_cache))
    in_process = cli.main(args)
    captured = capsysbinary.readouterr()
    result = run(*args)
    assert (in_process, result.returncode) == (0, 0), result.stderr.decode()
    assert captured.out.strip() and result.stdout.strip()
    if command != "bench":      # everything but timings is the same both ways
        assert (captured.out, captured.err) == (result.stdout, result.stderr)


# ==== encode ======================================================================================


def test_encode_via_python_m_writes_tiktokens_ids_and_a_summary(tmp_path, small_jsonl, tiktoken_encoding):
    result = run("encode", str(small_jsonl), "--encoding", "gpt2", "--output", str(tmp_path / "o"), "--eot")
    assert result.returncode == 0, result.stderr.decode()
    reference = tiktoken_encoding("gpt2")
    expected = [reference.encode_ordinary(text) + [50256] for text in texts_of(small_jsonl)]
    tokens = np.load(tmp_path / "o.tokens.npy", mmap_mode="r")
    offsets = np.load(tmp_path / "o.offsets.npy", mmap_mode="r")
    assert tokens.dtype == np.uint16
    assert [tokens[offsets[i]:offsets[i + 1]].tolist() for i in range(len(offsets) - 1)] == expected
    stderr = result.stderr.decode()
    assert "40 documents" in stderr and f"{sum(map(len, expected)):,} tokens" in stderr
    assert "bytes/token" in stderr and "B/s" in stderr     # the summary, and the progress bar's rate
    assert result.stdout == b""


def test_encode_in_process_with_quiet_prints_nothing(tmp_path, small_jsonl, capsys):
    assert cli.main(["encode", str(small_jsonl), "--encoding", "cl100k_base", "-o", str(tmp_path / "o"),
                     "--format", "bin", "--workers", "2", "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.bin", "o.meta.json", "o.offsets.npy"]


@pytest.mark.parametrize(("output", "format", "written"), [
    ("val", "bin", ["val.bin", "val.meta.json", "val.offsets.npy"]),
    ("val.bin", "bin", ["val.bin", "val.meta.json", "val.offsets.npy"]),        # not val.bin.bin
    ("val.BIN", "bin", ["val.bin", "val.meta.json", "val.offsets.npy"]),
    ("val.npy", "npy", ["val.meta.json", "val.offsets.npy", "val.tokens.npy"]),  # not val.npy.tokens.npy
    ("val.tokens.npy", "npy", ["val.meta.json", "val.offsets.npy", "val.tokens.npy"]),
    ("val.v2", "npy", ["val.v2.meta.json", "val.v2.offsets.npy", "val.v2.tokens.npy"]),
])
def test_output_is_a_prefix_and_the_suffix_of_the_tokens_file_is_never_doubled(
        tmp_path, small_jsonl, output, format, written):
    (tmp_path / "out").mkdir()
    assert cli.main(["encode", str(small_jsonl), "--encoding", "gpt2", "-o", str(tmp_path / "out" / output),
                     "--format", format, "-q"]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == written
    # Decode and info find the set by the same name.
    result = run("decode", str(tmp_path / "out" / output), "--doc", "0")
    assert result.returncode == 0 and result.stdout.decode() == texts_of(small_jsonl)[0]


@pytest.mark.parametrize(("output", "format", "message"), [
    ("out/", "npy", "output 'out/' is a folder: give a prefix for the file names in it, e.g. out/train (writes "
                    "out/train.tokens.npy, out/train.offsets.npy and out/train.meta.json)"),
    ("out", "bin", "output 'out' is a folder: give a prefix for the file names in it, e.g. out/train (writes "
                   "out/train.bin, out/train.offsets.npy and out/train.meta.json)"),
    ("out/.bin", "bin", "output 'out/.bin' has no name before .bin: give a prefix such as out/train"),
    ("val.bin", "npy", "output 'val.bin' ends in .bin, but the format is npy: give --format bin"),
    ("val.npy", "bin", "output 'val.npy' ends in .npy, but the format is bin: give --format npy"),
])
def test_a_folder_or_the_other_formats_suffix_as_output_is_an_error_saying_what_to_give(
        tmp_path, small_jsonl, monkeypatch, capsys, output, format, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    assert cli.main(["encode", str(small_jsonl), "--encoding", "gpt2", "-o", output, "--format", format]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["out"]     # nothing written, not even a hidden file


def test_encode_files_refuses_a_folder_as_output_before_any_work(tmp_path, small_jsonl):
    with pytest.raises(ValueError, match="is a folder: give a prefix"):
        bytebpe.encode_files(small_jsonl, encoding="gpt2", output=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_malformed_line_exits_1_naming_file_and_line_and_leaves_no_output(tmp_path, small_jsonl):
    bad = tmp_path / "bad.jsonl"
    lines = small_jsonl.read_bytes().splitlines(keepends=True)
    bad.write_bytes(b"".join(lines[:7]) + b'{"text": "unterminated\n' + b"".join(lines[7:]))
    (tmp_path / "out").mkdir()
    result = run("encode", str(bad), "--encoding", "gpt2", "-o", str(tmp_path / "out" / "o"))
    assert result.returncode == 1
    assert f"{bad}:8: not valid JSON" in result.stderr.decode()
    assert "Traceback" not in result.stderr.decode()
    assert list((tmp_path / "out").iterdir()) == []
    skipped = run("encode", str(bad), "--encoding", "gpt2", "-o", str(tmp_path / "out" / "o"), "--skip-bad")
    assert skipped.returncode == 0 and "skipped 1 bad documents" in skipped.stderr.decode()
    assert f"{bad}:8" in skipped.stderr.decode()


@pytest.mark.parametrize(("args", "message"), [
    (["encode", "missing.jsonl", "--encoding", "gpt2", "-o", "o"], "input not found: missing.jsonl"),
    (["encode", "{small}", "--encoding", "gpt5", "-o", "o"], "Unknown encoding 'gpt5'"),
    (["count", "{small}", "--tokenizer", "missing.json"], "tokenizer file not found"),
    (["decode", "missing.npy", "--encoding", "gpt2"], "tokens file not found"),
    (["download", "gpt5"], "Unknown encoding 'gpt5'"),
])
def test_errors_exit_1_with_one_line_and_no_traceback(tmp_path, small_jsonl, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    assert cli.main([arg.replace("{small}", str(small_jsonl)) for arg in args]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_usage_errors_exit_2_and_write_nothing(small_jsonl, tmp_path):
    # Run where a relative -o would land: a usage error writes no output (an earlier version of this test,
    # run from the checkout, left o.tokens.npy and its metadata there).
    def usage(*args: str) -> int:
        return run(*args, cwd=tmp_path).returncode

    both = run("encode", str(small_jsonl), "--encoding", "gpt2", "--tokenizer", str(small_jsonl), "-o", "o",
               cwd=tmp_path)
    assert both.returncode == 2 and b"not both" in both.stderr
    assert usage("count", str(small_jsonl), "--encoding", "gpt2", "--tokenizer", str(small_jsonl)) == 2
    assert usage("encode", str(small_jsonl), "--encoding", "gpt2") == 2  # no --output
    assert usage("encode", str(small_jsonl), "--encoding", "gpt2", "-o", "o", "--workers", "0") == 2
    assert usage("frobnicate") == 2
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def big_jsonl(corpus_dir, tmp_path_factory) -> Path:
    """~84 MB: on one worker, many batches, so that a run is still going when a signal comes."""
    big = tmp_path_factory.mktemp("big") / "big.jsonl"
    big.write_bytes((corpus_dir / "docs_english.jsonl").read_bytes() * 16)
    return big


def start_encode_and_wait_for_partial_output(big: Path, out: Path, **popen_options) -> subprocess.Popen:
    """`bytebpe encode` in a subprocess, returned once the first batch's ids are written (mid-run)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bytebpe", "encode", str(big), "--encoding", "cl100k_base", "-o", str(out / "o"),
         "--workers", "1", "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen_options)
    try:
        deadline = time.monotonic() + 60
        while sum(p.stat().st_size for p in out.iterdir() if p.name.endswith(".partial")) < 1_000_000:
            assert process.poll() is None, "the run ended before it could be interrupted"
            assert time.monotonic() < deadline, "no temporary output grew"
            time.sleep(0.002)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process


@pytest.mark.parametrize(("signum", "status", "message"), [
    (signal.SIGINT, 130, "bytebpe: interrupted"),
    (signal.SIGTERM, 143, "bytebpe: terminated by SIGTERM"),      # a scheduler's stop, `timeout`
    (signal.SIGHUP, 129, "bytebpe: terminated by SIGHUP"),        # the terminal closed
])
def test_ctrl_c_sigterm_and_sighup_stop_with_128_plus_the_signal_and_remove_the_temporary_files(
        tmp_path, big_jsonl, signum, status, message):
    out = tmp_path / "out"
    out.mkdir()
    # As from a terminal: the signal's default disposition, whatever this test run inherited (a shell starts
    # background jobs with SIGINT ignored, and Python then never raises KeyboardInterrupt).
    process = start_encode_and_wait_for_partial_output(
        big_jsonl, out, preexec_fn=lambda: signal.signal(signum, signal.SIG_DFL))
    try:
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == status, stderr.decode()
    assert message in stderr.decode() and "Traceback" not in stderr.decode()
    assert list(out.iterdir()) == []


def test_under_nohup_sighup_stays_ignored_and_the_run_completes(tmp_path, big_jsonl):
    out = tmp_path / "out"
    out.mkdir()
    process = start_encode_and_wait_for_partial_output(
        big_jsonl, out, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))     # what nohup does
    try:
        process.send_signal(signal.SIGHUP)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr.decode()
    assert sorted(p.name for p in out.iterdir()) == ["o.meta.json", "o.offsets.npy", "o.tokens.npy"]


def test_a_killed_runs_leftovers_carry_its_pid_and_the_next_run_of_that_output_removes_them(
        tmp_path, big_jsonl, small_jsonl):
    out = tmp_path / "out"
    out.mkdir()
    killed = start_encode_and_wait_for_partial_output(big_jsonl, out)
    killed.kill()           # SIGKILL: no chance to clean up
    killed.communicate(timeout=60)
    leftovers = sorted(p.name for p in out.iterdir())
    # (and the output's lock file, which no process holds any more: the next run takes it, and removes it)
    assert ".o.bytebpe-lock" in leftovers
    leftovers.remove(".o.bytebpe-lock")
    assert len(leftovers) == 3 and all(name.startswith((".o.tokens.npy.", ".o.offsets.npy.", ".o.meta.json."))
                                       and f".{killed.pid}." in name and name.endswith(".partial")
                                       for name in leftovers), leftovers
    # A live run writing the same output keeps its files: only a dead process's are stale.
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    live_partial = out / f".o.tokens.npy.{live.pid}.0123456789ab.partial"
    live_partial.write_bytes(b"in progress")
    try:
        result = run("encode", str(small_jsonl), "--encoding", "cl100k_base", "-o", str(out / "o"))
    finally:
        live.kill()
        live.wait()
    assert result.returncode == 0, result.stderr.decode()
    assert "removed 3 temporary files that a stopped earlier run left" in result.stderr.decode()
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["o.tokens.npy", "o.offsets.npy", "o.meta.json", live_partial.name])


def test_fsync_flushes_every_file_before_its_rename_and_the_folder_after(tmp_path, small_jsonl, monkeypatch):
    events: list[str] = []      # what happens to the files of the output (not, say, to a vocabulary cache)
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        target = os.readlink(f"/proc/self/fd/{fd}")
        if target.startswith(str(tmp_path)):
            events.append("fsync folder" if os.path.isdir(target) else "fsync file")
        real_fsync(fd)

    def replace(source, target):
        if str(target).startswith(str(tmp_path)):
            events.append("rename")
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    assert cli.main(["encode", str(small_jsonl), "--encoding", "gpt2", "-o", str(tmp_path / "o"), "-q"]) == 0
    assert events == ["rename"] * 3
    events.clear()
    assert cli.main(["encode", str(small_jsonl), "--encoding", "gpt2", "-o", str(tmp_path / "o"), "-q",
                     "--fsync"]) == 0
    assert events == ["fsync file", "rename"] * 3 + ["fsync folder"]


# ==== count, decode ===============================================================================


def test_count_prints_per_file_and_total_tokens_equal_to_tiktoken(small_jsonl, tmp_path, capsys,
                                                                   tiktoken_encoding):
    (tmp_path / "one.txt").write_text("just one document")
    assert cli.main(["count", str(small_jsonl), str(tmp_path / "one.txt"), "--encoding", "gpt2", "-q"]) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()[1:]}
    reference = tiktoken_encoding("gpt2")
    small_tokens = sum(len(reference.encode_ordinary(t)) for t in texts_of(small_jsonl))
    one_tokens = len(reference.encode_ordinary("just one document"))
    assert rows[str(small_jsonl)][:1] + rows[str(small_jsonl)][2:3] == ["40", f"{small_tokens:,}"]
    assert rows["total"][:3] == ["41", f"{sum(len(t.encode()) for t in texts_of(small_jsonl)) + 17:,}",
                                 f"{small_tokens + one_tokens:,}"]


def test_decode_gives_back_one_document_or_everything_exactly(tmp_path, small_jsonl):
    assert cli.main(["encode", str(small_jsonl), "--encoding", "gpt2", "-o", str(tmp_path / "o"), "--eot",
                     "-q", "--format", "bin"]) == 0
    texts = texts_of(small_jsonl)
    one = run("decode", str(tmp_path / "o.bin"), "--encoding", "gpt2", "--doc", "3")
    assert one.returncode == 0 and one.stdout.decode() == texts[3] + "<|endoftext|>"
    last = run("decode", str(tmp_path / "o.bin"), "--encoding", "gpt2", "--doc", "-1")
    assert last.stdout.decode() == texts[-1] + "<|endoftext|>"
    everything = run("decode", str(tmp_path / "o.bin"), "--encoding", "gpt2")
    assert everything.stdout.decode() == "".join(text + "<|endoftext|>" for text in texts)
    out_of_range = run("decode", str(tmp_path / "o.bin"), "--encoding", "gpt2", "--doc", "40")
    assert out_of_range.returncode == 1 and b"has 40 documents" in out_of_range.stderr


def test_decode_uses_the_encoding_the_sidecar_records_and_refuses_another_unless_forced(tmp_path, small_jsonl):
    # The report: encoded with o200k_base, decoded (by default) with cl100k_base: garbage, exit 0.
    assert cli.main(["encode", str(small_jsonl), "--encoding", "o200k_base", "-o", str(tmp_path / "o"), "-q"]) == 0
    texts = texts_of(small_jsonl)
    recorded = run("decode", str(tmp_path / "o.tokens.npy"), "--doc", "3")
    assert recorded.returncode == 0 and recorded.stdout.decode() == texts[3]
    other = run("decode", str(tmp_path / "o.tokens.npy"), "--doc", "3", "--encoding", "cl100k_base")
    assert other.returncode == 1 and other.stdout == b""
    assert "was made with 'o200k_base' (tokenizer sha256 " in other.stderr.decode()
    assert "'cl100k_base' is another tokenizer" in other.stderr.decode()
    assert other.stderr.decode().rstrip().endswith("(--force to decode anyway)")
    assert "Traceback" not in other.stderr.decode()
    # o200k_harmony shares o200k_base's ranks, not its special tokens: refused too, and --force lets it through.
    harmony = ["decode", str(tmp_path / "o.tokens.npy"), "--doc", "3", "--encoding", "o200k_harmony"]
    assert run(*harmony).returncode == 1
    forced = run(*harmony, "--force")
    assert forced.returncode == 0 and forced.stdout.decode() == texts[3]


def test_decode_with_a_tokenizer_of_the_same_name_but_other_ranks_is_refused(tmp_path, small_jsonl):
    assert cli.main(["encode", str(small_jsonl), "--encoding", "gpt2", "-o", str(tmp_path / "o"), "-q"]) == 0
    impostor = bytebpe.train(texts_of(small_jsonl), 300, name="gpt2", pattern="gpt2")
    impostor.save(tmp_path / "gpt2.json")
    result = run("decode", str(tmp_path / "o.tokens.npy"), "--tokenizer", str(tmp_path / "gpt2.json"))
    assert result.returncode == 1
    recorded = bytebpe.tokens.layout.tokenizer_sha256(bytebpe.get_encoding("gpt2"))
    assert f"was made with 'gpt2' (tokenizer sha256 {recorded})" in result.stderr.decode()
    assert "'gpt2' is another tokenizer" in result.stderr.decode()


def test_decode_of_a_trained_tokenizers_output_asks_for_the_tokenizer_file(tmp_path, small_jsonl):
    mine = bytebpe.train(texts_of(small_jsonl), 300, name="mine")
    mine.save(tmp_path / "mine.json")
    assert cli.main(["encode", str(small_jsonl), "--tokenizer", str(tmp_path / "mine.json"), "-o",
                     str(tmp_path / "o"), "-q"]) == 0
    without = run("decode", str(tmp_path / "o.tokens.npy"))
    assert without.returncode == 1 and "'mine', which is not a named encoding: give the tokenizer file with " \
        "--tokenizer FILE" in without.stderr.decode()
    with_file = run("decode", str(tmp_path / "o.tokens.npy"), "--tokenizer", str(tmp_path / "mine.json"))
    assert with_file.returncode == 0 and with_file.stdout.decode() == "".join(texts_of(small_jsonl))


def test_decode_of_an_output_without_sidecar_needs_an_explicit_encoding(tmp_path, small_jsonl):
    assert cli.main(["encode", str(small_jsonl), "--encoding", "gpt2", "-o", str(tmp_path / "o"), "-q"]) == 0
    (tmp_path / "o.meta.json").unlink()         # as an older bytebpe left it
    bare = run("decode", str(tmp_path / "o.tokens.npy"), "--doc", "0")
    assert bare.returncode == 1 and bare.stdout == b""
    assert "has no " in bare.stderr.decode() and "o.meta.json saying which encoding made it" in bare.stderr.decode()
    assert "give --encoding NAME or --tokenizer FILE" in bare.stderr.decode()
    told = run("decode", str(tmp_path / "o.tokens.npy"), "--doc", "0", "--encoding", "gpt2")
    assert told.returncode == 0 and told.stdout.decode() == texts_of(small_jsonl)[0]


def test_decode_of_a_bin_file_takes_the_id_type_from_the_sidecar(tmp_path, small_jsonl):
    assert cli.main(["encode", str(small_jsonl), "--encoding", "o200k_base", "-o", str(tmp_path / "o"), "-q",
                     "--format", "bin"]) == 0
    result = run("decode", str(tmp_path / "o.bin"), "--doc", "-1")
    assert result.returncode == 0 and result.stdout.decode() == texts_of(small_jsonl)[-1]
    wrong = run("decode", str(tmp_path / "o.bin"), "--dtype", "uint16")
    assert wrong.returncode == 1 and "--dtype uint16 contradicts" in wrong.stderr.decode()


def test_info_prints_the_sidecar_as_text_or_json(tmp_path, small_jsonl, capsys):
    assert cli.main(["encode", str(small_jsonl), "--encoding", "o200k_base", "-o", str(tmp_path / "o"), "-q",
                     "--eot"]) == 0
    meta_text = (tmp_path / "o.meta.json").read_text()
    for name in ("o", "o.tokens.npy", "o.meta.json"):
        assert cli.main(["info", str(tmp_path / name)]) == 0
        out = capsys.readouterr().out
        record = json.loads(meta_text)
        assert f"encoding           o200k_base ({record['n_vocab']:,} ids)" in out
        assert f"vocabulary sha256  {record['vocabulary_sha256']}" in out
        assert f"{record['tokens']:,} uint32 (npy)" in out and "documents          40" in out
        assert f"yes (id {record['eot_token']})" in out and f"{small_jsonl.resolve()} (" in out
    assert cli.main(["info", str(tmp_path / "o"), "--json"]) == 0
    assert capsys.readouterr().out == meta_text
    (tmp_path / "o.meta.json").unlink()
    assert cli.main(["info", str(tmp_path / "o")]) == 1
    assert "no " in capsys.readouterr().err


def test_decode_into_a_closed_pipe_stops_quietly(tmp_path, corpus_dir):
    # ~3 MB of text: far more than a pipe holds, so the writer is still writing when the reader hangs up.
    assert cli.main(["encode", str(corpus_dir / "docs_code.jsonl"), "--encoding", "gpt2", "-o",
                     str(tmp_path / "o"), "-q"]) == 0
    process = subprocess.Popen([sys.executable, "-m", "bytebpe", "decode", str(tmp_path / "o.tokens.npy"),
                                "--encoding", "gpt2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert len(process.stdout.read(10)) == 10     # like `| head -c 10`: read a little, then hang up
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=60) == 141
    assert stderr == b""


# ==== download ====================================================================================


@pytest.fixture
def offline_registry(tmp_path, monkeypatch, data_dir):
    """No local or bundled vocabularies, an empty cache, and 'downloads' served from the real files."""
    monkeypatch.setattr(bundled, "FOLDER", tmp_path / "no-bundled-vocab")
    monkeypatch.setenv("BYTEBPE_DATA_DIR", str(tmp_path / "nothing"))
    monkeypatch.setenv("BYTEBPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    for cache in ("_encodings", "_tables_by_source", "_sha256_by_file_state"):
        monkeypatch.setattr(registry, cache, {})
    fetched = []

    def serve(url):
        fetched.append(url)
        return (data_dir / url.rsplit("/", 1)[-1]).read_bytes()

    monkeypatch.setattr(registry, "_download", serve)
    return tmp_path / "cache", fetched


def test_download_fills_the_cache_once_and_then_finds_it_there(offline_registry, capsys):
    cache, fetched = offline_registry
    assert cli.main(["download", "gpt2"]) == 0
    names = sorted(p.name for p in cache.iterdir())
    # The two GPT-2 files, and the .tiktoken conversion that loading them leaves for next time (+ its hash).
    assert names[:2] == ["encoder.json", "vocab.bpe"] and len(names) == 4
    assert names[2].startswith("vocab.bpe.") and names[2].endswith(".tiktoken") and names[3] == names[2] + ".sha256"
    assert capsys.readouterr().out.count("downloaded to") == 2 and len(fetched) == 2
    assert cli.main(["download", "gpt2", "r50k_base"]) == 0
    out = capsys.readouterr().out
    assert out.count("found at") == 2 and out.count("downloaded to") == 1 and len(fetched) == 3
    assert "r50k_base.tiktoken downloaded to" in out


def test_download_fetches_nothing_for_a_bundled_encoding(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("BYTEBPE_DATA_DIR", raising=False)
    monkeypatch.setenv("BYTEBPE_CACHE_DIR", str(tmp_path / "cache"))
    fetched: list[str] = []
    monkeypatch.setattr(registry, "_download", fetched.append)
    assert cli.main(["download", "gpt2", "o200k_harmony"]) == 0
    out = capsys.readouterr().out
    assert "gpt2: bundled with bytebpe (r50k_base)" in out and "o200k_harmony: bundled with bytebpe" in out
    assert fetched == [] and not (tmp_path / "cache").exists()


def test_download_of_a_damaged_file_fails_and_saves_nothing(offline_registry, monkeypatch, capsys):
    cache, _ = offline_registry
    monkeypatch.setattr(registry, "_download", lambda url: b"not the vocabulary")
    assert cli.main(["download", "cl100k_base"]) == 1
    assert "sha256 mismatch" in capsys.readouterr().err
    assert not cache.exists() or list(cache.iterdir()) == []


# ==== verify, bench ===============================================================================


def test_verify_passes_on_real_data_for_several_encodings(small_jsonl, tiktoken_cache):
    result = run("verify", "--against", "tiktoken", str(small_jsonl), "--encoding", "gpt2", "--encoding",
                 "o200k_base", env_extra={"TIKTOKEN_CACHE_DIR": str(tiktoken_cache)})
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    assert "gpt2: 40 documents" in out and "o200k_base: 40 documents" in out and "identical" in out


def test_verify_exits_1_and_shows_the_first_differing_document_and_position(
        small_jsonl, tiktoken_encoding, monkeypatch, capsys):
    texts = texts_of(small_jsonl)
    real = tiktoken_encoding("cl100k_base")

    class AlteredReference:
        """tiktoken, but one token of document 6 (line 6) differs."""

        def encode_ordinary_batch(self, batch, num_threads=8):
            ids = real.encode_ordinary_batch(batch, num_threads=num_threads)
            return [doc[:10] + [doc[10] + 1] + doc[11:] if text == texts[5] else doc
                    for text, doc in zip(batch, ids)]

    monkeypatch.setattr(compare, "import_tiktoken",
                        lambda: type("tiktoken", (), {"get_encoding": staticmethod(lambda name: AlteredReference())}))
    assert cli.main(["verify", "--against", "tiktoken", str(small_jsonl)]) == 1
    out = capsys.readouterr().out
    assert f"MISMATCH in {small_jsonl}:6 at token 10" in out


def test_bench_prints_a_side_by_side_table(small_jsonl, tiktoken_cache):
    result = run("bench", str(small_jsonl), "--encoding", "gpt2", "--repeat", "1",
                 env_extra={"TIKTOKEN_CACHE_DIR": str(tiktoken_cache)})
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().splitlines()
    assert lines[1].startswith("conditions: before each timed run every library's cache is emptied")
    assert lines[2] == "input: 1 file(s) given"
    header, loop_row, batch_row = lines[3:6]
    assert header.split()[:5] == ["text", "how", "MB", "bytebpe", "tiktoken"]
    assert loop_row.startswith(f"{small_jsonl.name}  40 texts, 1 thread") and "×" in loop_row
    assert batch_row.startswith(f"{small_jsonl.name}  40 docs, ") and "×" in batch_row


# ==== train =======================================================================================


def test_train_writes_a_tokenizer_that_encode_can_use(tmp_path, corpus_dir, capsys):
    corpus = first_lines(corpus_dir / "train_1mb.txt", tmp_path / "corpus.txt", 2000)
    args = ["train", str(corpus), "--vocab-size", "400", "-o", str(tmp_path / "tok" / "mine.json"), "-q",
            "--special", "<|endoftext|>"]
    assert cli.main(args) == 0
    saved = tmp_path / "tok" / "mine.json"
    assert sorted(p.name for p in saved.parent.iterdir()) == ["mine.json"]
    enc = bytebpe.load(saved)
    text = corpus.read_text(encoding="utf-8")
    # The command is the library call on the file's one document, saved and loaded back.
    expected = bytebpe.train([text], 400, special_tokens=["<|endoftext|>"])
    assert dict(enc.mergeable_ranks) == dict(expected.mergeable_ranks)
    assert dict(enc.special_tokens) == dict(expected.special_tokens)
    assert len(enc.mergeable_ranks) > 256
    assert enc.decode(enc.encode_ordinary(text)) == text
    # The trained tokenizer drives encode through --tokenizer.
    assert cli.main(["encode", str(corpus), "--tokenizer", str(saved), "-o", str(tmp_path / "o"), "-q",
                     "--eot"]) == 0
    assert np.load(tmp_path / "o.tokens.npy").tolist() == enc.encode_ordinary(text) + [enc.eot_token]


def test_train_with_a_mistyped_pattern_name_fails_before_reading_anything(tmp_path, capsys):
    # The input does not even exist: the pattern is checked first.
    assert cli.main(["train", str(tmp_path / "missing.txt"), "--vocab-size", "300", "-o", str(tmp_path / "t.json"),
                     "--pattern", "cl100k"]) == 1
    err = capsys.readouterr().err
    assert "unknown pattern name 'cl100k': known names are" in err and "cl100k_base" in err and "--pat-str" in err
    assert err.count("\n") == 1 and list(tmp_path.iterdir()) == []


def test_train_pat_str_splits_with_a_regex_of_ones_own_and_excludes_pattern(tmp_path, corpus_dir):
    corpus = first_lines(corpus_dir / "train_1mb.txt", tmp_path / "corpus.txt", 500)
    saved = tmp_path / "mine.json"
    assert cli.main(["train", str(corpus), "--vocab-size", "300", "-o", str(saved), "-q", "--pat-str",
                     r"\w+|\W"]) == 0
    enc = bytebpe.load(saved)
    assert enc._pat_str == r"\w+|\W"
    assert dict(enc.mergeable_ranks) == dict(
        bytebpe.train([corpus.read_text(encoding="utf-8")], 300, pat_str=r"\w+|\W").mergeable_ranks)
    nothing = run("train", str(corpus), "--vocab-size", "300", "-o", str(saved), "--pat-str", r"\d{5}")
    assert nothing.returncode == 1 and b"cuts no piece" in nothing.stderr
    both = run("train", str(corpus), "--vocab-size", "300", "-o", str(saved), "--pattern", "gpt2", "--pat-str", "x")
    assert both.returncode == 2 and b"not allowed with argument" in both.stderr


def test_train_removes_the_temporary_file_a_killed_earlier_run_left(tmp_path, corpus_dir):
    corpus = first_lines(corpus_dir / "train_1mb.txt", tmp_path / "corpus.txt", 200)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "tok").mkdir()
    leftover = tmp_path / "tok" / f".mine.json.{dead.pid}.0123456789ab.partial.json"
    leftover.write_text("half a tokenizer")
    assert cli.main(["train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "tok" / "mine.json"),
                     "-q"]) == 0
    assert sorted(p.name for p in (tmp_path / "tok").iterdir()) == ["mine.json"]


def test_encode_val_fraction_writes_train_and_val_sets_that_decode(tmp_path, small_jsonl, capsys):
    assert cli.main(["encode", str(small_jsonl), "--encoding", "gpt2", "-o", str(tmp_path / "d"), "--val-fraction",
                     "0.25", "--seed", "3"]) == 0
    err = capsys.readouterr().err
    train, val = bytebpe.load_token_files(tmp_path / "d.train"), bytebpe.load_token_files(tmp_path / "d.val")
    assert train.meta.documents + val.meta.documents == 40 and val.meta.documents > 0
    assert f"val: {val.meta.documents:,} documents, {val.meta.tokens:,} tokens" in err
    decoded = run("decode", str(tmp_path / "d.val"), "--doc", "0")
    assert decoded.returncode == 0 and decoded.stdout.decode() in texts_of(small_jsonl)
    assert run("encode", str(small_jsonl), "--encoding", "gpt2", "-o", str(tmp_path / "e"), "--val-fraction",
               "1.5").returncode == 1


# ==== count-pieces and train --from-counts ========================================================


def test_count_pieces_then_train_from_counts_writes_the_very_tokenizer_train_writes(tmp_path, corpus_dir):
    corpus = first_lines(corpus_dir / "train_1mb.txt", tmp_path / "corpus.txt", 1500)
    lines = corpus.read_bytes().splitlines(keepends=True)
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_bytes(b"".join(lines[:700]))
    second.write_bytes(b"".join(lines[700:]))
    common = ["--vocab-size", "420", "--special", "<|endoftext|>", "--pattern", "o200k_base", "-q"]
    assert cli.main(["train", str(corpus), "-o", str(tmp_path / "direct.json"), *common]) == 0
    assert cli.main(["count-pieces", str(corpus), "-o", str(tmp_path / "c" / "all.counts"), "--pattern",
                     "o200k_base", "-q"]) == 0
    assert cli.main(["train", "--from-counts", str(tmp_path / "c" / "all.counts"), "-o",
                     str(tmp_path / "from_counts.json"), *common]) == 0
    # Two halves counted apart (as on two machines), then added: the whole's counts.
    for part in (first, second):
        assert cli.main(["count-pieces", str(part), "-o", str(tmp_path / "c" / f"{part.stem}.counts"), "--pattern",
                         "o200k_base", "-q"]) == 0
    assert cli.main(["train", "--from-counts", str(tmp_path / "c" / "first.counts"),
                     str(tmp_path / "c" / "second.counts"), "-o", str(tmp_path / "halves.json"), *common]) == 0
    direct = (tmp_path / "direct.json").read_bytes()
    assert (tmp_path / "from_counts.json").read_bytes() == direct
    assert (tmp_path / "halves.json").read_bytes() == direct
    assert len(bytebpe.load(tmp_path / "direct.json").mergeable_ranks) == 419
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["all.counts", "first.counts", "second.counts"]


def test_count_pieces_summary_and_progress_bars_show_their_totals(tmp_path, corpus_dir, capsys):
    from tqdm import tqdm

    corpus = first_lines(corpus_dir / "train_1mb.txt", tmp_path / "corpus.txt", 3000)
    assert cli.main(["count-pieces", str(corpus), "-o", str(tmp_path / "a.counts")]) == 0
    err = capsys.readouterr().err
    counts = bytebpe.load_piece_counts(tmp_path / "a.counts")
    # The counting bar's total is the input's size in bytes.
    assert f"/{tqdm.format_sizeof(corpus.stat().st_size)} " in err and "B/s" in err
    assert err.endswith(f"counted 1 document: {len(counts):,} distinct pieces, {counts.total_pieces:,} "
                        f"occurrences; wrote {tmp_path / 'a.counts'}\n")
    # The merging bar's total is vocab_size - 256 - specials ...
    assert cli.main(["train", "--from-counts", str(tmp_path / "a.counts"), "--vocab-size", "400", "--special", "<|x|>",
                     "-o", str(tmp_path / "t.json")]) == 0
    assert "/143 " in capsys.readouterr().err
    # ... and it ends at the merges done when the corpus runs out of pairs first: "abc", " abd" allow
    # ab, then " ab", abc, " abd" (count 1 each, smallest ids first).
    (tmp_path / "tiny.txt").write_text("abc abd", encoding="utf-8")
    assert cli.main(["train", str(tmp_path / "tiny.txt"), "--vocab-size", "300", "-o", str(tmp_path / "u.json")]) == 0
    err = capsys.readouterr().err
    assert f"/{tqdm.format_sizeof(7)} " in err and " 4/44 " in err
    # The warning is a line in the command's words, not Python's file:line and source.
    assert "\nbytebpe train: warning: the corpus allows only 4 merges" in err and "UserWarning" not in err
    # -q: no bar, no summary.
    assert cli.main(["count-pieces", str(corpus), "-o", str(tmp_path / "b.counts"), "-q"]) == 0
    assert capsys.readouterr() == ("", "")


def test_count_pieces_with_a_bound_reports_the_pruning_even_when_quiet(tmp_path, corpus_dir, capsys):
    corpus = first_lines(corpus_dir / "train_1mb.txt", tmp_path / "corpus.txt", 1000)
    assert cli.main(["count-pieces", str(corpus), "-o", str(tmp_path / "a.counts"), "--max-distinct-pieces", "300",
                     "-q"]) == 0
    counts = bytebpe.load_piece_counts(tmp_path / "a.counts")
    expected = bytebpe.count_pieces([corpus.read_text(encoding="utf-8")], max_distinct_pieces=300)
    assert counts.to_dict() == expected.to_dict() and len(counts) <= 300
    assert capsys.readouterr().err == f"bytebpe: {bytebpe.training.pruning_note(expected)}\n"
    assert cli.main(["train", str(corpus), "--max-distinct-pieces", "300", "--vocab-size", "300", "-o",
                     str(tmp_path / "t.json"), "-q"]) == 0
    assert "(max_distinct_pieces=300)" in capsys.readouterr().err
    assert bytebpe.load(tmp_path / "t.json").mergeable_ranks == bytebpe.train_from_counts(expected, 300).mergeable_ranks


@pytest.mark.parametrize(("args", "status", "message"), [
    (["x.txt", "--from-counts", "a.counts"], 2, "INPUT files and --from-counts are mutually exclusive"),
    ([], 2, "give INPUT files to count, or --from-counts"),
    (["--from-counts", "a.counts", "--lines"], 2, "--lines is about reading INPUT files, and --from-counts reads none"),
    (["--from-counts", "a.counts", "--pattern", "gpt2"], 1,
     "--pattern is not the pattern {a} was counted with (cl100k_base's pattern)"),
    (["--from-counts", "a.counts", "b.counts"], 1, "{b}: its pieces were cut with another pattern than those of {a}"),
])
def test_train_from_counts_refuses_what_does_not_fit(tmp_path, monkeypatch, capsys, args, status, message):
    monkeypatch.chdir(tmp_path)
    bytebpe.save_piece_counts(bytebpe.count_pieces(["some text, some more text"]), "a.counts")
    bytebpe.save_piece_counts(bytebpe.count_pieces(["some text, some more text"], pattern="gpt2"), "b.counts")
    try:
        result = cli.main(["train", *args, "--vocab-size", "300", "-o", "t.json"])
    except SystemExit as usage_error:      # argparse's parser.error
        result = usage_error.code
    assert result == status
    assert message.format(a="a.counts", b="b.counts") in capsys.readouterr().err
    assert not Path("t.json").exists()
    # The same pattern given explicitly is fine.
    assert cli.main(["train", "--from-counts", "a.counts", "--pattern", "cl100k_base", "--vocab-size", "260", "-o",
                     "t.json", "-q"]) == 0


@pytest.mark.parametrize("how", ["bad input", "Ctrl-C while writing"])
def test_count_pieces_leaves_no_file_behind_when_it_fails(tmp_path, monkeypatch, capsys, how):
    out = tmp_path / "out"
    out.mkdir()
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "fine"}\n' + ('{"text": 3}\n' if how == "bad input" else ""), encoding="utf-8")
    if how != "bad input":
        def interrupted(source, target):
            raise KeyboardInterrupt     # Ctrl-C with the counts written, before the rename

        monkeypatch.setattr(os, "replace", interrupted)
    status = cli.main(["count-pieces", str(source), "-o", str(out / "c.counts"), "-q"])
    assert status == (1 if how == "bad input" else 130)
    assert ("in.jsonl:2: field 'text' is int" if how == "bad input" else "interrupted") in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_tokenizer_accepts_an_hf_tokenizer_json(tmp_path, small_jsonl, data_dir):
    # GPT-2's tokenizer.json as `tokenizers` builds it: encode gives HF's ids, decode gives the text back.
    from ..hf_files import gpt2_tokenizer

    tok = gpt2_tokenizer(data_dir)
    path = tmp_path / "gpt2-hf.tokenizer.json"
    tok.save(str(path))
    assert cli.main(["encode", str(small_jsonl), "--tokenizer", str(path), "-o", str(tmp_path / "o"), "-q"]) == 0
    tok.encode_special_tokens = True
    expected = [i for text in texts_of(small_jsonl) for i in tok.encode(text, add_special_tokens=False).ids]
    assert np.load(tmp_path / "o.tokens.npy").tolist() == expected
    decoded = run("decode", str(tmp_path / "o.tokens.npy"), "--tokenizer", str(path))
    assert decoded.returncode == 0 and decoded.stdout.decode() == "".join(texts_of(small_jsonl))


def test_tokenizer_names_the_unsupported_component_of_an_hf_file(tmp_path, small_jsonl):
    from bytebpe import hf_json

    spec = hf_json.tokenizer_json(bytebpe.get_encoding("gpt2"))
    spec["normalizer"] = {"type": "Precompiled", "precompiled_charsmap": ""}
    path = tmp_path / "spm-ish.tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    result = run("count", str(small_jsonl), "--tokenizer", str(path))
    assert result.returncode == 1 and "normalizer 'Precompiled'" in result.stderr.decode()


def test_every_option_of_every_command_says_what_it_does():
    parser = cli._parser()
    for name, command in parser._subparsers._group_actions[0].choices.items():
        silent = [action.option_strings or [action.dest] for action in command._actions if not action.help]
        assert not silent, f"bytebpe {name}: options without help: {silent}"


def test_counts_in_messages_are_singular_for_one():
    from bytebpe.progress import counted

    assert counted(1, "document") == "1 document" and counted(0, "file") == "0 files"
    assert counted(12_345, "token") == "12,345 tokens"


def test_dir_of_the_package_lists_the_names_imported_on_first_use():
    assert {"train", "encode_files", "load_tokenizer", "from_tokenizer_json", "count_pieces"} <= set(dir(bytebpe))
    assert set(bytebpe.__all__) <= set(dir(bytebpe))


def test_every_command_takes_quiet():
    parser = cli._parser()
    for name, command in parser._subparsers._group_actions[0].choices.items():
        assert any("-q" in action.option_strings for action in command._actions), f"bytebpe {name} has no -q"


def test_the_encoding_rule_is_one_for_every_command(tmp_path, small_jsonl):
    # Neither given: cl100k_base, said in the summary and recorded; both given: a usage error (above).
    result = run("encode", str(small_jsonl), "-o", str(tmp_path / "o"))
    assert result.returncode == 0 and b"encoding: cl100k_base (the default" in result.stderr
    assert bytebpe.load_token_files(tmp_path / "o").meta.encoding == "cl100k_base"
    counted_ = run("count", str(small_jsonl), "-q")
    assert counted_.returncode == 0
    tokens = int(counted_.stdout.decode().splitlines()[-1].split()[3].replace(",", ""))
    assert tokens == bytebpe.load_token_files(tmp_path / "o").meta.tokens


def test_outputs_that_cannot_be_written_are_refused_in_the_users_words(tmp_path, small_jsonl):
    (tmp_path / "data.jsonl").write_text("{}", encoding="utf-8")
    for output, message in [("-", "-o -: encode writes files"),
                            (str(tmp_path / "data.jsonl" / "x"), "is a file, not a folder"),
                            (str(tmp_path / "data.jsonl" / "deeper" / "x"), "is a file, not a folder"),
                            ("/proc/bytebpe-test/x", "cannot write -o /proc/bytebpe-test/x")]:
        result = run("encode", str(small_jsonl), "--encoding", "gpt2", "-o", output, "-q")
        err = result.stderr.decode()
        assert result.returncode == 1 and message in err and err.count("\n") == 1, err
        assert "bytebpe-lock" not in err and "partial" not in err and "Errno" not in err
    assert not list(tmp_path.glob("-*"))
    result = run("train", str(small_jsonl), "--vocab-size", "300", "-o", "-", "-q")
    assert result.returncode == 1 and b"-o -: this command writes a file" in result.stderr
    result = run("train", str(small_jsonl), "--vocab-size", "300", "-o", "/proc/bytebpe-test.json", "-q")
    assert result.returncode == 1 and b"cannot write -o /proc/bytebpe-test.json" in result.stderr
    chunked = run("chunk", str(small_jsonl), "--encoding", "gpt2", "--max-tokens", "50", "-o", "-", "-q")
    assert chunked.returncode == 0 and json.loads(chunked.stdout.splitlines()[0])["chunk"] == 0


def test_train_writes_a_tiktoken_file_when_the_name_asks_for_one(tmp_path, small_jsonl):
    result = run("train", str(small_jsonl), "--vocab-size", "400", "--special", "<|end|>", "--pattern", "o200k_base",
                 "-o", str(tmp_path / "mine.tiktoken"))
    err = result.stderr.decode()
    assert result.returncode == 0 and "tiktoken's format" in err, err
    assert run("train", str(small_jsonl), "--vocab-size", "400", "--special", "<|end|>", "--pattern", "o200k_base",
               "-o", str(tmp_path / "mine.json"), "-q").returncode == 0
    trained = bytebpe.load(tmp_path / "mine.json")
    assert bytebpe.load_tiktoken_bpe(str(tmp_path / "mine.tiktoken")) == trained._mergeable_ranks
    # The line printed says how to read it back with the same ids.
    how = err.split("read it with ")[1].split(", or write")[0]
    assert how == f"--tokenizer {tmp_path / 'mine.tiktoken'} --pattern o200k_base --special '<|end|>=399'"
    assert run("encode", str(small_jsonl), *how.replace("'", "").split(), "-o", str(tmp_path / "a"), "-q").returncode == 0
    assert run("encode", str(small_jsonl), "--tokenizer", str(tmp_path / "mine.json"), "-o", str(tmp_path / "b"),
               "-q").returncode == 0
    assert (bytebpe.load_token_files(tmp_path / "a").tokens == bytebpe.load_token_files(tmp_path / "b").tokens).all()


def test_progress_bars_redraw_rarely_where_no_terminal_reads_them():
    import io

    from bytebpe.progress import LOG_REDRAW_SECONDS, progress_bar

    logged = progress_bar(True, file=io.StringIO(), total=10)
    assert logged.mininterval == LOG_REDRAW_SECONDS
    logged.close()


def test_verify_shows_progress_unless_quiet(small_jsonl, tiktoken_cache):
    env = {"TIKTOKEN_CACHE_DIR": str(tiktoken_cache)}
    shown = run("verify", str(small_jsonl), "--encoding", "gpt2", env_extra=env)
    quiet = run("verify", str(small_jsonl), "--encoding", "gpt2", "-q", env_extra=env)
    assert shown.returncode == quiet.returncode == 0 and shown.stdout == quiet.stdout
    assert b"verify gpt2: 40 documents" in shown.stderr and quiet.stderr == b""


def test_verify_reads_the_packages_own_sample_folder(tiktoken_cache):
    from bytebpe.bench import SAMPLE_DIR

    result = run("verify", str(SAMPLE_DIR), "--encoding", "cl100k_base", "-q",
                 env_extra={"TIKTOKEN_CACHE_DIR": str(tiktoken_cache)})
    assert result.returncode == 0, result.stderr
    assert b"3 documents" in result.stdout and b"identical to tiktoken" in result.stdout
    assert b"not compared: " in result.stderr and b"PROVENANCE.md" in result.stderr


def test_standard_input_is_recorded_by_what_was_read_from_it(tmp_path):
    lines = "".join(json.dumps({"text": f"document {i}"}) + "\n" for i in range(50)).encode()
    result = subprocess.run([sys.executable, "-m", "bytebpe", "encode", "-", "--stdin-format", "jsonl",
                             "--encoding", "gpt2", "-o", str(tmp_path / "s"), "-q"], input=lines, capture_output=True)
    assert result.returncode == 0, result.stderr
    info = run("info", str(tmp_path / "s")).stdout.decode()
    assert "inputs             1 file:\n  <stdin> (50 documents)" in info
