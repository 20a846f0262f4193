"""The `bytebpe` command: encode, count, decode, info, train, count-pieces, download, verify, bench,
export-tiktoken-cache — thin over the library.

Exit status: 0 done, 1 failed (bad input, a mismatch in `verify`, ...), 2 wrong usage (argparse), 130 Ctrl-C,
143 SIGTERM, 129 SIGHUP (both clean up like Ctrl-C). Errors the user can fix are one line on stderr, never a
traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import warnings
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from . import batching, bench, compare, datasets, registry
from ._version import __version__
from .atomic_write import create_temporary_file, remove_stale_partial_files
from .encoding import Encoding, load
from .file_formats import recognise
from .hf_import import TokenizerJsonError
from .interrupts import Terminated, signals_raise
from .model_files import MODEL_PRESETS
from .piece_counts import count_pieces_from_files, load_piece_counts, save_piece_counts, train_from_counts
from .progress import counted
from .readers import (STDIN_FORMATS, BadDocumentError, InputFile, ReadOptions, ReadTally, check_read_options,
                      find_input_files)
from .tiktoken_cache import export_tiktoken_cache
from .tokens import layout
from .tokens.layout import OutputOptions
from .tokens.arrays import token_dtype
from .tokenizer_files import load_tokenizer_file
from .training import check_train_arguments, pruning_note, resolve_pattern
from .vocab_io import dump_tiktoken_bpe

__all__ = ["main"]

EXIT_FAILED = 1
EXIT_INTERRUPTED = 130          # 128 + SIGINT, what shells report for Ctrl-C
EXIT_BROKEN_PIPE = 141          # 128 + SIGPIPE, as `cat` into a closed pipe
DECODE_CHUNK_TOKENS = 1 << 20   # tokens decoded at a time when writing a whole array out
# The reading options' defaults (`_input_arguments`).
# The reading options' defaults are ReadOptions' (readers.py): the parser's defaults come from here.
READ_DEFAULTS = ReadOptions()


class CommandError(Exception):
    """A failure to report as one line and exit status 1."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (the console script passes it to sys.exit)."""
    parser = _parser()
    args = parser.parse_args(argv)
    # Rules across options that argparse cannot state; parser.error exits with status 2, as usage errors do.
    if args.command != "verify" and getattr(args, "encoding", None) and getattr(args, "tokenizer", None):
        parser.error(f"{args.command}: give --encoding NAME or --tokenizer FILE, not both")
    if args.command == "train" and bool(args.inputs) == bool(args.from_counts):
        parser.error("train: give INPUT files to count, or --from-counts COUNTS files" if not args.inputs else
                     "train: INPUT files and --from-counts are mutually exclusive: give one or the other")
    if args.command == "train" and args.from_counts:
        given = [key for key, value in _read_options(args).keywords().items()
                 if value != getattr(READ_DEFAULTS, key)]
        if given:
            parser.error(f"train: --{given[0].replace('_', '-')} is about reading INPUT files, and --from-counts "
                         f"reads none")
    if args.command == "verify" and args.against == "tiktoken" and not all(
            map(_is_tiktoken_file, args.tokenizer or [])):
        parser.error("verify: --against tiktoken compares named encodings (--encoding NAME) and .tiktoken "
                     "vocabularies; a tokenizer file is compared against HF tokenizers (--against tokenizers)")
    if args.command == "verify" and args.against == "mistral-common" and (
            args.encoding or not all(map(_is_tekken_file, args.tokenizer or []))):
        parser.error("verify: --against mistral-common compares Mistral Tekken files (--tokenizer tekken.json)")
    if args.command == "verify" and not args.encoding and not args.tokenizer:
        args.encoding = ["cl100k_base"]
    try:
        with signals_raise(), warnings.catch_warnings():
            # A warning is a line in the command's words, not Python's "file:line: UserWarning" and source.
            warnings.showwarning = lambda message, *_: print(f"bytebpe {args.command}: warning: {message}",
                                                              file=sys.stderr)
            return int(args.run(args) or 0)
    except KeyboardInterrupt:
        # Temporary files are gone already: every writer deletes its own on the way out.
        print("bytebpe: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated as stop:
        # Likewise for a scheduler's SIGTERM or a closed terminal's SIGHUP.
        print(f"bytebpe: terminated by {stop}", file=sys.stderr)
        return stop.exit_status
    except BrokenPipeError:
        # The reader of our stdout left (`bytebpe decode ... | head`): not an error worth a message. Point
        # stdout at /dev/null so that the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except (CommandError, BadDocumentError, registry.UnknownEncodingError, FileNotFoundError,
            ValueError, ImportError, OSError, zlib.error) as error:
        print(f"bytebpe {args.command}: error: {_in_cli_words(str(error))}", file=sys.stderr)
        return EXIT_FAILED
    except MemoryError:
        # Outputs are whole or absent (every writer deletes its partial files on the way out).
        print(f"bytebpe {args.command}: error: out of memory (a document too large to hold, or too little "
              "memory for --workers threads: try fewer workers, or cut the input into smaller documents)",
              file=sys.stderr)
        return EXIT_FAILED


# The library's errors name an option both ways ("--ignore-unknown (ignore_unknown=True)"); on the command
# line, the Python spelling goes.
_PYTHON_SPELLINGS = (" (ignore_unknown=True)", " (lines=True)", " (skip_bad=True)")


def _in_cli_words(message: str) -> str:
    for spelling in _PYTHON_SPELLINGS:
        message = message.replace(spelling, "")
    return message.replace("(errors='replace', --errors replace on the command line, reads it as U+FFFD)",
                           "(--errors replace reads it as U+FFFD)")


# ==== subcommands =================================================================================


def _encode(args: argparse.Namespace) -> int:
    if args.address is not None and args.engine != "ray":
        raise CommandError("--address is for --engine ray")
    output = _checked_prefix(args.output)
    enc = _encoding_of(args)
    try:
        summary = datasets.encode_files(
            args.inputs, encoding=enc, eot=_document_token(args.eot_token, args.eot),
            bos=_document_token(args.bos_token, False), workers=args.workers, progress=not args.quiet,
            engine=args.engine, ray_address=args.address, max_tokens=args.max_tokens, read=_read_options(args),
            output=OutputOptions(output, format=args.format, shard_tokens=args.shard_tokens,
                                 val_fraction=args.val_fraction, seed=args.seed, fsync=args.fsync))
    except OSError as error:
        if _writes_output(error, output):
            raise _output_error(error, output) from None
        raise   # about an input: its own message names it
    if args.quiet:
        _warn(summary.losses())
    _say(summary.describe() + ("" if args.encoding or args.tokenizer else
                               f"\nencoding: {DEFAULT_ENCODING} (the default; --encoding NAME or --tokenizer FILE "
                               f"for another)"), args)
    return 0


# Below this much text the batch rows of `bytebpe bench` time thread start-up more than encoding.
SMALL_FOR_THREADS_MB = 0.5


def _document_token(given: str | None, flag: bool) -> bool | str | int:
    """--eot-token / --bos-token as encode_files takes it: a number is an id, anything else a token's text."""
    if given is None:
        return flag
    return int(given) if given.isdigit() else given


def _count(args: argparse.Namespace) -> int:
    enc = _encoding_of(args)
    summary = datasets.count_files(args.inputs, encoding=enc, workers=args.workers, progress=not args.quiet,
                                   budget=args.budget, read=_read_options(args))
    _warn(summary.losses())
    over = [] if args.budget is None else [f"over {args.budget:,}"]
    rows = [[str(s.path), f"{s.documents:,}", f"{s.bytes:,}", f"{s.tokens:,}", f"{s.bytes_per_token:.3f}",
             f"{s.skipped:,}", f"{s.longest:,}", *([f"{s.over_budget:,}"] if over else [])] for s in summary.files]
    rows.append(["total", f"{summary.documents:,}", f"{summary.bytes:,}", f"{summary.tokens:,}",
                 f"{summary.bytes_per_token:.3f}", f"{summary.skipped:,}", f"{summary.longest:,}",
                 *([f"{summary.over_budget:,}"] if over else [])])
    print(_table(["file", "documents", "bytes", "tokens", "bytes/token", "skipped", "longest", *over], rows))
    if args.budget is not None and not args.quiet:
        print(f"bytebpe: {counted(summary.over_budget, 'document')} of {summary.documents:,} over the budget of "
              f"{counted(args.budget, 'token')} (the longest: {counted(summary.longest, 'token')})",
              file=sys.stderr)
    return 0


def _chunk(args: argparse.Namespace) -> int:
    """Each document cut into chunks of at most --max-tokens tokens (Encoding.chunks), one JSON line per chunk."""
    enc = _encoding_of(args)
    files = _input_files(args, args.inputs)
    tally = ReadTally()

    def write_chunks(stream) -> int:
        written = 0
        for file in files:
            documents = file.documents(field=args.field, lines=args.lines, skip_bad=args.skip_bad, errors=args.errors,
                                       on_skip=tally.skip, on_replace=tally.replace)
            for text, line in documents:
                start = 0
                for index, chunk in enumerate(enc.chunks(text, args.max_tokens, boundary=args.boundary,
                                                         disallowed_special=())):
                    stream.write(json.dumps({
                        "document": tally.documents, "file": file.label, "line": line, "chunk": index,
                        "start": start, "end": start + len(chunk), "tokens": enc.count_ordinary(chunk),
                        "text": chunk}, ensure_ascii=False) + "\n")
                    start += len(chunk)
                    written += 1
                tally.documents += 1
        return written

    if args.output is None or args.output == "-":
        written = write_chunks(sys.stdout)
    else:
        # Written whole or not at all: a temporary file beside the output, renamed over it at the end.
        output = _checked_output(args.output)
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_partial_files(output)     # what a killed earlier run of this output left
            fd, temporary = create_temporary_file(output)
        except OSError as error:
            raise _output_error(error, args.output) from None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as stream:
                written = write_chunks(stream)
            os.replace(temporary, output)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    _warn(tally.describe().splitlines())
    if not args.quiet:
        print(f"bytebpe: {counted(written, 'chunk')} of at most {args.max_tokens} tokens from "
              f"{counted(tally.documents, 'document')}"
              + (f" -> {args.output}" if args.output else ""), file=sys.stderr)
    return 0


def _decode(args: argparse.Namespace) -> int:
    prefix = layout.prefix_of(args.tokens)
    meta = layout.read_meta(prefix)
    if meta is None and not Path(args.tokens).is_file() and layout.read_index(prefix) is not None:
        return _decode_shards(args, prefix)
    if meta is None and not Path(args.tokens).is_file() and layout.split_parts(prefix):
        raise CommandError(f"{prefix} was split into {' and '.join(layout.split_parts(prefix))} "
                           f"(--val-fraction): decode one of them")
    enc = _decode_encoding(args, meta, prefix)
    tokens_path = Path(args.tokens)
    if meta is not None:
        # TOKENS may be the prefix (or the -o name) rather than the tokens file itself.
        paths = layout.output_paths(prefix, meta.format)  # type: ignore[arg-type]  # checked on reading
        tokens_path = tokens_path if tokens_path.is_file() else paths.tokens
        default_offsets = paths.offsets
        if args.dtype and args.dtype != meta.dtype and not args.force:
            raise CommandError(f"--dtype {args.dtype} contradicts {prefix}.meta.json, which records {meta.dtype} "
                               f"(--force to decode anyway)")
        dtype = args.dtype or meta.dtype
    else:
        default_offsets = _offsets_path_for(tokens_path)
        dtype = args.dtype or token_dtype(enc.max_token_value).name
    tokens = _load_tokens(tokens_path, dtype)
    offsets_path = Path(args.offsets) if args.offsets else default_offsets
    out = sys.stdout.buffer
    if args.doc is None:
        spans: Iterator[tuple[int, int]] = iter([(0, len(tokens))])
    else:
        if not offsets_path.is_file():
            raise CommandError(f"no offsets file {offsets_path} (give it with --offsets)")
        offsets = np.load(offsets_path, mmap_mode="r")
        n_docs = len(offsets) - 1
        if not -n_docs <= args.doc < n_docs:
            raise CommandError(f"--doc {args.doc} is out of range: {offsets_path} has {counted(n_docs, 'document')}")
        doc = args.doc % n_docs
        spans = iter([(int(offsets[doc]), int(offsets[doc + 1]))])
    for start, end in spans:
        # In chunks, as bytes: a chunk may end inside a multi-byte character, and bytes join exactly.
        for chunk_start in range(start, end, DECODE_CHUNK_TOKENS):
            ids = tokens[chunk_start:min(end, chunk_start + DECODE_CHUNK_TOKENS)].tolist()
            out.write(enc.decode_bytes(ids))
    out.flush()
    return 0


def _decode_shards(args: argparse.Namespace, prefix: str) -> int:
    """`decode` of a sharded set: every shard in order, or --doc N of the whole set (its parts joined)."""
    if args.offsets or args.dtype:
        raise CommandError(f"{prefix} is a sharded set: its shards' sidecars give the offsets and dtype")
    shards = layout.load_token_shards(prefix)
    enc = _decode_encoding(args, shards.index.meta, prefix)
    if args.doc is not None and not -shards.n_documents <= args.doc < shards.n_documents:
        raise CommandError(f"--doc {args.doc} is out of range: {prefix} has {counted(shards.n_documents, 'document')}")
    arrays = [shard.tokens for shard in shards.shards] if args.doc is None else [shards.document(args.doc)]
    out = sys.stdout.buffer
    for tokens in arrays:
        for chunk_start in range(0, len(tokens), DECODE_CHUNK_TOKENS):
            out.write(enc.decode_bytes(tokens[chunk_start:chunk_start + DECODE_CHUNK_TOKENS].tolist()))
    out.flush()
    return 0


def _decode_encoding(args: argparse.Namespace, meta: layout.TokenFilesMeta | None, prefix: str) -> Encoding:
    """The encoding to decode with: the one asked for, checked against the sidecar; else the recorded one."""
    if meta is None:
        if not Path(args.tokens).is_file():
            raise CommandError(f"tokens file not found: {args.tokens}")
        if args.encoding is None and args.tokenizer is None:
            raise CommandError(
                f"{args.tokens} has no {prefix}.meta.json saying which encoding made it (it comes from an older "
                f"bytebpe or another tool): give --encoding NAME or --tokenizer FILE")
        return _encoding_of(args)
    if args.encoding is None and args.tokenizer is None:
        if meta.encoding not in registry.list_encoding_names():
            raise CommandError(f"{args.tokens} was made with {meta.encoding!r}, which is not a named encoding: "
                               f"give the tokenizer file with --tokenizer FILE")
        enc = registry.get_encoding(meta.encoding)
    else:
        enc = _encoding_of(args)
    try:
        layout.check_encoding(meta, enc, where=str(args.tokens))
    except layout.EncodingMismatchError as error:
        if not args.force:
            raise CommandError(f"{error} (--force to decode anyway)") from None
    return enc


def _info(args: argparse.Namespace) -> int:
    prefix = layout.prefix_of(args.prefix)
    meta = layout.read_meta(prefix)
    index = layout.read_index(prefix) if meta is None else None
    if index is not None:
        sys.stdout.write(index.to_json() if args.json else index.describe() + "\n")
        return 0
    parts = layout.split_parts(prefix) if meta is None else []
    if parts:   # a split run: each part, as info on it prints it (with --json, one object keyed by part)
        described = {}
        for part in parts:
            part_meta = layout.read_meta(part)
            record = part_meta if part_meta is not None else layout.read_index(part)
            described[part] = record.to_json() if args.json else record.describe()  # type: ignore[union-attr]
        if args.json:
            sys.stdout.write(json.dumps({part: json.loads(text) for part, text in described.items()}, indent=2,
                                        ensure_ascii=False) + "\n")
        else:
            sys.stdout.write("\n\n".join(f"{part}:\n{text}" for part, text in described.items()) + "\n")
        return 0
    if meta is None:
        raise CommandError(f"no {prefix}.meta.json: give the PREFIX that `bytebpe encode -o PREFIX` wrote (outputs "
                           f"of an older bytebpe have no metadata)")
    sys.stdout.write(meta.to_json() if args.json else meta.describe() + "\n")
    return 0


def _train(args: argparse.Namespace) -> int:
    special_tokens = _parse_special_tokens(args.special)
    # Every option is checked before anything is read (a mistyped pattern name fails before the inputs).
    check_train_arguments(args.vocab_size, args.pattern, args.pat_str, special_tokens, args.min_frequency,
                          args.max_token_length, args.name, args.max_distinct_pieces)
    output = _checked_output(args.output)
    tally = ReadTally()
    if args.from_counts:
        counts = load_piece_counts(*args.from_counts)
        if (args.pattern or args.pat_str) and resolve_pattern(args.pattern, args.pat_str) != counts.pat_str:
            counted_with = next((f"{name}'s pattern" for name, spec in registry.ENCODING_SPECS.items()
                                 if spec.pattern == counts.pat_str), f"the regex {counts.pat_str!r}")
            raise CommandError(f"--{'pattern' if args.pattern else 'pat-str'} is not the pattern "
                               f"{args.from_counts[0]} was counted with ({counted_with}); leave it out to train "
                               f"with the counts' own")
        if args.max_distinct_pieces is not None:
            counts.prune(args.max_distinct_pieces)
        source = f"the counts of {len(args.from_counts)} file{'s' if len(args.from_counts) != 1 else ''}"
    else:
        # The library's own reader and chunking: the same documents as `encode` reads, in bounded memory.
        counts = count_pieces_from_files(
            args.inputs, pattern=args.pattern, pat_str=args.pat_str, tally=tally, progress=not args.quiet,
            max_distinct_pieces=args.max_distinct_pieces, workers=args.workers, read=_read_options(args))
        source = counted(tally.documents, "document")
    note = pruning_note(counts)     # before training empties the counts
    enc = train_from_counts(counts, args.vocab_size, special_tokens=special_tokens,
                            min_frequency=args.min_frequency, max_token_length=args.max_token_length, name=args.name,
                            progress=not args.quiet)
    if output.suffix == ".tiktoken":
        # What the name asks for: tiktoken's format, which holds the ranks only.
        _write_output(output, lambda path: dump_tiktoken_bpe(enc._table.ranks(), path))
        split = f"--pattern {args.pattern}" if args.pattern else (
            "--pat-str REGEX" if args.pat_str or args.from_counts else "--pattern cl100k_base")
        specials = "".join(f" --special {shlex.quote(f'{token}={token_id}')}"
                           for token, token_id in enc._special_tokens.items())
        kept = (f"; its split pattern and special tokens are not in a .tiktoken file: read it with --tokenizer "
                f"{shlex.quote(str(output))} {split}{specials}, or write FILE.json for bytebpe's own file")
        _say(f"trained {enc.name!r}: {enc.n_vocab:,} ids from {source}; wrote {output} (tiktoken's format: "
             f"{len(enc._table.ranks()):,} ranks){kept}", args)
    else:
        _write_output(output, enc.to_tokenizer_json if _names_hf_tokenizer_json(output) else enc.save)
        _say(f"trained {enc.name!r}: {enc.n_vocab:,} ids from {source}; wrote {output}"
             + (" (a Hugging Face tokenizer.json)" if _names_hf_tokenizer_json(output) else ""), args)
    _warn([line for line in (note, tally.describe()) if line])
    return 0


def _count_pieces(args: argparse.Namespace) -> int:
    output = _checked_output(args.output)
    tally = ReadTally()
    counts = count_pieces_from_files(
        args.inputs, pattern=args.pattern, pat_str=args.pat_str, tally=tally, progress=not args.quiet,
        max_distinct_pieces=args.max_distinct_pieces, workers=args.workers, read=_read_options(args))
    _write_output(output, lambda path: save_piece_counts(counts, path))
    _say(f"counted {counted(tally.documents, 'document')}: {len(counts):,} distinct pieces, {counts.total_pieces:,} "
         f"occurrences; wrote {output}", args)
    _warn([line for line in (pruning_note(counts), tally.describe()) if line])
    return 0


def _download(args: argparse.Namespace) -> int:
    names = list(registry.ENCODING_SPECS) if args.all else args.names
    if not names:
        raise CommandError("name at least one encoding, or --all")
    for name in names:
        spec = registry.encoding_spec(name)     # unknown names fail before anything is fetched
        source = registry.bundled_source(spec)
        if source is not None:
            if not args.quiet:
                print(f"{name}: bundled with bytebpe ({source}), nothing to download")
            continue
        for file in spec.files:
            # The local places come first (BYTEBPE_DATA_DIR, our cache, tiktoken's); only a missing file is
            # downloaded, checked against its pinned sha256, and saved in our cache.
            before = registry.cache_dir() / file.filename
            existed = before.is_file()
            path = registry.resolve_vocabulary_file(file)
            how = "downloaded to" if not existed and path == before else "found at"
            if not args.quiet:
                print(f"{name}: {file.filename} {how} {path}")
        registry.get_encoding(name)             # and it loads
    return 0


def _verify(args: argparse.Namespace) -> int:
    targets = _verify_targets(args)     # the references' absence is reported before any work
    files = _input_files(args, args.inputs)
    ignored = getattr(files, "ignored", [])
    if ignored:
        _warn([f"not compared: {', '.join(map(str, ignored[:5]))}{', ...' if len(ignored) > 5 else ''} "
               f"(not inputs)"])
    workers = args.workers or batching.pool_size()
    failed = False
    for name, enc, reference, reference_name in targets:
        result = compare.verify_files(files, enc, reference, workers=workers, field=args.field, lines=args.lines,
                                      skip_bad=args.skip_bad, errors=args.errors, reference_name=reference_name,
                                      progress=not args.quiet, desc=f"verify {name}")
        if result.mismatch is not None:
            print(f"{name}: {result.mismatch.describe()}")
            failed = True
        else:
            print(f"{name}: {counted(result.documents, 'document')}, {counted(result.tokens, 'token')}: identical to {reference_name}"
                  + (f" ({result.skipped:,} bad documents skipped)" if result.skipped else ""))
    return EXIT_FAILED if failed else 0


def _verify_targets(args: argparse.Namespace) -> list[tuple[str, Encoding, object, str]]:
    """(name, encoding, reference, reference's name) for each --encoding, then each --tokenizer. The reference
    is --against's; by default tiktoken for a named encoding, and for a tokenizer file its format's: HF
    tokenizers for a tokenizer.json (reading it itself) or a bytebpe file (exported as one), mistral-common
    for a Tekken file, tiktoken for a .tiktoken vocabulary (reading it with the same pattern and special
    tokens)."""
    targets: list[tuple[str, Encoding, object, str]] = []
    for name in args.encoding or []:
        enc = _encoding_of(argparse.Namespace(tokenizer=None, encoding=name,
                                              add_special_tokens=args.add_special_tokens))
        if (args.against or "tiktoken") == "tiktoken":
            targets.append((name, enc, compare.tiktoken_reference(name), "tiktoken"))
        else:
            targets.append((name, enc, compare.tokenizers_reference(enc), "HF tokenizers"))
    tiktoken_files = [path for path in args.tokenizer or [] if _is_tiktoken_file(path)]
    if not tiktoken_files:
        _refuse_tiktoken_options(args)
    for path in args.tokenizer or []:
        # --model, --pattern, --pat-str and --special are for the .tiktoken files among several.
        kind, enc = _tokenizer_file_of(path, args if path in tiktoken_files else argparse.Namespace(
            add_special_tokens=args.add_special_tokens))
        if kind == "tekken" and args.against in (None, "mistral-common"):
            targets.append((path, enc, compare.mistral_common_reference(path), "mistral-common"))
        elif kind == "tiktoken" and args.against in (None, "tiktoken"):
            targets.append((path, enc, compare.tiktoken_file_reference(path, enc), "tiktoken"))
        else:
            hf_file = path if kind == "tokenizer.json" else None
            targets.append((path, enc, compare.tokenizers_reference(enc, hf_file), "HF tokenizers"))
    return targets


def _bench(args: argparse.Namespace) -> int:
    enc = _encoding_of(args)
    peers, notes = bench.find_peers(enc.name)
    workers = args.workers or batching.pool_size()
    if args.inputs:
        files = _input_files(args, args.inputs)
        source = f"{len(files)} file(s) given"
    else:
        files = find_input_files(bench.sample_files())
        source = f"the sample corpus shipped with bytebpe ({bench.SAMPLE_DIR}); give files to bench your own"
    texts_of = {file.path: [text for text, _line in file.documents(field=args.field, lines=args.lines,
                                                                   errors=args.errors)]
                for file in files}
    # What each library encodes before each timed run, after its cache is emptied (bytebpe's piece cache, a new
    # gigatoken instance): every other input, and the sample corpus. No library is timed on text it has seen.
    for path in bench.sample_files():
        texts_of.setdefault(path, [path.read_text(encoding="utf-8")])
    rows = []
    for file in files:
        priming = [text for path, texts in texts_of.items() if path != file.path for text in texts]
        _say(f"bytebpe bench: timing {file.path.name} ...", args)
        try:
            rows += bench.bench_texts(file.path.name, texts_of[file.path], enc, peers, workers=workers,
                                      repeat=args.repeat, notes=notes, priming=priming)
        except AssertionError as error:     # the oracle disagrees: bytebpe's ids are wrong here
            raise CommandError(str(error)) from None

    def rate(value: float | None) -> str:
        return f"{value:.1f}" if value is not None else "—"

    def ratio(ours: float, theirs: float | None) -> str:
        return f"{ours / theirs:.2f}×" if theirs else "—"

    labels = [peer.label for peer in peers]
    print(f"bytebpe {__version__} vs {', '.join(labels) or 'no peer (none installed)'}: {enc.name}, "
          f"best of {args.repeat}, MB/s of UTF-8 text; × = bytebpe's speed ÷ the peer's (ids checked equal first)")
    print("conditions: before each timed run every library's cache is emptied (bytebpe's piece cache, a new "
          "gigatoken) and primed on the other inputs and the sample corpus, never on the text timed")
    print(f"input: {source}")
    header = ["text", "how", "MB", "bytebpe"]
    for label in labels:
        header += [label.split()[0], "×"]
    table = []
    for row in rows:
        cells = [row.text, row.how, f"{row.megabytes:.2f}", rate(row.bytebpe)]
        for label in labels:
            cells += [rate(row.peers[label]), ratio(row.bytebpe, row.peers[label])]
        table.append(cells)
    print(_table(header, table))
    for peer in peers:
        if peer.fresh is not None:
            print(f"note: {peer.label} keeps a piece cache across calls: each timed run uses a fresh instance "
                  f"that first encoded the other texts, so the timed text is new to it, as in a dataset job")
    for note in notes:
        print(f"note: {note}")
    if workers > 1 and any(row.megabytes < SMALL_FOR_THREADS_MB for row in rows):
        # A few milliseconds of work: starting the pool's threads and handing them the documents cost about as
        # much as the second thread saves, so the batch rows can run no faster than one thread there.
        print(f"note: inputs under {SMALL_FOR_THREADS_MB} MB take a few milliseconds: {workers} threads cannot pay "
              "for their start there; give larger files to measure how the batch rows scale")
    return 0


def _export_tiktoken_cache(args: argparse.Namespace) -> int:
    paths = export_tiktoken_cache(args.folder, args.names or None)
    if not args.quiet:
        print(f"wrote {len(paths)} files to {args.folder}; stock tiktoken loads them offline with "
              f"TIKTOKEN_CACHE_DIR={args.folder}")
    return 0


# ==== helpers =====================================================================================


def _encoding_of(args: argparse.Namespace) -> Encoding:
    """The encoding named by --encoding, or read from --tokenizer: any file `bytebpe.load_tokenizer` reads (one
    written by `bytebpe train` or `Encoding.save`, a Hugging Face tokenizer.json, a Mistral Tekken file, a
    .tiktoken vocabulary with --model or --pattern/--pat-str)."""
    if args.tokenizer:
        return _tokenizer_file_of(args.tokenizer, args)[1]
    if getattr(args, "add_special_tokens", False):
        raise CommandError("--add-special-tokens applies a Hugging Face tokenizer.json's post_processor: give "
                           "--tokenizer FILE")
    _refuse_tiktoken_options(args)
    return registry.get_encoding(args.encoding or DEFAULT_ENCODING)


def _refuse_tiktoken_options(args: argparse.Namespace) -> None:
    """`_tiktoken_file_arguments`' options, given with no .tiktoken --tokenizer, are an error (not ignored)."""
    given = [option for option in ("model", "pattern", "pat_str", "special") if getattr(args, option, None)]
    if given:
        raise CommandError(f"--{given[0].replace('_', '-')} is for a .tiktoken vocabulary given as --tokenizer FILE")


def _tokenizer_file_of(path: str, args: argparse.Namespace) -> tuple[str, Encoding]:
    """(the file's format, its encoding): `load_tokenizer` with the options of `_tiktoken_file_arguments`."""
    if not Path(path).is_file():
        raise CommandError(f"tokenizer file not found: {path}")
    pat_str = getattr(args, "pat_str", None)
    if getattr(args, "pattern", None):
        pat_str = resolve_pattern(args.pattern)
    special_tokens = _parse_special_tokens(getattr(args, "special", None))
    if special_tokens is not None and pat_str is None:
        raise CommandError("--special goes with --pattern or --pat-str (a --model brings its own special tokens)")
    if pat_str is None and getattr(args, "model", None) is None and _is_tiktoken_file(path):
        raise CommandError(f"{path} is a .tiktoken vocabulary, which holds no split pattern (nor special tokens): "
                           f"give --model NAME ({', '.join(MODEL_PRESETS)}), or --pattern NAME or --pat-str REGEX")
    try:
        loaded = load_tokenizer_file(path, model=getattr(args, "model", None), pattern=pat_str,
                                     special_tokens=special_tokens,
                                     add_special_tokens=getattr(args, "add_special_tokens", False))
    except TokenizerJsonError as error:
        raise CommandError(str(error)) from None
    return loaded.kind, loaded.encoding


def _add_special_tokens_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--add-special-tokens", action="store_true",
                        help="with a Hugging Face --tokenizer: put the ids of its post_processor (a BOS such as "
                             "Llama 3's <|begin_of_text|>, RoBERTa's <s> ... </s>) around every document, as HF "
                             "does with add_special_tokens=True")


def _names_hf_tokenizer_json(output: Path) -> bool:
    """Whether `train` writes `output` as a Hugging Face tokenizer.json: its name ends in "tokenizer.json"
    (tokenizer.json, mine.tokenizer.json). Any other name, other .json ones included, gets bytebpe's own file,
    as before HF export existed."""
    return output.name.lower().endswith("tokenizer.json")


def _is_tiktoken_file(path: str) -> bool:
    """Whether `path` holds a .tiktoken vocabulary (by its first line; an unreadable path is not one)."""
    try:
        with open(path, "rb") as file:
            return recognise(file.read(4096).rsplit(b"\n", 1)[0] + b"\n").kind == "tiktoken"
    except OSError:
        return False


def _is_tekken_file(path: str) -> bool:
    """Whether `path` holds a Mistral Tekken file (parsed whole: the keys may come in any order)."""
    try:
        return recognise(Path(path).read_bytes()).kind == "tekken"
    except OSError:
        return False


def _parse_special_tokens(specs: list[str] | None) -> list[str] | dict[str, int] | None:
    """--special TOKEN (ids after the merges) or --special TOKEN=ID (all of them then need an id)."""
    if not specs:
        return None
    with_ids = [spec.rpartition("=") for spec in specs]
    if all(sep and token_id.isdigit() for _, sep, token_id in with_ids):
        return {token: int(token_id) for token, _, token_id in with_ids}
    if any(sep and token_id.isdigit() for _, sep, token_id in with_ids):
        raise CommandError("give every --special an id (TOKEN=ID) or none of them")
    return list(specs)


def _load_tokens(path: Path, dtype: str) -> np.ndarray:
    if not path.is_file():
        raise CommandError(f"tokens file not found: {path}")
    if path.suffix == ".npy":
        tokens = np.load(path, mmap_mode="r")
        if tokens.ndim != 1 or tokens.dtype.kind != "u":
            raise CommandError(f"{path} is not a 1-D array of token ids ({tokens.dtype}, shape {tokens.shape})")
        return tokens
    return np.memmap(path, dtype=np.dtype(dtype), mode="r")


def _offsets_path_for(tokens: Path) -> Path:
    name = tokens.name
    for suffix in (".tokens.npy", ".bin"):
        if name.endswith(suffix):
            return tokens.with_name(name[: -len(suffix)] + ".offsets.npy")
    return tokens.with_name(tokens.stem + ".offsets.npy")


def _checked_output(path: str) -> Path:
    """The output file of `train` / `count-pieces` / `chunk -o`, refused before any work when it cannot be one."""
    if path == "-":
        raise CommandError("-o -: this command writes a file, not standard output: give a file name")
    output = Path(path)
    if output.is_dir() or path.endswith(("/", os.sep)):
        raise CommandError(f"output {path!r} is a folder: give a file name")
    _check_output_folder(output, path)
    return output


def _checked_prefix(prefix: str) -> str:
    """`encode -o PREFIX`, refused before any work when no files can be written under it."""
    if prefix == "-":
        raise CommandError("-o -: encode writes files (PREFIX.tokens.npy, PREFIX.offsets.npy, PREFIX.meta.json), "
                           "not standard output: give a PREFIX such as out/data")
    _check_output_folder(Path(prefix), prefix)
    return prefix


def _check_output_folder(output: Path, given: str) -> None:
    """The folder an output goes in must be a folder (or not exist yet: it is made) that can be written."""
    for folder in output.parents:
        if folder.exists():
            if not folder.is_dir():
                raise CommandError(f"-o {given}: {str(folder)!r} is a file, not a folder")
            if not os.access(folder, os.W_OK | os.X_OK):
                raise CommandError(f"-o {given}: cannot write in the folder {str(folder)!r} (permission denied)")
            return


def _output_error(error: OSError, given: str) -> CommandError:
    """An OSError met while writing the output `given`, in the user's words: the output they named, not the
    lock or partial file bytebpe was writing beside it."""
    reason = error.strerror or str(error)
    return CommandError(f"cannot write -o {given}: {reason}")


def _writes_output(error: OSError, given: str) -> bool:
    """Whether `error` is about a file in the output's folder (its partial, lock or final files)."""
    if error.filename is None:
        return False
    folder = os.path.dirname(os.path.abspath(given))
    path = os.path.abspath(os.fsdecode(error.filename))
    return path == folder or os.path.dirname(path) == folder


def _write_output(output: Path, write: Callable[[Path], object]) -> None:
    """`write(output)` once its folder exists. The writers (`Encoding.save`, `save_piece_counts`) write
    atomically themselves (atomic_write.py): never a half-written file, even on Ctrl-C, and the leftovers of
    a killed earlier run of the same output are removed first."""
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        write(output)
    except OSError as error:
        raise _output_error(error, str(output)) from None


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             for row in [header, *rows]]
    return "\n".join(lines)


def _input_files(args: argparse.Namespace, inputs: list[str]) -> list[InputFile]:
    """The input files, checked against the read options (for commands that read them one by one)."""
    files = find_input_files(inputs, ignore_unknown=args.ignore_unknown, stdin_format=args.stdin_format)
    check_read_options(files, lines=args.lines, errors=args.errors)
    return files


def _read_options(args: argparse.Namespace) -> ReadOptions:
    """The reading options the input arguments hold, built once for the library's entry points."""
    return ReadOptions(field=args.field, lines=args.lines, skip_bad=args.skip_bad, errors=args.errors,
                       ignore_unknown=args.ignore_unknown, stdin_format=args.stdin_format)


def _warn(lines: list[str]) -> None:
    """What was skipped, replaced or ignored: on stderr even with --quiet (data left out is never silent)."""
    for line in lines:
        print(f"bytebpe: {line}" if not line.startswith("  ") else line, file=sys.stderr)


def _say(text: str, args: argparse.Namespace) -> None:
    """The closing summary: on stderr, like the progress bar, so stdout stays clean for piping."""
    if not getattr(args, "quiet", False):
        print(text, file=sys.stderr)


def _input_arguments(parser: argparse.ArgumentParser, required: bool = True, note: str = "") -> None:
    parser.add_argument("inputs", nargs="+" if required else "*", metavar="INPUT",
                        help=".txt, .jsonl/.ndjson, .json (an array) or .parquet files, the text formats optionally "
                             ".gz/.bz2/.xz/.zst; - for standard input; or folders of them" + note)
    parser.add_argument("--field", default=READ_DEFAULTS.field,
                        help="JSON field / Parquet column of the text (default: text)")
    parser.add_argument("--lines", action="store_true", help=".txt files: each line is a document")
    parser.add_argument("--skip-bad", action="store_true",
                        help="skip (and count) bad documents instead of stopping at the first")
    parser.add_argument("--errors", choices=["strict", "replace"], default=READ_DEFAULTS.errors,
                        help="bytes that are not UTF-8: strict (default) stops naming file:line; replace reads "
                             "them as U+FFFD and counts them")
    parser.add_argument("--ignore-unknown", action="store_true",
                        help="skip (and count) files of other kinds inside folders instead of stopping")
    parser.add_argument("--stdin-format", choices=list(STDIN_FORMATS), default=READ_DEFAULTS.stdin_format,
                        help="what - (standard input) holds (default: txt, one document)")


# The encoding of every command that tokenizes when neither --encoding nor --tokenizer is given (decode's is the
# one the metadata records).
DEFAULT_ENCODING = "cl100k_base"


def _encoding_arguments(parser: argparse.ArgumentParser, default: str | None = DEFAULT_ENCODING,
                        note: str = "") -> None:
    # The default is applied by _encoding_of, so that giving both --encoding and --tokenizer can be refused.
    parser.add_argument("--encoding", default=None,
                        help="encoding name" + (f" (default: {default})" if default else "") + note)
    parser.add_argument("--tokenizer", metavar="FILE",
                        help="a tokenizer file instead: from `bytebpe train`, a Hugging Face tokenizer.json, a "
                             "Mistral Tekken file, or a .tiktoken vocabulary (with --model, or --pattern/--pat-str)")
    _tiktoken_file_arguments(parser)


def _tiktoken_file_arguments(parser: argparse.ArgumentParser) -> None:
    """What a .tiktoken --tokenizer lacks: its split pattern and special tokens (a model's, or given)."""
    split = parser.add_mutually_exclusive_group()
    split.add_argument("--model", choices=list(MODEL_PRESETS), metavar="NAME",
                       help="a .tiktoken --tokenizer is this model's vocabulary: split it and number its special "
                            "tokens as the model's code does (" + ", ".join(MODEL_PRESETS) + ")")
    split.add_argument("--pattern", metavar="NAME",
                       help="a .tiktoken --tokenizer splits text as this encoding does: "
                            + ", ".join(registry.ENCODING_SPECS))
    split.add_argument("--pat-str", metavar="REGEX", help="a .tiktoken --tokenizer splits text with this regex")
    parser.add_argument("--special", action="append", metavar="TOKEN[=ID]",
                        help="with --pattern/--pat-str: a special token of the .tiktoken --tokenizer (repeat; "
                             "without ids they are numbered from the number of ranks on)")


def _counting_workers_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=_positive_int, default=None,
                        help="threads counting pre-tokens (default: one per usable core; the counts are the same)")


def _workers_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=_positive_int, default=None,
                        help="threads encoding documents (default: one per usable core)")


def _pattern_arguments(parser: argparse.ArgumentParser, note: str = "") -> None:
    split = parser.add_mutually_exclusive_group()
    split.add_argument("--pattern", metavar="NAME",
                       help="split text as this encoding does (default: cl100k_base" + note + "): "
                            + ", ".join(registry.ENCODING_SPECS))
    split.add_argument("--pat-str", metavar="REGEX", help="split text with this regex instead")


def _max_distinct_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-distinct-pieces", type=_positive_int, default=None, metavar="N",
                        help="bound the memory of counting: keep at most N distinct pre-tokens, pruning the rarest "
                             "by a deterministic rule (reported); default: keep all, exactly as rustbpe")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bytebpe", description="Byte-level BPE with tiktoken's ids.")
    parser.add_argument("--version", action="version", version=f"bytebpe {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    encode = commands.add_parser(
        "encode", help="encode datasets into PREFIX.tokens.npy + PREFIX.offsets.npy + PREFIX.meta.json")
    _input_arguments(encode)
    _encoding_arguments(encode)
    encode.add_argument("--output", "-o", required=True, metavar="PREFIX",
                        help="writes PREFIX.tokens.npy (or PREFIX.bin), PREFIX.offsets.npy and PREFIX.meta.json; "
                             "a trailing .tokens.npy/.npy (or .bin with --format bin) is dropped from PREFIX")
    encode.add_argument("--eot", action="store_true",
                        help="end every document with the encoding's end-of-text token (<|endoftext|>, Llama 3's "
                             "<|end_of_text|>, Mistral's </s>, DeepSeek's: the first it has)")
    encode.add_argument("--eot-token", metavar="TOKEN|ID", default=None,
                        help="end every document with this token (its text, e.g. '<|im_end|>', or its id)")
    encode.add_argument("--bos-token", metavar="TOKEN|ID", default=None,
                        help="begin every document with this token (its text, e.g. '<|begin_of_text|>', or its id)")
    _add_special_tokens_argument(encode)
    encode.add_argument("--format", choices=["npy", "bin"], default="npy",
                        help="npy (default) or bin: nanoGPT-style raw PREFIX.bin")
    encode.add_argument("--val-fraction", type=float, default=None, metavar="F",
                        help="split by documents: each goes to PREFIX.val.* with probability F, else to "
                             "PREFIX.train.* (deterministic for a given --seed)")
    encode.add_argument("--seed", type=int, default=0, help="seed of the --val-fraction split (default: 0)")
    encode.add_argument("--shard-tokens", type=_positive_int, default=None, metavar="N",
                        help="write numbered shards of at most N tokens (PREFIX.00000.tokens.npy, ...; documents "
                             "whole unless longer than a shard) and PREFIX.index.json listing them")
    encode.add_argument("--max-tokens", type=_positive_int, default=None, metavar="N",
                        help="keep each document's first N tokens (exactly encode(text)[:N]; --bos-token and "
                             "--eot come on top)")
    encode.add_argument("--fsync", action="store_true",
                        help="flush the files and their folder to disk before giving them their final names")
    encode.add_argument("--workers", type=_positive_int, default=None,
                        help="threads encoding documents (default: one per usable core); with --engine ray, Ray "
                             "workers (default: as many as the cluster offers)")
    encode.add_argument("--engine", choices=["local", "ray"], default="local",
                        help="local (default), or ray: read and encode on a Ray cluster (pip install "
                             "'bytebpe[ray]'; inputs on a file system every node reads), same output files")
    encode.add_argument("--address", default=None, metavar="ADDR",
                        help="--engine ray: the cluster to join (default: RAY_ADDRESS, a running local "
                             "cluster, or a new one on this machine)")
    encode.add_argument("--quiet", "-q", action="store_true", help="no progress bar or summary")
    encode.set_defaults(run=_encode)

    count = commands.add_parser("count", help="documents, bytes, tokens and bytes/token per file")
    _input_arguments(count)
    _encoding_arguments(count)
    _workers_argument(count)
    count.add_argument("--budget", type=_non_negative_int, default=None, metavar="N",
                       help="also count the documents of more than N tokens (a context window of N would cut "
                            "them), per file and in total")
    count.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    count.set_defaults(run=_count)

    chunk = commands.add_parser("chunk", help="cut each document into chunks of at most N tokens (JSON lines "
                                              "with their character spans)")
    _input_arguments(chunk)
    _encoding_arguments(chunk)
    chunk.add_argument("--max-tokens", type=_positive_int, required=True, metavar="N",
                       help="the budget of each chunk: the longest prefix of what is left that encodes to at most N "
                            "tokens (special-token text counts as ordinary text)")
    chunk.add_argument("--boundary", choices=["char", "piece"], default="char",
                       help="char (default): cut between any two characters; piece: only where the split pattern "
                            "starts a piece (no word cut in half), unless one piece alone is over N")
    chunk.add_argument("--output", "-o", default=None, metavar="FILE",
                       help="write the JSON lines here (whole or not at all); default (or -): standard output")
    chunk.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")
    chunk.set_defaults(run=_chunk)

    decode = commands.add_parser("decode", help="write the text of a tokens file (or of one document) to stdout")
    decode.add_argument("tokens", metavar="TOKENS", help="PREFIX.tokens.npy or PREFIX.bin (or PREFIX)")
    _encoding_arguments(decode, default=None, note="; default: the one PREFIX.meta.json records")
    decode.add_argument("--force", action="store_true",
                        help="decode even with another encoding (or dtype) than PREFIX.meta.json records")
    decode.add_argument("--doc", type=int, default=None, metavar="N", help="only document N (from 0; -1 = last)")
    decode.add_argument("--offsets", metavar="FILE", help="default: PREFIX.offsets.npy beside TOKENS")
    decode.add_argument("--dtype", choices=["uint16", "uint32"],
                        help=".bin files: the id type (default: uint16 when the vocabulary fits, else uint32)")
    decode.add_argument("--quiet", "-q", action="store_true",
                        help="nothing on stderr but errors (decode writes only the text, to stdout)")
    decode.set_defaults(run=_decode)

    info = commands.add_parser("info", help="what PREFIX.meta.json (or a sharded set's PREFIX.index.json) says "
                                            "about encoded token files")
    info.add_argument("prefix", metavar="PREFIX", help="the -o PREFIX of `bytebpe encode` (or one of its files)")
    info.add_argument("--json", action="store_true", help="print the metadata as JSON")
    info.add_argument("--quiet", "-q", action="store_true",
                      help="nothing on stderr but errors (info writes only its result, to stdout)")
    info.set_defaults(run=_info)

    train = commands.add_parser("train", help="learn a vocabulary from text files (or counts files) and save it")
    _input_arguments(train, required=False, note=" (or --from-counts instead)")
    train.add_argument("--from-counts", nargs="+", metavar="COUNTS",
                       help="train from files of `bytebpe count-pieces` (added up; they must share a pattern) "
                            "instead of INPUTs")
    train.add_argument("--vocab-size", type=_positive_int, required=True, metavar="N",
                       help="the number of ids: the 256 single bytes, the merges learned and the --special tokens")
    train.add_argument("--output", "-o", required=True, metavar="FILE",
                       help="the tokenizer file to write: a name ending in tokenizer.json (mine.tokenizer.json) "
                            "writes a Hugging Face tokenizer.json that HF tokenizers and transformers load with "
                            "the same ids; one ending in .tiktoken, tiktoken's format (the ranks only: no split "
                            "pattern or special tokens); any other name, bytebpe's own file (bytebpe.load)")
    _pattern_arguments(train, " (with --from-counts: the counts' own; if given, it must be that one)")
    train.add_argument("--special", action="append", metavar="TOKEN[=ID]", help="a special token (repeat)")
    train.add_argument("--min-frequency", type=_positive_int, default=1, metavar="N",
                       help="merge a pair only if it occurs at least N times; training stops at the first best pair "
                            "below it (default: 1)")
    train.add_argument("--max-token-length", type=_positive_int, default=None, metavar="BYTES",
                       help="never merge a pair into a token longer than this many bytes (default: no limit)")
    train.add_argument("--name", default=None, help="the encoding's name")
    _max_distinct_argument(train)
    _counting_workers_argument(train)
    train.add_argument("--quiet", "-q", action="store_true", help="no progress bar or summary")
    train.set_defaults(run=_train)

    count_pieces = commands.add_parser(
        "count-pieces", help="count the pre-tokens of text files once, for `train --from-counts` (several sizes, "
                             "several machines)")
    _input_arguments(count_pieces)
    count_pieces.add_argument("--output", "-o", required=True, metavar="FILE", help="the counts file to write")
    _pattern_arguments(count_pieces)
    _max_distinct_argument(count_pieces)
    _counting_workers_argument(count_pieces)
    count_pieces.add_argument("--quiet", "-q", action="store_true", help="no progress bar or summary")
    count_pieces.set_defaults(run=_count_pieces)

    download = commands.add_parser("download", help="fetch the files of encodings that are not bundled into the cache")
    download.add_argument("names", nargs="*", metavar="NAME", help="encoding names")
    download.add_argument("--all", action="store_true", help="every known encoding")
    download.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    download.set_defaults(run=_download)

    verify = commands.add_parser(
        "verify", help="check bytebpe's ids equal tiktoken's (or HF tokenizers') on your files; exit 1 at the "
                       "first difference, naming the document and token position")
    _input_arguments(verify)
    verify.add_argument("--against", choices=["tiktoken", "tokenizers", "mistral-common"], default=None,
                        help="the reference: tiktoken (default for --encoding and a .tiktoken --tokenizer), HF "
                             "tokenizers (default for other --tokenizer files; with --encoding it reads the "
                             "encoding exported as a tokenizer.json) or mistral-common (default for a Tekken "
                             "file); each needs its package installed")
    verify.add_argument("--encoding", action="append", default=None,
                        help="encoding name; repeat for several (default: cl100k_base, unless --tokenizer)")
    verify.add_argument("--tokenizer", action="append", default=None, metavar="FILE",
                        help="a Hugging Face tokenizer.json (HF reads the same file), a file from `bytebpe "
                             "train`, a Mistral Tekken file (mistral-common reads it) or a .tiktoken vocabulary "
                             "(with --model or --pattern/--pat-str; tiktoken reads it); repeat for several")
    _tiktoken_file_arguments(verify)
    _add_special_tokens_argument(verify)
    _workers_argument(verify)
    verify.add_argument("--quiet", "-q", action="store_true", help="no progress bar (the verdicts still print)")
    verify.set_defaults(run=_verify)

    bench = commands.add_parser(
        "bench", help="bytebpe vs tiktoken (and other installed peers) on your files, or on a shipped sample")
    _input_arguments(bench, required=False, note=" (default: the sample corpus shipped with bytebpe)")
    _encoding_arguments(bench)
    _workers_argument(bench)
    bench.add_argument("--repeat", type=_positive_int, default=3, help="timed runs; the best counts")
    bench.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr (the table still prints)")
    bench.set_defaults(run=_bench)

    export = commands.add_parser(
        "export-tiktoken-cache", help="write tiktoken's cache from the bundled vocabularies (for TIKTOKEN_CACHE_DIR)")
    export.add_argument("folder", metavar="DIR", help="the folder to write (created if needed)")
    export.add_argument("names", nargs="*", metavar="NAME", help="encoding names (default: all seven)")
    export.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    export.set_defaults(run=_export_tiktoken_cache)

    return parser
