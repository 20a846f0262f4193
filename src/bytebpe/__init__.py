"""bytebpe: byte-level BPE with a compiled core, giving tiktoken's ids.

>>> import bytebpe
>>> enc = bytebpe.get_encoding("cl100k_base")     # doctest: +SKIP
>>> enc.decode(enc.encode("hello world"))          # doctest: +SKIP
'hello world'
"""
# The compiled core is imported unconditionally: there is no pure-Python fallback to fall into silently.
from ._core import InvalidTokenError
from .encoding import Encoding
from .registry import (
    UnknownEncodingError,
    UnknownModelError,
    VocabularyNotFoundError,
    encoding_for_model,
    encoding_name_for_model,
    get_encoding,
    list_encoding_names,
)
from .serialization import EncodingFileError, load
from .training import EmptyCorpusWarning, train, train_from_files
from .vocab_io import (
    VocabularyHashError,
    data_gym_to_mergeable_bpe_ranks,
    dump_tiktoken_bpe,
    load_tiktoken_bpe,
)

__version__ = "0.1.0"

__all__ = [
    "EmptyCorpusWarning",
    "Encoding",
    "EncodingFileError",
    "InvalidTokenError",
    "UnknownEncodingError",
    "UnknownModelError",
    "VocabularyHashError",
    "VocabularyNotFoundError",
    "data_gym_to_mergeable_bpe_ranks",
    "dump_tiktoken_bpe",
    "encoding_for_model",
    "encoding_name_for_model",
    "get_encoding",
    "list_encoding_names",
    "load",
    "load_tiktoken_bpe",
    "train",
    "train_from_files",
]
