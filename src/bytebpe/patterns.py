"""The pre-tokenization split patterns of OpenAI's encodings, and their special-token strings.

A pattern cuts text into pieces before BPE runs; token ids match tiktoken only if the pattern is
byte-for-byte the one tiktoken uses, so these strings are data, not something to tidy up.
They are written for the third-party ``regex`` module (``\\p{L}``, possessive ``++``).
"""
from __future__ import annotations

__all__ = [
    "R50K_PATTERN",
    "CL100K_PATTERN",
    "O200K_PATTERN",
    "ENDOFTEXT",
    "FIM_PREFIX",
    "FIM_MIDDLE",
    "FIM_SUFFIX",
    "ENDOFPROMPT",
]

# gpt2, r50k_base, p50k_base and p50k_edit. GPT-2's original release used
#   's|'t|'re|'ve|'m|'ll|'d| ?[\p{L}]+| ?[\p{N}]+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
# tiktoken ships this equivalent form, which avoids backtracking; the `\s++$` branch keeps
# trailing whitespace in one piece exactly as the original did.
R50K_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""

# cl100k_base: case-insensitive contractions, digits in runs of at most three, and newlines kept
# with the punctuation or whitespace in front of them.
CL100K_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""

# o200k_base and o200k_harmony: words split at case changes (an upper-case run followed by
# lower-case letters is one piece), contractions attached to the word before them.
_O200K_BRANCHES = (
    # a word ending in lower case: optional leading upper case, then lower case, then a contraction
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    # a word starting in upper case: upper case, then optional lower case, then a contraction
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
)
O200K_PATTERN = "|".join(_O200K_BRANCHES)

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"
