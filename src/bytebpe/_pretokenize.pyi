"""Typed stubs for the compiled pre-tokenizer (`_pretokenize.pyx`)."""
import enum
from typing import final

class PatternKind(enum.IntEnum):
    R50K = 1
    CL100K = 2
    O200K = 3
    DEEPSEEK = 4

TIKTOKEN_VERSION: str
TOKENIZERS_VERSION: str
CLASS_BITS: dict[str, int]
# Whether R50K, CL100K and O200K scan 64 bytes of ASCII at a time (their byte-range classes are the tables').
BLOCK_SCAN_ENABLED: bool

@final
class Scanner:
    """The compiled equivalent of ``regex.compile(pattern).findall`` for one of the known patterns, with
    tiktoken's character classes (the tables match tiktoken TIKTOKEN_VERSION); DEEPSEEK cuts what HF
    `tokenizers` (TOKENIZERS_VERSION) cuts with DeepSeek's three Splits."""

    def __new__(cls, kind: PatternKind | int) -> Scanner: ...
    @property
    def kind(self) -> PatternKind: ...
    @staticmethod
    def for_pattern(pattern: str) -> Scanner | None: ...
    def split(self, text: str) -> list[str]: ...
    def __call__(self, text: str) -> list[str]: ...
    def count(self, text: str) -> int: ...

def code_point_classes() -> bytes: ...
def contraction_letter(cp: int) -> str: ...
