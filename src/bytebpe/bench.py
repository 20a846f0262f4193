"""`bytebpe bench`: bytebpe's throughput next to every peer tokenizer installed, on the user's files or on the
sample corpus the package ships (sample/PROVENANCE.md), printed as one short table of MB/s and ratios.

Each peer is checked for identical ids on every text before anything is timed: tiktoken's must be equal (a
difference is an error: bytebpe's ids would be wrong), and a peer that differs or refuses a text is left out
of that row with the reason printed — a fast wrong answer is not a result. Peers are optional imports:
  tiktoken   built from the bundled vocabularies (compare.tiktoken_reference), so it works offline;
  gigatoken  `Tokenizer.from_tiktoken(...).as_tiktoken()` on the same bundled files (r50k, cl100k, o200k).
"""
from __future__ import annotations

import importlib.metadata
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .compare import first_difference, tiktoken_reference
from .encoding import Encoding
from .tiktoken_cache import original_files

__all__ = ["SAMPLE_DIR", "BenchRow", "Peer", "bench_texts", "cut_documents", "find_peers", "sample_files"]

SAMPLE_DIR = Path(__file__).parent / "sample"
SAMPLE_FILES = ("english.txt", "code.txt", "multilingual.txt")
# Documents the batch rows cut a single text into: the 1-4 KB of web pages and source files in datasets.
DOCUMENT_BYTES = 4096


def sample_files() -> list[Path]:
    """The sample corpus: English prose, code and six scripts, ~0.43 MB in all (sample/PROVENANCE.md)."""
    return [SAMPLE_DIR / name for name in SAMPLE_FILES]


def cut_documents(text: str, size: int = DOCUMENT_BYTES) -> list[str]:
    """`text` cut at line ends into documents of about `size` characters (a line longer than that is one
    document); joined back they give `text`.

    >>> cut_documents("ab\\ncd\\nef\\n", 4)
    ['ab\\ncd\\n', 'ef\\n']
    """
    documents, start = [], 0
    while start < len(text):
        end = text.find("\n", start + size - 1)
        end = len(text) if end < 0 else end + 1
        documents.append(text[start:end])
        start = end
    return documents


@dataclass
class Peer:
    """Another tokenizer with tiktoken's encode_ordinary / encode_ordinary_batch(texts, num_threads=N)."""

    label: str                  # "tiktoken 0.14.0"
    encoding: Any
    must_match: bool = False    # a difference is bytebpe's bug (the oracle), not the peer's
    # For a peer that keeps a piece cache across calls: builds a fresh instance. Each timed run then uses one
    # that has first encoded *other* text (bench_texts' `priming`): its one-time setup is paid and its cache
    # holds what a long job learns elsewhere, but the timed text is new to it, as in a dataset job. Timing
    # the same text again would time cache hits; a cold instance on a small text would time its setup.
    fresh: Callable[[], Any] | None = None


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _tiktoken(name: str) -> Peer:
    return Peer(f"tiktoken {_version('tiktoken')}", tiktoken_reference(name), must_match=True)


# gigatoken names its known .tiktoken files by encoding; gpt2 has r50k_base's ranks, pattern and specials.
_GIGATOKEN_FILES = {"gpt2": "r50k_base", "r50k_base": "r50k_base", "cl100k_base": "cl100k_base",
                    "o200k_base": "o200k_base"}


def _gigatoken(name: str) -> Peer:
    import gigatoken

    base = _GIGATOKEN_FILES.get(name)
    if base is None:
        raise ValueError(f"it reads only {', '.join(sorted(set(_GIGATOKEN_FILES)))}, not {name}")
    ((_, data),) = original_files(base).items()

    def fresh() -> Any:
        with tempfile.TemporaryDirectory(prefix="bytebpe-bench-") as folder:
            path = Path(folder) / f"{base}.tiktoken"     # gigatoken takes the pattern from the file's name
            path.write_bytes(data)
            return gigatoken.Tokenizer.from_tiktoken(path).as_tiktoken()

    return Peer(f"gigatoken {_version('gigatoken')}", fresh(), fresh=fresh)


PEER_BUILDERS: dict[str, Callable[[str], Peer]] = {"tiktoken": _tiktoken, "gigatoken": _gigatoken}


def find_peers(name: str) -> tuple[list[Peer], list[str]]:
    """The peers that can encode `name` here, and one note for each that cannot (not installed, ...)."""
    peers, notes = [], []
    for module, build in PEER_BUILDERS.items():
        try:
            peers.append(build(name))
        except ImportError:
            notes.append(f"{module}: not installed (pip install {module})")
        except Exception as error:      # a peer that cannot load this encoding is left out, with the reason
            notes.append(f"{module}: left out ({type(error).__name__}: {error})")
    return peers, notes


@dataclass
class BenchRow:
    """One way of encoding one input: MB/s (10**6 UTF-8 bytes per second) for bytebpe and each peer."""

    text: str                   # file name
    how: str                    # "1 text, 1 thread" / "N docs, T threads"
    megabytes: float
    bytebpe: float
    peers: dict[str, float | None] = field(default_factory=dict)   # label -> MB/s, None when left out


def _utf8_megabytes(texts: Sequence[str]) -> float:
    return sum(len(text.encode("utf-8", "surrogatepass")) for text in texts) / 1e6


def _check(peer: Peer, ours: list[list[int]], run: Callable[[], list[list[int]]], where: str,
           how: str) -> str | None:
    """None when the peer's ids equal bytebpe's; else why it is left out (raises if the oracle differs)."""
    try:
        theirs = run()
    except Exception as error:
        if peer.must_match:
            raise
        return f"{type(error).__name__}: {error}"
    if theirs == ours:
        return None
    if len(theirs) != len(ours):
        message = f"{len(theirs)} documents back for {len(ours)} in {where} ({how})"
    else:
        document = next(i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b)
        message = (f"ids differ from bytebpe's in {where}, document {document}, token "
                   f"{first_difference(ours[document], list(theirs[document]))} ({how})")
    if peer.must_match:
        raise AssertionError(f"{peer.label}: {message}; run `bytebpe verify` to see where")
    return message


def _try_encode(encoding: Any, text: str) -> None:
    try:
        encoding.encode_ordinary(text)
    except Exception:   # a text the peer refuses (see _check) primes nothing; the timed runs report it
        pass


def bench_texts(name: str, texts: list[str], enc: Encoding, peers: list[Peer], *, workers: int, repeat: int,
                notes: list[str], priming: Sequence[str] = ()) -> list[BenchRow]:
    """Two rows for one input's documents: encode_ordinary on each (one thread), and encode_ordinary_batch on
    `workers` threads (a single long text is first cut into ~4 KB documents). Best of `repeat`, each library
    taking turns so that load from other processes hits them alike. Appends a note for each peer left out.
    `priming`: other text that each library encodes before each timed run, its cache emptied first (bytebpe's
    piece cache; a fresh instance of a caching peer, Peer.fresh): none is timed on text it has seen."""
    batch = texts if len(texts) > 1 else cut_documents(texts[0]) if texts else []
    ways = [
        (f"{len(texts):,} text{'s' if len(texts) != 1 else ''}, 1 thread", texts,
         lambda e, docs: [e.encode_ordinary(text) for text in docs]),
        (f"{len(batch):,} docs, {workers} thread{'s' if workers != 1 else ''}", batch,
         lambda e, docs: [list(ids) for ids in e.encode_ordinary_batch(docs, num_threads=workers)]),
    ]
    rows = []
    for how, docs, run in ways:
        ours = run(enc, docs)
        jobs = {"bytebpe": lambda run=run, docs=docs: run(enc, docs)}
        row = BenchRow(name, how, _utf8_megabytes(docs), 0.0, {peer.label: None for peer in peers})
        for peer in peers:
            why = _check(peer, ours, lambda peer=peer, run=run, docs=docs: run(peer.encoding, docs), name, how)
            if why is None:
                jobs[peer.label] = lambda peer=peer, run=run, docs=docs: run(peer.encoding, docs)
            else:
                note = f"{peer.label} left out of {name}: {why.split('; ')[0]}"
                if note not in notes:
                    notes.append(note)
        best = dict.fromkeys(jobs, float("inf"))
        for _ in range(repeat):
            for label, job in jobs.items():
                peer = next((peer for peer in peers if peer.label == label), None)
                if peer is None:
                    # bytebpe too times text it has not seen: its piece cache emptied (the id check above and
                    # earlier runs filled it with this very text), then primed as the peers are.
                    enc.set_piece_cache_bytes(enc.piece_cache_info().max_bytes)
                    for text in priming:
                        enc.encode_ordinary(text)
                elif peer.fresh is not None:
                    encoding = peer.fresh()
                    for text in priming:
                        _try_encode(encoding, text)
                    job = (lambda encoding, run=run, docs=docs: lambda: run(encoding, docs))(encoding)
                start = time.perf_counter()
                job()
                best[label] = min(best[label], time.perf_counter() - start)
        speeds = {label: row.megabytes / seconds if seconds > 0 else float("inf") for label, seconds in best.items()}
        row.bytebpe = speeds.pop("bytebpe")
        row.peers.update(speeds)
        rows.append(row)
    return rows
