"""Typed stubs for the compiled pre-tokenizer (`_pretokenize.pyx`)."""
import enum
from typing import final

class PatternKind(enum.IntEnum):
    R50K = 1
    CL100K = 2
    O200K = 3
    DEEPSEEK = 4
    COMPILED = 5

TIKTOKEN_VERSION: str
TOKENIZERS_VERSION: str
# The tiktoken and tokenizers releases whose engines the compiled patterns' property tables were read off.
PROPS_VERSIONS: dict[str, str]
CLASS_BITS: dict[str, int]
# Whether R50K, CL100K and O200K scan 64 bytes of ASCII at a time (their byte-range classes are the tables').
BLOCK_SCAN_ENABLED: bool

@final
class Scanner:
    """The compiled equivalent of tiktoken's split by a pattern, with the oracle's character classes: a
    hand-written scanner for a known pattern (the tables match tiktoken TIKTOKEN_VERSION; DEEPSEEK cuts what HF
    `tokenizers` TOKENIZERS_VERSION cuts with DeepSeek's three Splits), or COMPILED: the program
    pattern_compiler.py makes of any pattern of the GPT family."""

    def __new__(cls, kind: PatternKind | int, pattern: str | None = None, dialect: str = "tiktoken",
                blocks: bool = True) -> Scanner: ...
    @property
    def kind(self) -> PatternKind: ...
    @property
    def pattern(self) -> str | None: ...
    @property
    def dialect(self) -> str | None: ...
    @staticmethod
    def compiled(pattern: str, dialect: str = "tiktoken", blocks: bool = True) -> Scanner: ...
    @property
    def block_rules(self) -> str: ...
    @staticmethod
    def for_pattern(pattern: str, compile: bool = True) -> Scanner | None: ...
    def split(self, text: str) -> list[str]: ...
    def __call__(self, text: str) -> list[str]: ...
    def count(self, text: str) -> int: ...

def code_point_classes() -> bytes: ...
def code_point_props(dialect: str) -> bytes: ...
def case_extras(dialect: str) -> dict[str, tuple[int, ...]]: ...
def contraction_letter(cp: int) -> str: ...
