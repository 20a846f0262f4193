"""Hugging Face `tokenizer.json` export: any byte-level `Encoding` as a file that HF `tokenizers` (and
`transformers.PreTrainedTokenizerFast(tokenizer_file=...)`) loads and encodes with bytebpe's ids.

The file describes what bytebpe does in HF's terms:
- pre-tokenizer: a `Split` on the encoding's own pattern (each match a piece, `Isolated`; possessive intervals
  written as atomic groups, which Oniguruma reads as tiktoken's engine does), then `ByteLevel`
  without its own regex — it only maps each byte to GPT-2's printable character for it;
- model: `BPE` whose vocabulary is the ranks (token bytes as those characters -> id) and whose merges are
  derived from the ranks: token t's merge is the two parts tiktoken's rule leaves when it runs on t's bytes
  with only the tokens ranked below t (the same derivation as GPT-2's `vocab.bpe`, see vocab_io), listed in
  rank order; `ignore_merges` is on, because tiktoken takes a piece that is itself a token whole;
- special tokens as special added tokens with their ids (an id the encoding leaves free holds a placeholder
  no text can produce, so that HF keeps every id where bytebpe has it; of two strings for one id, HF can only
  hold the one bytebpe decodes it to); decoder `ByteLevel`.

HF merges by the rank of the *pair* (a merge applies only to the two parts it lists), tiktoken by the rank
of the merged bytes; with merges derived this way the two agree on every test corpus, and tests check the
ids against HF's on real text for all seven named encodings and trained ones. A vocabulary with a token that
no two lower-ranked tokens make (not a BPE vocabulary) cannot be written: ValueError naming the token.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .atomic_write import write_bytes_atomically
from .vocab_io import _bpe_below, _data_gym_byte_order

if TYPE_CHECKING:
    from .encoding import Encoding

__all__ = ["derive_merges", "tokenizer_json", "write_tokenizer_json"]


# A possessive interval, `X{n,m}+`: in Oniguruma (HF's regex engine) that is `(X{n,m})+`, a repetition of the
# interval, not a possessive one — cl100k's `\p{N}{1,3}+` would then take "1880" whole instead of "188", "0".
# X is one atom: a \p{..} class, an escape, a bracket class or a plain character.
_POSSESSIVE_INTERVAL = re.compile(r"(\\[pP]\{[^}]*\}|\\.|\[(?:\\.|[^\]\\])*\]|[^\\()|?*+{])(\{\d+(?:,\d*)?\})\+")


def oniguruma_pattern(pattern: str) -> str:
    r"""`pattern` as HF's Oniguruma reads it the way tiktoken's fancy-regex does: each possessive interval
    becomes an atomic group, the same match.

    >>> oniguruma_pattern(r"\p{N}{1,3}+|\s+")
    '(?>\\p{N}{1,3})|\\s+'
    """
    return _POSSESSIVE_INTERVAL.sub(r"(?>\1\2)", pattern)


def _byte_to_char() -> list[str]:
    """GPT-2's printable character for each byte (HF's ByteLevel uses the same table)."""
    _order, byte_of_char = _data_gym_byte_order()
    chars = [""] * 256
    for char, byte in byte_of_char.items():
        chars[byte] = char
    return chars


def derive_merges(mergeable_ranks: Mapping[bytes, int]) -> list[tuple[bytes, bytes]]:
    """The merge list (in rank order) that makes each multi-byte token from two lower-ranked ones.

    >>> derive_merges({b"a": 0, b"b": 1, b"c": 2, b"ab": 3, b"abc": 4})
    [(b'a', b'b'), (b'ab', b'c')]
    """
    merges = []
    for token, rank in sorted(mergeable_ranks.items(), key=lambda item: item[1]):
        if len(token) < 2:
            continue
        parts = _bpe_below(token, rank, mergeable_ranks)
        if len(parts) != 2:
            raise ValueError(f"token {token!r} (rank {rank}) is not made by merging two lower-ranked tokens "
                             f"(BPE on its bytes stops at {len(parts)} parts): HF's BPE cannot express it")
        merges.append((parts[0], parts[1]))
    return merges


def _special_token_per_id(enc: Encoding) -> dict[int, str]:
    """Each special id's one string. HF keeps one string per id; where an encoding has two (o200k_harmony's
    200018 is both <|endofprompt|> and <|reserved_200018|>), the one bytebpe decodes the id to is written, and
    HF cannot match the other."""
    return {token_id: enc.decode_single_token_bytes(token_id).decode("utf-8")
            for token_id in sorted(set(enc._special_tokens.values()))}


def tokenizer_json(enc: Encoding) -> dict[str, Any]:
    """The `tokenizer.json` content (a dict) for `enc`; see the module docstring."""
    chars = _byte_to_char()

    def text(token: bytes) -> str:
        return "".join(chars[byte] for byte in token)

    ranks = enc._mergeable_ranks
    vocab = {text(token): rank for token, rank in sorted(ranks.items(), key=lambda item: item[1])}
    # HF gives an added token the id of the same string in the model's vocabulary, and otherwise numbers the
    # added tokens densely after it: so the special tokens go into the vocabulary too (as in GPT-2's own
    # tokenizer.json), and each id the encoding leaves free (cl100k_base's 100256 and 100261-100275) gets a
    # placeholder that no text can produce (ByteLevel only yields its 256 characters, and U+E000 is not one).
    for token_id, content in _special_token_per_id(enc).items():
        vocab.setdefault(content, token_id)
    used = set(vocab.values())
    for free in sorted(set(range(max(used) + 1)) - used):
        vocab[f"\ue000unused {free}"] = free
    merges = [[text(left), text(right)] for left, right in derive_merges(ranks)]
    added_tokens = [
        {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for token_id, content in sorted(_special_token_per_id(enc).items())
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added_tokens,
        "normalizer": None if enc.normalizer is None else {"type": enc.normalizer},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": oniguruma_pattern(enc._pat_str)}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        ]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": merges},
    }


def write_tokenizer_json(enc: Encoding, path: str | os.PathLike[str]) -> None:
    """Write `enc` as a `tokenizer.json` at `path` (atomically: a failed write leaves the old file)."""
    write_bytes_atomically(path, json.dumps(tokenizer_json(enc), ensure_ascii=False).encode("utf-8"))
