"""bytebpe: byte-level BPE with a compiled core, giving tiktoken's ids.

>>> import bytebpe
>>> enc = bytebpe.get_encoding("cl100k_base")     # doctest: +SKIP
>>> enc.decode(enc.encode("hello world"))          # doctest: +SKIP
'hello world'
"""
from typing import TYPE_CHECKING

# The compiled core is imported unconditionally: there is no pure-Python fallback to fall into silently.
from ._core import InvalidTokenError
from ._decode_streams import DecodeStream
from ._version import __version__
from .encoding import Encoding, PieceCacheInfo, load
from .file_formats import TokenizerFileError
from .model_files import MODEL_PRESETS, ModelFileError, from_tekken_json, from_tiktoken_file, load_model_file
from .pretokenizer import PatternTimeoutError
from .registry import (
    UnknownEncodingError,
    UnknownModelError,
    VocabularyNotFoundError,
    encoding_for_model,
    encoding_name_for_model,
    get_encoding,
    list_encoding_names,
)
from .serialization import EncodingFileError
from .vocab_io import VocabularyHashError, dump_tiktoken_bpe
from .vocab_sources import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers
    from .datasets import EncodeSummary, FileStats, count_files, encode_files
    from .hf_import import TokenizerJsonError, from_tokenizer_json
    from .piece_counts import (
        count_pieces,
        count_pieces_from_files,
        load_piece_counts,
        save_piece_counts,
        train_from_counts,
    )
    from .readers import BadDocumentError, ReadOptions, ReadTally
    from .tiktoken_patch import patch_tiktoken, unpatch_tiktoken
    from .tokenizer_files import load_tokenizer
    from .training import EmptyCorpusWarning, train, train_from_files
    from .tokens.layout import (
        EncodingMismatchError,
        OutputOptions,
        ShardIndex,
        TokenFiles,
        TokenFilesMeta,
        TokenShards,
        load_token_files,
        load_token_shards,
        load_tokens,
    )


__all__ = [
    "BadDocumentError",
    "DecodeStream",
    "EmptyCorpusWarning",
    "EncodeSummary",
    "Encoding",
    "EncodingFileError",
    "EncodingMismatchError",
    "FileStats",
    "InvalidTokenError",
    "PatternTimeoutError",
    "MODEL_PRESETS",
    "ModelFileError",
    "PieceCacheInfo",
    "OutputOptions",
    "ReadOptions",
    "ReadTally",
    "ShardIndex",
    "TokenFiles",
    "TokenFilesMeta",
    "TokenShards",
    "TokenizerFileError",
    "TokenizerJsonError",
    "UnknownEncodingError",
    "UnknownModelError",
    "VocabularyHashError",
    "VocabularyNotFoundError",
    "count_files",
    "count_pieces",
    "count_pieces_from_files",
    "data_gym_to_mergeable_bpe_ranks",
    "dump_tiktoken_bpe",
    "encode_files",
    "encoding_for_model",
    "encoding_name_for_model",
    "from_tekken_json",
    "from_tiktoken_file",
    "from_tokenizer_json",
    "get_encoding",
    "list_encoding_names",
    "load",
    "load_model_file",
    "load_tiktoken_bpe",
    "load_piece_counts",
    "load_token_files",
    "load_token_shards",
    "load_tokens",
    "load_tokenizer",
    "patch_tiktoken",
    "save_piece_counts",
    "train",
    "train_from_counts",
    "train_from_files",
    "unpatch_tiktoken",
]

# The dataset tools bring numpy, gzip, json and threads along: they are imported on first use, so that
# `import bytebpe` stays as light as tiktoken's (benchmarks/README.md has the import times).
_LAZY_NAMES = {
    "BadDocumentError": "readers",
    "ReadOptions": "readers",
    "ReadTally": "readers",
    "EncodeSummary": "datasets",
    "FileStats": "datasets",
    "count_files": "datasets",
    "encode_files": "datasets",
    "EncodingMismatchError": "tokens.layout",
    "OutputOptions": "tokens.layout",
    "TokenFiles": "tokens.layout",
    "TokenFilesMeta": "tokens.layout",
    "load_token_files": "tokens.layout",
    "load_token_shards": "tokens.layout",
    "load_tokens": "tokens.layout",
    "ShardIndex": "tokens.layout",
    "TokenShards": "tokens.layout",
    "count_pieces": "piece_counts",
    "count_pieces_from_files": "piece_counts",
    "load_piece_counts": "piece_counts",
    "save_piece_counts": "piece_counts",
    "train_from_counts": "piece_counts",
    "TokenizerJsonError": "hf_import",
    "from_tokenizer_json": "hf_import",
    # (it reads tokenizer.json files too: hf_import comes with it)
    "load_tokenizer": "tokenizer_files",
    "EmptyCorpusWarning": "training",
    "patch_tiktoken": "tiktoken_patch",
    "unpatch_tiktoken": "tiktoken_patch",
    "train": "training",
    "train_from_files": "training",
}


def __dir__() -> list[str]:
    """The module's names, the lazy ones included (they are in __all__ but not yet in globals())."""
    return sorted({*globals(), *__all__})


def __getattr__(name: str) -> object:
    if name in _LAZY_NAMES:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY_NAMES[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
