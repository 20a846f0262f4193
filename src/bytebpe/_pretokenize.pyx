# cython: language_level=3
# distutils: language = c++
"""Compiled pre-tokenizer: hand-written scanners that cut text exactly where tiktoken does with the known
split patterns, and where HF `tokenizers` does with DeepSeek's three Splits (the DEEPSEEK kind, for an
imported tokenizer.json; its two extra classes, ``[\\p{L}\\p{M}]`` and ``[\\p{P}\\p{S}]``, are read off HF's
engine, and every class is checked against both oracles); and the COMPILED kind, which runs the program
pattern_compiler.py makes of any other pattern of the GPT family (_pattern_scan.h), with classes built from
_unicode_props.h (section "compiled patterns" below).

`regex` is a general backtracking engine; these patterns need far less. Every one of them partitions the
text (some branch matches at every position), so a scanner only has to answer "where does the piece that
starts here end?" by walking the branches in order, as the regex would, over UTF-8 bytes.

The character classes (``\\p{L}``, ``\\p{N}``, ``\\s``, o200k's case classes, the letters ``(?i:s)`` etc.
match) follow stock tiktoken, the oracle of the ids, not the `regex` package: the tables are read off
tiktoken's own regex engine, code point by code point (tools/gen_unicode_tables.py; TIKTOKEN_VERSION is the
release they match), and the tests check them against it on all 1,114,112 code points. tiktoken's Unicode
is older than that of `regex` 2026.11.19, which classes 17,560 code points differently (U+0558, U+0C5C,
U+A7CE, the U+10940 and U+16EA0 blocks, the newest CJK extensions...): ``\\p{L}`` 17,144, ``\\p{N}`` 336,
``\\s`` 0, o200k's upper class 17,115, its lower class 17,175, the contraction letters 0. The `regex` engine
(``pretokenizer="regex"``, custom patterns) follows the installed `regex` and can cut text containing them
differently. Surrogates have no class: the scanner never sees them (`Encoding` repairs them first). The
tests compare the scanners' structure with ``regex.findall`` on text free of such code points: a
representative of every class combination in many contexts, whole corpora and generated text.

On ASCII text the three tiktoken pattern families (R50K, CL100K, O200K) find where pieces start 64 bytes
at a time: the classes become bit masks, the pattern's rules bitwise operations on them (_piece_starts.h
says which, and why each start is certain). The byte-at-a-time scanners below take over at apostrophes,
non-ASCII bytes and whitespace runs that reach a block's end; the tests compare both with `regex` at every
alignment.

Backtracking is reproduced where the pattern needs it:
- ``\\s+(?!\\S)`` gives back the last whitespace character when a non-space follows the run;
- ``\\s*[\\r\\n]`` (and o200k's ``\\s*[\\r\\n]+``) ends after the *last* line break of the run;
- o200k's ``[Lu Lt Lm Lo M]*[Ll Lm Lo M]+`` gives back upper-class characters until a lower-class one
  can start the second run (Lm, Lo and M are in both classes).
"""
cimport cython
from cpython.list cimport PyList_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size) except NULL
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy
from libcpp.vector cimport vector

from ._shared cimport SCAN_BATCH, _decode, _load64

from . import pattern_compiler, patterns

cdef extern from "_unicode_tables.h":
    enum:
        BYTEBPE_LETTER      # \p{L}
        BYTEBPE_NUMBER      # \p{N}
        BYTEBPE_SPACE       # \s
        BYTEBPE_UPPER       # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
        BYTEBPE_LOWER       # [\p{Ll}\p{Lm}\p{Lo}\p{M}]
        BYTEBPE_LETTER_OR_MARK      # [\p{L}\p{M}], read off HF's engine
        BYTEBPE_PUNCT_OR_SYMBOL     # [\p{P}\p{S}], read off HF's engine
    const char* BYTEBPE_TIKTOKEN_VERSION
    const char* BYTEBPE_TOKENIZERS_VERSION
    uint8_t bytebpe_class_of(uint32_t cp) noexcept nogil
    uint32_t bytebpe_contraction_letter(uint32_t cp) noexcept nogil

cdef extern from "_char_words.h":
    enum:
        BYTEBPE_MARK_NONE
        BYTEBPE_MARK_AFTER_WORD
        BYTEBPE_MARK_EVERY
    Py_ssize_t bytebpe_char_word_end(const uint64_t* known, uint32_t mark, int mark_rule, const uint8_t* s,
                                     Py_ssize_t i, Py_ssize_t n, Py_ssize_t* seen) noexcept nogil

# CHAR_WORDS' mark rules by name (`Scanner.char_words`).
MARK_RULES = {"none": BYTEBPE_MARK_NONE, "after_word": BYTEBPE_MARK_AFTER_WORD, "every": BYTEBPE_MARK_EVERY}

cdef extern from "_ascii_runs.h":
    size_t bytebpe_ascii_letter_run(const uint8_t* s, size_t i, size_t n, uint8_t fold) noexcept nogil
    size_t bytebpe_byte_run(const uint8_t* s, size_t i, size_t n, uint8_t byte) noexcept nogil

cdef extern from "_piece_starts.h":
    uint64_t bytebpe_rules_starts(int rules, const uint8_t* s, uint64_t* hard) noexcept nogil
    uint64_t bytebpe_rules_starts_with(int isa, int rules, const uint8_t* s, uint64_t* hard) noexcept nogil
    int bytebpe_block_isa_supported(int isa) noexcept nogil
    int bytebpe_block_isa_best() noexcept nogil
    int bytebpe_block_isa
    enum:
        BYTEBPE_ISA_AVX512
    enum:
        BYTEBPE_BLOCKS_NONE
        BYTEBPE_BLOCKS_R50K
        BYTEBPE_BLOCKS_CL100K
        BYTEBPE_BLOCKS_O200K
    int bytebpe_starts_walk_supported() noexcept nogil
    int64_t bytebpe_scan_blocks_avx512(int rules, const uint8_t* s, int64_t n, int64_t* out, int64_t count,
                                       int64_t capacity, int64_t* start, int64_t* scalar_until) noexcept nogil
    unsigned bytebpe_ctz64 "__builtin_ctzll"(uint64_t x) noexcept nogil
    unsigned bytebpe_clz64 "__builtin_clzll"(uint64_t x) noexcept nogil

# Everything that is not "other": [^\s\p{L}\p{N}] is a code point with none of these bits.
cdef enum:
    WORDISH = BYTEBPE_LETTER | BYTEBPE_NUMBER | BYTEBPE_SPACE
    NO_END = -1

# Class bits of the ASCII range, copied out of the two-stage table so the common case is one load; and of
# every code point below U+0800 (two bytes of UTF-8: Latin with accents, Greek, Cyrillic, Armenian, Hebrew,
# Arabic, Syriac ...), indexed by the low bits of those two bytes, so that a letter of those scripts is one
# load instead of a decode and two dependent loads.
cdef uint8_t ASCII_CLASS[128]
cdef uint8_t TWO_BYTE_CLASS[2048]
# And of every code point below U+10000 (three bytes: CJK, Hangul, Indic, Thai ...), indexed by the low bits
# of its three bytes (64 KiB; a text of one script reads a few lines of it).
cdef uint8_t THREE_BYTE_CLASS[65536]


cdef void _fill_class_tables() noexcept nogil:
    cdef uint32_t cp
    for cp in range(65536):
        THREE_BYTE_CLASS[cp] = bytebpe_class_of(cp)
    memcpy(TWO_BYTE_CLASS, THREE_BYTE_CLASS, 2048)
    memcpy(ASCII_CLASS, THREE_BYTE_CLASS, 128)


_fill_class_tables()


cdef bint _block_classes_match():
    """Whether _piece_starts.h's ASCII classes (written as byte ranges) are the table's, byte for byte."""
    cdef int c
    cdef uint8_t bits
    for c in range(128):
        bits = ASCII_CLASS[c]
        if (bits & BYTEBPE_LETTER != 0) != (65 <= c <= 90 or 97 <= c <= 122):
            return False
        if (bits & BYTEBPE_NUMBER != 0) != (48 <= c <= 57):
            return False
        if (bits & BYTEBPE_SPACE != 0) != (c == 32 or 9 <= c <= 13):
            return False
    return True

# The 64-byte block scan of the tiktoken patterns (_piece_starts.h) writes the ASCII classes as byte ranges;
# it runs only when they are the table's (the tests require that it runs).
cdef bint BLOCK_SCAN = _block_classes_match()
BLOCK_SCAN_ENABLED = bool(BLOCK_SCAN)

# The instruction sets a block's bytes can be classed with (_piece_starts.h, "CLASSIFYING"), by the names
# `block_isas` and `set_block_isa` use; the widest the CPU runs is in use from import on.
BLOCK_ISAS = ("portable", "avx2", "avx512")
bytebpe_block_isa = bytebpe_block_isa_best()
# Whether the block scan may run its blocks in one C loop that walks their starts in vector registers (with
# the AVX-512 classing only; the CPU needs VBMI2).
cdef bint WIDE_WALK = bytebpe_starts_walk_supported()


def block_isas():
    """The names of the instruction sets this CPU and build can class blocks with, narrowest first."""
    return [name for isa, name in enumerate(BLOCK_ISAS) if bytebpe_block_isa_supported(isa)]


def set_block_isa(name):
    """Class blocks with instruction set `name` (one of block_isas()) from now on; returns the one in use
    before. For tests and measurements, which compare the variants: call it while no encode runs."""
    if name not in block_isas():
        raise ValueError(f"block classing with {name!r} is not available here; choose from {block_isas()}")
    global bytebpe_block_isa
    previous = BLOCK_ISAS[bytebpe_block_isa]
    bytebpe_block_isa = BLOCK_ISAS.index(name)
    return previous


def block_starts(bytes block not None, str rules, str isa):
    """(starts, hard) of the 64-byte `block` under block rules `rules` (a name of
    pattern_compiler.BLOCK_RULES other than "none"), classed with instruction set `isa`: the certain piece
    starts and the hard bytes as bit masks (bit j is byte j). For tests, which compare every variant."""
    if len(block) != BLOCK_BYTES:
        raise ValueError(f"a block is {BLOCK_BYTES} bytes, got {len(block)}")
    if isa not in block_isas():
        raise ValueError(f"block classing with {isa!r} is not available here; choose from {block_isas()}")
    index = pattern_compiler.BLOCK_RULES.index(rules)
    if index == BYTEBPE_BLOCKS_NONE:
        raise ValueError("rules 'none' has no block starts")
    cdef uint64_t hard = 0
    cdef uint64_t starts = bytebpe_rules_starts_with(BLOCK_ISAS.index(isa), index, <const uint8_t*>block, &hard)
    return starts, hard


# The tiktoken release whose regex engine the class tables were read off.
TIKTOKEN_VERSION = BYTEBPE_TIKTOKEN_VERSION.decode("ascii")
# The tokenizers release whose regex engine the two classes only imported files use were read off.
TOKENIZERS_VERSION = BYTEBPE_TOKENIZERS_VERSION.decode("ascii")


# ---- what a match looked at ------------------------------------------------------------------------
# A scanner's piece is a function of the bytes it read and of the positions it compared with the text's end
# n. The token-budget searches (budgets.py) need, for each piece, the furthest such position: a prefix of the
# text that holds it cuts the piece, and every piece before it, as the whole text does (every byte read is
# the same, and every comparison with the end comes out the same). Each scanner below is written once for
# two uses: with NoSeen (the scan, `scan_pieces`; `_see` compiles to nothing) and with MaxSeen, which keeps
# the furthest position (`scan_pieces_seen`). A run helper records where its run stopped (the code point
# that ended it, or the end), a piece function each position it tests before calling one; recording a
# position the scanner did not need is safe (it only makes the searches re-cut a piece more often).
cdef struct NoSeen:
    char unused

cdef struct MaxSeen:
    Py_ssize_t at

ctypedef fused Seen:
    NoSeen
    MaxSeen


cdef inline void _see(Seen* seen, Py_ssize_t position) noexcept nogil:
    if Seen is MaxSeen:
        if position > seen.at:
            seen.at = position


# ---- reading code points ------------------------------------------------------------------------------

cdef inline uint8_t _class_at(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, Py_ssize_t* width) noexcept nogil:
    if s[i] < 0x80:
        width[0] = 1
        return ASCII_CLASS[s[i]]
    if (s[i] & 0xE0) == 0xC0 and i + 1 < n:    # two bytes: the code point _decode would read, in one load
        width[0] = 2
        return TWO_BYTE_CLASS[((s[i] & 0x1F) << 6) | (s[i + 1] & 0x3F)]
    if (s[i] & 0xF0) == 0xE0 and i + 2 < n:    # three bytes: the same
        width[0] = 3
        return THREE_BYTE_CLASS[((s[i] & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F)]
    return bytebpe_class_of(_decode(s, i, n, width))


cdef inline Py_ssize_t _run_with(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, uint8_t bits,
                                 Seen* seen) noexcept nogil:
    """Skip code points that have any of `bits`."""
    cdef Py_ssize_t width
    # Letters (\p{L}: A-Z and a-z in ASCII) and o200k's lower class (a-z) start with a vectorized pass over
    # ASCII; the loop below goes on from wherever it stopped (a non-ASCII byte, or the end of the run).
    if bits == BYTEBPE_LETTER:
        i = <Py_ssize_t>bytebpe_ascii_letter_run(s, <size_t>i, <size_t>n, 0x20)
    elif bits == BYTEBPE_LOWER:
        i = <Py_ssize_t>bytebpe_ascii_letter_run(s, <size_t>i, <size_t>n, 0)
    while i < n:
        if s[i] < 0x80:
            if not (ASCII_CLASS[s[i]] & bits):
                break
            i += 1
        else:
            if not (_class_at(s, i, n, &width) & bits):
                break
            i += width
    _see(seen, i)
    return i


cdef inline Py_ssize_t _run_without(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, uint8_t bits,
                                    Seen* seen) noexcept nogil:
    """Skip code points that have none of `bits`."""
    cdef Py_ssize_t width
    while i < n:
        if s[i] < 0x80:
            if ASCII_CLASS[s[i]] & bits:
                break
            i += 1
        else:
            if _class_at(s, i, n, &width) & bits:
                break
            i += width
    _see(seen, i)
    return i


cdef inline Py_ssize_t _run_of_bytes(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, bint slash,
                                     Seen* seen) noexcept nogil:
    """Skip ``[\\r\\n]*`` (or ``[\\r\\n/]*`` with `slash`)."""
    while i < n and (s[i] == 13 or s[i] == 10 or (slash and s[i] == 47)):
        i += 1
    _see(seen, i)
    return i


cdef inline Py_ssize_t _digits(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, Py_ssize_t width,
                                Seen* seen) noexcept nogil:
    """``\\p{N}{1,3}`` from a number at s[i] of `width` bytes."""
    cdef Py_ssize_t count = 1
    i += width
    while count < 3 and i < n and _class_at(s, i, n, &width) & BYTEBPE_NUMBER:
        i += width
        count += 1
    _see(seen, i if count < 3 else i - 1)   # (after a third number nothing more was read)
    return i


cdef inline Py_ssize_t _whitespace(const uint8_t* s, Py_ssize_t i, Py_ssize_t n,
                                   Py_ssize_t* last_start, Py_ssize_t* newline_end, Seen* seen) noexcept nogil:
    """The run of ``\\s`` from s[i]; also where its last character starts, and where its last line break
    (\\r or \\n) ends, NO_END if it has none. Returns the end of the run."""
    cdef Py_ssize_t width
    last_start[0] = i
    newline_end[0] = NO_END
    while i < n:
        if s[i] == 32:      # a run of spaces at once (indentation): its last character starts at its end - 1
            i = <Py_ssize_t>bytebpe_byte_run(s, <size_t>i + 1, <size_t>n, 32)
            last_start[0] = i - 1
            continue
        if not (_class_at(s, i, n, &width) & BYTEBPE_SPACE):
            break
        last_start[0] = i
        if s[i] == 13 or s[i] == 10:
            newline_end[0] = i + 1
        i += width
    _see(seen, i)
    return i


cdef inline Py_ssize_t _contraction(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, Seen* seen) noexcept nogil:
    """End of ``(?i:'s|'t|'re|'ve|'m|'ll|'d)`` at s[i], or NO_END."""
    cdef Py_ssize_t width, second
    cdef uint32_t first, last
    if s[i] != 39:
        return NO_END
    _see(seen, i + 1)
    if i + 1 >= n:
        return NO_END
    first = bytebpe_contraction_letter(_decode(s, i + 1, n, &width))
    if first == 115 or first == 116 or first == 109 or first == 100:      # s t m d
        return i + 1 + width
    if (first == 114 or first == 118 or first == 108) and i + 1 + width < n:   # r v l
        second = i + 1 + width
        _see(seen, second)
        last = bytebpe_contraction_letter(_decode(s, second, n, &width))
        if (last == 101 and first != 108) or (last == 108 and first == 108):    # re ve | ll
            return second + width
    return NO_END


cdef inline Py_ssize_t _exact_contraction(const uint8_t* s, Py_ssize_t i, Py_ssize_t n,
                                         Seen* seen) noexcept nogil:
    """End of the case-sensitive ``'(?:[sdmt]|ll|ve|re)`` at s[i], or NO_END."""
    if s[i] != 39:
        return NO_END
    _see(seen, i + 1)
    if i + 1 >= n:
        return NO_END
    cdef uint8_t first = s[i + 1]
    if first == 115 or first == 116 or first == 109 or first == 100:
        return i + 2
    if first != 108 and first != 118 and first != 114:     # l v r
        return NO_END
    _see(seen, i + 2)
    if i + 2 < n and ((first == 108 and s[i + 2] == 108) or (first != 108 and s[i + 2] == 101)):
        return i + 3
    return NO_END


# ---- one scanner per pattern family --------------------------------------------------------------------

cdef Py_ssize_t _r50k_piece(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, Seen* seen) noexcept nogil:
    # '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s
    cdef Py_ssize_t end = _exact_contraction(s, i, n, seen)
    cdef Py_ssize_t j, width, last_start, newline_end
    cdef uint8_t bits
    if end != NO_END:
        return end
    if s[i] == 32:
        _see(seen, i + 1)
    j = i + 1 if s[i] == 32 and i + 1 < n else i    # the optional leading space
    bits = _class_at(s, j, n, &width)
    if bits & BYTEBPE_LETTER:
        return _run_with(s, j + width, n, BYTEBPE_LETTER, seen)
    if bits & BYTEBPE_NUMBER:
        return _run_with(s, j + width, n, BYTEBPE_NUMBER, seen)
    if not (bits & BYTEBPE_SPACE):
        return _run_without(s, j + width, n, WORDISH, seen)
    end = _whitespace(s, i, n, &last_start, &newline_end, seen)
    if end == n:
        return n                # \s++$
    if last_start > i:
        return last_start       # \s+(?!\S): the last space goes with what follows
    return end                  # \s


cdef Py_ssize_t _cl100k_piece(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, Seen* seen) noexcept nogil:
    # '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$
    # |\s*[\r\n]|\s+(?!\S)|\s
    cdef Py_ssize_t end
    cdef Py_ssize_t width, next_width, last_start, newline_end
    cdef uint8_t bits, next_bits
    # The commonest piece first: a space and a word that starts with an ASCII letter (one byte of
    # [^\r\n\p{L}\p{N}], then \p{L}++); no contraction starts with a space.
    if s[i] == 32 and i + 1 < n and s[i + 1] < 0x80 and ASCII_CLASS[s[i + 1]] & BYTEBPE_LETTER:
        return _run_with(s, i + 2, n, BYTEBPE_LETTER, seen)
    end = _contraction(s, i, n, seen)
    if end != NO_END:
        return end
    bits = _class_at(s, i, n, &width)
    if bits & BYTEBPE_LETTER:
        return _run_with(s, i + width, n, BYTEBPE_LETTER, seen)
    if bits & BYTEBPE_NUMBER:
        return _digits(s, i, n, width, seen)
    _see(seen, i + width)   # (and the test above read s[i + 1] when s[i] is a space)
    if i + width < n:
        next_bits = _class_at(s, i + width, n, &next_width)
        # [^\r\n\p{L}\p{N}] then letters: any one non-letter, non-digit, non-line-break before a word
        if next_bits & BYTEBPE_LETTER and s[i] != 13 and s[i] != 10:
            return _run_with(s, i + width + next_width, n, BYTEBPE_LETTER, seen)
        if s[i] == 32 and not (next_bits & WORDISH):
            return _run_of_bytes(s, _run_without(s, i + 1 + next_width, n, WORDISH, seen), n, False, seen)
    if not (bits & BYTEBPE_SPACE):
        return _run_of_bytes(s, _run_without(s, i + width, n, WORDISH, seen), n, False, seen)
    end = _whitespace(s, i, n, &last_start, &newline_end, seen)
    if end == n:
        return n                # \s++$
    if newline_end != NO_END:
        return newline_end      # \s*[\r\n]: up to the last line break
    if last_start > i:
        return last_start       # \s+(?!\S)
    return end                  # \s


cdef inline Py_ssize_t _o200k_lower_word(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, Seen* seen) noexcept nogil:
    """End of ``[Lu Lt Lm Lo M]*[Ll Lm Lo M]+(?i:'s|...)?`` at s[i], or NO_END."""
    cdef Py_ssize_t width, last_both = NO_END
    cdef uint8_t bits = 0
    cdef Py_ssize_t lower_start, end
    while i < n:
        bits = _class_at(s, i, n, &width)
        if not (bits & BYTEBPE_UPPER):
            break
        if bits & BYTEBPE_LOWER:
            last_both = i
        i += width
    _see(seen, i)
    if i < n and bits & BYTEBPE_LOWER:
        lower_start = i
    elif last_both != NO_END:
        lower_start = last_both     # the upper run gives back up to its last caseless character
    else:
        return NO_END
    end = _run_with(s, lower_start, n, BYTEBPE_LOWER, seen)
    if end >= n or s[end] != 39:     # the common case, decided here without a call
        return end
    i = _contraction(s, end, n, seen)
    return end if i == NO_END else i


cdef inline Py_ssize_t _o200k_upper_word(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, Seen* seen) noexcept nogil:
    """End of ``[Lu Lt Lm Lo M]+[Ll Lm Lo M]*(?i:'s|...)?`` at s[i], or NO_END."""
    cdef Py_ssize_t width, end
    _see(seen, i)
    if i >= n or not (_class_at(s, i, n, &width) & BYTEBPE_UPPER):
        return NO_END
    end = _run_with(s, _run_with(s, i + width, n, BYTEBPE_UPPER, seen), n, BYTEBPE_LOWER, seen)
    if end >= n or s[end] != 39:
        return end
    i = _contraction(s, end, n, seen)
    return end if i == NO_END else i


cdef Py_ssize_t _o200k_piece(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, Seen* seen) noexcept nogil:
    # [^\r\n\p{L}\p{N}]?[Lu Lt Lm Lo M]*[Ll Lm Lo M]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
    # |[^\r\n\p{L}\p{N}]?[Lu Lt Lm Lo M]+[Ll Lm Lo M]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
    # |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
    cdef Py_ssize_t width, next_width, end, last_start, newline_end
    cdef uint8_t bits = _class_at(s, i, n, &width)
    cdef bint prefixed = not (bits & (BYTEBPE_LETTER | BYTEBPE_NUMBER)) and s[i] != 13 and s[i] != 10
    # The two word branches, each first with the optional prefix character taken, then without it.
    if prefixed or bits & (BYTEBPE_UPPER | BYTEBPE_LOWER):
        if prefixed:
            end = _o200k_lower_word(s, i + width, n, seen)
            if end != NO_END:
                return end
        end = _o200k_lower_word(s, i, n, seen)
        if end != NO_END:
            return end
        if prefixed:
            end = _o200k_upper_word(s, i + width, n, seen)
            if end != NO_END:
                return end
        end = _o200k_upper_word(s, i, n, seen)
        if end != NO_END:
            return end
    if bits & BYTEBPE_NUMBER:
        return _digits(s, i, n, width, seen)
    if s[i] == 32:
        _see(seen, i + 1)
    if s[i] == 32 and i + 1 < n and not (_class_at(s, i + 1, n, &next_width) & WORDISH):
        return _run_of_bytes(s, _run_without(s, i + 1 + next_width, n, WORDISH, seen), n, True, seen)
    if not (bits & WORDISH):
        return _run_of_bytes(s, _run_without(s, i + width, n, WORDISH, seen), n, True, seen)
    end = _whitespace(s, i, n, &last_start, &newline_end, seen)
    if newline_end != NO_END:
        return newline_end      # \s*[\r\n]+: up to the last line break
    if end == n:
        return n                # \s+(?!\S) at the end of the text
    if last_start > i:
        return last_start       # \s+(?!\S)
    return end                  # \s+ (a single character here)


# ---- DeepSeek's tokenizer.json: three Isolated Splits in sequence -------------------------------------------
# HF runs \p{N}{1,3}, then [一-龥぀-ゟ゠-ヿ]+, then
#   [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*
#   |\s*[\r\n]+|\s+(?!\S)|\s+
# each over the pieces the one before cut, keeping matches and the gaps between them. So every maximal run
# of numbers is cut in threes, and the rest falls into segments: maximal runs of non-numbers that are all in
# the CJK ranges or all outside them. The third pattern runs over each segment as over a whole text (its
# end is the end of text for `(?!\S)`), and text it does not match (a format or control character before
# no letter) is a piece of its own. A segment's end is found as the scan meets it: a character out of the
# segment reads as OUT below, like the end of the text.

cdef enum:
    OUT = 128               # no class bit has it: "past the end of this segment"
    LM = BYTEBPE_LETTER_OR_MARK
    PS = BYTEBPE_PUNCT_OR_SYMBOL


cdef inline bint _cjk(uint32_t cp) noexcept nogil:
    # 一-龥 (U+4E00..U+9FA5) and ぀-ゟ゠-ヿ (U+3040..U+309F, U+30A0..U+30FF: one range)
    return (cp - 0x4E00u) <= (0x9FA5u - 0x4E00u) or (cp - 0x3040u) <= (0x30FFu - 0x3040u)


cdef inline uint8_t _segment_class(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, bint cjk,
                                   Py_ssize_t* width, Seen* seen) noexcept nogil:
    """The class bits of the code point at s[i], or OUT at the end of the text or of the segment (a number,
    or a character on the other side of the CJK line than the segment's)."""
    cdef uint32_t cp
    cdef uint8_t bits
    _see(seen, i)
    if i >= n:
        width[0] = 0
        return OUT
    if s[i] < 0x80:
        width[0] = 1
        bits = ASCII_CLASS[s[i]]
        return OUT if cjk or bits & BYTEBPE_NUMBER else bits
    cp = _decode(s, i, n, width)
    bits = bytebpe_class_of(cp)
    return OUT if bits & BYTEBPE_NUMBER or _cjk(cp) != cjk else bits


cdef inline Py_ssize_t _segment_run(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, bint cjk, uint8_t bits,
                                    Seen* seen) noexcept nogil:
    """Skip the code points of the segment that have any of `bits`."""
    cdef Py_ssize_t width
    if bits == LM and not cjk:
        i = <Py_ssize_t>bytebpe_ascii_letter_run(s, <size_t>i, <size_t>n, 0x20)    # A-Z a-z: letters, in segment
    while _segment_class(s, i, n, cjk, &width, seen) & bits:
        i += width
    return i


cdef inline bint _ascii_punctuation(uint8_t c) noexcept nogil:
    # [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]: the 32 printable ASCII characters that are not letters or digits
    return (33 <= c <= 47) or (58 <= c <= 64) or (91 <= c <= 96) or (123 <= c <= 126)


cdef inline bint _ascii_letter(uint8_t c) noexcept nogil:
    return (c | 0x20) - 97u <= 25u


cdef inline Py_ssize_t _deepseek_match(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, bint cjk,
                                      Seen* seen) noexcept nogil:
    """End of the third pattern's match at s[i] (in a segment of CJK-ness `cjk`), or NO_END."""
    cdef Py_ssize_t width, next_width, j, last_start, newline_end
    cdef uint8_t bits = _segment_class(s, i, n, cjk, &width, seen)
    cdef uint8_t next_bits
    cdef uint8_t c = s[i]
    # [ASCII punctuation][A-Za-z]+ (ASCII is never in a CJK segment)
    if not cjk and _ascii_punctuation(c):
        _see(seen, i + 1)
        if i + 1 < n and _ascii_letter(s[i + 1]):
            j = i + 2
            while j < n and _ascii_letter(s[j]):
                j += 1
            _see(seen, j)
            return j
    # [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
    if bits & LM:
        return _segment_run(s, i + width, n, cjk, LM, seen)
    next_bits = _segment_class(s, i + width, n, cjk, &next_width, seen)
    if not (bits & PS) and c != 13 and c != 10 and next_bits & LM:
        return _segment_run(s, i + width + next_width, n, cjk, LM, seen)
    # ' ?[\p{P}\p{S}]+[\r\n]*' (a line break is ASCII: never in a CJK segment)
    if c == 32 and next_bits & PS:
        j = _segment_run(s, i + 1 + next_width, n, cjk, PS, seen)
        return j if cjk else _run_of_bytes(s, j, n, False, seen)
    if bits & PS:
        j = _segment_run(s, i + width, n, cjk, PS, seen)
        return j if cjk else _run_of_bytes(s, j, n, False, seen)
    if not (bits & BYTEBPE_SPACE):
        return NO_END
    # \s*[\r\n]+ | \s+(?!\S) | \s+, over the segment's run of whitespace
    last_start = i
    newline_end = NO_END
    j = i
    while _segment_class(s, j, n, cjk, &width, seen) & BYTEBPE_SPACE:
        last_start = j
        if s[j] == 13 or s[j] == 10:
            newline_end = j + 1
        j += width
    if newline_end != NO_END:
        return newline_end      # \s*[\r\n]+: up to the last line break
    if _segment_class(s, j, n, cjk, &width, seen) == OUT:
        return j                # \s+(?!\S) at the end of the segment
    if last_start > i:
        return last_start       # \s+(?!\S): the last one goes with what follows
    return j                    # \s+ (one character here)


cdef Py_ssize_t _deepseek_piece(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, Seen* seen) noexcept nogil:
    cdef Py_ssize_t width, end
    cdef uint32_t cp = s[i]
    if cp < 0x80:
        width = 1
    else:
        cp = _decode(s, i, n, &width)
    if bytebpe_class_of(cp) & BYTEBPE_NUMBER:
        return _digits(s, i, n, width, seen)
    cdef bint cjk = _cjk(cp)
    end = _deepseek_match(s, i, n, cjk, seen)
    if end != NO_END:
        return end
    # Text the pattern does not match: a piece up to where it matches again, or to the segment's end.
    end = i + width
    while _segment_class(s, end, n, cjk, &width, seen) != OUT and _deepseek_match(s, end, n, cjk, seen) == NO_END:
        end += width
    return end


# The bytes one block covers (_piece_starts.h works on 64-bit masks); it needs all of them to be text.
cdef enum:
    BLOCK_BYTES = 64
cdef uint64_t LAST_BIT = 1ULL << 63


cdef Py_ssize_t _scan_by_blocks(const ScanSpec* spec, const uint8_t* s, Py_ssize_t start, Py_ssize_t n,
                                Py_ssize_t* piece_ends, Py_ssize_t capacity, Seen* seen,
                                Py_ssize_t* seen_out) noexcept nogil:
    """The pieces of a pattern with block rules (spec.block_rules: the hand-written R50K, CL100K, O200K, and
    compiled patterns that cut ASCII text as one of them), 64 bytes of ASCII at a time where it can
    (_piece_starts.h), else one by one (the hand-written scanner, or the compiled program).

    Where a block stops at a hard byte (non-ASCII, or an apostrophe), the scalar scanner takes the pieces up
    to and through it, and blocks resume after it (`scalar_until`). A block that ends no piece at all is
    mostly one of text in another script: the scalar scanner then goes on past its last hard byte, and no
    block is tried where the next eight bytes are not all ASCII (so that text in other scripts costs what
    the scalar scanner costs).

    A block's starts become piece ends eight at a time. With the AVX-512 classing on a CPU with VBMI2, the
    blocks that follow one another run in one C loop instead (`bytebpe_scan_blocks_avx512`, _piece_starts.h:
    constants set once, no call per block, the starts walked in vector registers): entered where the piece
    ends have room for a whole block's starts, it goes on while a block's fit.

    With MaxSeen, also what each piece looked at into `seen_out`: the pieces a block ends were decided by its
    64 bytes and by its end being no further than the text's (the last of its bytes, for every one of them:
    no further than the next block, so a search re-cuts at most a block); the scalar scanner's, exactly."""
    cdef Py_ssize_t count = 0, scalar_until = start if BLOCK_SCAN else n
    cdef uint64_t starts, hard
    cdef int unrolled
    cdef PatternKind kind = spec.kind
    cdef int rules = spec.block_rules
    # The blocks' C loop goes with the AVX-512 classing (WIDE_WALK: the CPU has VBMI2).
    cdef bint wide_walk = WIDE_WALK and bytebpe_block_isa == BYTEBPE_ISA_AVX512
    while start < n and count < capacity:
        # (The first eight bytes hold a non-ASCII one: a block could not go far, so it is not tried.)
        if start >= scalar_until and start + BLOCK_BYTES <= n and not (_load64(s + start) & 0x8080808080808080ULL):
            if Seen is NoSeen and wide_walk and capacity - count >= BLOCK_BYTES:
                # The blocks from here on in one C loop, as long as they run one after another.
                count = <Py_ssize_t>bytebpe_scan_blocks_avx512(rules, s, n, <int64_t*>piece_ends, count, capacity,
                                                                <int64_t*>&start, <int64_t*>&scalar_until)
                continue
            starts = bytebpe_rules_starts(rules, s + start, &hard)
            starts &= ~1ULL     # bit 0 is `start` itself
            if starts:
                if hard:
                    scalar_until = start + bytebpe_ctz64(hard) + 1
                while starts and count < capacity:
                    if count + 8 <= capacity:
                        # Eight starts at a time, without a branch per piece: the loop's exit after a
                        # block's ~14 pieces mispredicted about once a block. A start past the last is
                        # written (bit 63's, from the mask with it set) but not counted.
                        for unrolled in range(8):
                            piece_ends[count] = start + bytebpe_ctz64(starts | LAST_BIT)
                            if Seen is MaxSeen:
                                seen_out[count] = start + BLOCK_BYTES - 1
                            count += starts != 0
                            starts &= starts - 1
                    else:
                        piece_ends[count] = start + bytebpe_ctz64(starts)
                        if Seen is MaxSeen:
                            seen_out[count] = start + BLOCK_BYTES - 1
                        count += 1
                        starts &= starts - 1
                start = piece_ends[count - 1]
                continue
            # No certain start past the first byte: hard bytes first, or a run longer than the block.
            scalar_until = start + (BLOCK_BYTES - bytebpe_clz64(hard) if hard else 1)
        if Seen is MaxSeen:
            seen.at = start
        if kind == O200K:
            start = _o200k_piece(s, start, n, seen)
        elif kind == CL100K:
            start = _cl100k_piece(s, start, n, seen)
        elif kind == R50K:
            start = _r50k_piece(s, start, n, seen)
        elif Seen is MaxSeen:
            bytebpe_pattern_scan_seen(spec.program, s, start, n, &start, &seen.at, 1)
        else:
            bytebpe_pattern_scan(spec.program, s, start, n, &start, 1)
        piece_ends[count] = start
        if Seen is MaxSeen:
            seen_out[count] = seen.at
        count += 1
    return count


cdef Py_ssize_t scan_pieces(const ScanSpec* spec, const uint8_t* text, Py_ssize_t start, Py_ssize_t length,
                            Py_ssize_t* piece_ends, Py_ssize_t capacity) noexcept nogil:
    cdef Py_ssize_t count = 0
    cdef PatternKind kind = spec.kind
    if spec.block_rules != BYTEBPE_BLOCKS_NONE:
        return _scan_by_blocks(spec, text, start, length, piece_ends, capacity, <NoSeen*>NULL, NULL)
    elif kind == COMPILED:
        return bytebpe_pattern_scan(spec.program, text, start, length, piece_ends, capacity)
    elif kind == DEEPSEEK:
        while start < length and count < capacity:
            start = _deepseek_piece(text, start, length, <NoSeen*>NULL)
            piece_ends[count] = start
            count += 1
    elif kind == CHAR_WORDS:
        return _char_words(spec, text, start, length, piece_ends, NULL, capacity)
    return count


cdef inline Py_ssize_t _char_words(const ScanSpec* spec, const uint8_t* text, Py_ssize_t start, Py_ssize_t length,
                                   Py_ssize_t* piece_ends, Py_ssize_t* seen_out, Py_ssize_t capacity) noexcept nogil:
    cdef Py_ssize_t count = 0, seen
    while start < length and count < capacity:
        start = bytebpe_char_word_end(spec.known_chars, spec.mark, spec.mark_rule, text, start, length, &seen)
        piece_ends[count] = start
        if seen_out != NULL:
            seen_out[count] = seen
        count += 1
    return count


cdef Py_ssize_t scan_pieces_seen(const ScanSpec* spec, const uint8_t* text, Py_ssize_t start, Py_ssize_t length,
                                 Py_ssize_t* piece_ends, Py_ssize_t* seen_out, Py_ssize_t capacity,
                                 bint by_blocks) noexcept nogil:
    cdef Py_ssize_t count = 0
    cdef PatternKind kind = spec.kind
    cdef MaxSeen seen
    if by_blocks and spec.block_rules != BYTEBPE_BLOCKS_NONE:
        return _scan_by_blocks(spec, text, start, length, piece_ends, capacity, &seen, seen_out)
    if kind == COMPILED:
        return bytebpe_pattern_scan_seen(spec.program, text, start, length, piece_ends, seen_out, capacity)
    if kind == CHAR_WORDS:
        return _char_words(spec, text, start, length, piece_ends, seen_out, capacity)
    while start < length and count < capacity:
        seen.at = start
        if kind == O200K:
            start = _o200k_piece(text, start, length, &seen)
        elif kind == CL100K:
            start = _cl100k_piece(text, start, length, &seen)
        elif kind == R50K:
            start = _r50k_piece(text, start, length, &seen)
        else:
            start = _deepseek_piece(text, start, length, &seen)
        piece_ends[count] = start
        seen_out[count] = seen.at
        count += 1
    return count


# ---- Python face ---------------------------------------------------------------------------------------

# SCAN_BATCH (_shared.pxd): piece ends produced per scan_pieces call.


# ---- compiled patterns ---------------------------------------------------------------------------------

cdef extern from "_unicode_props.h":
    enum:
        BYTEBPE_ORACLE_TIKTOKEN
        BYTEBPE_ORACLE_HF
    const char* BYTEBPE_PROPS_TIKTOKEN_VERSION
    const char* BYTEBPE_PROPS_HF_VERSION
    uint8_t bytebpe_props_of(int oracle, uint32_t cp) noexcept nogil
    uint16_t bytebpe_props_block(int oracle, uint32_t block) noexcept nogil
    const uint32_t* bytebpe_case_extras(int oracle) noexcept nogil

cdef extern from "_pattern_scan.h":
    Py_ssize_t bytebpe_pattern_scan(const PatternProgram* p, const uint8_t* s, Py_ssize_t start, Py_ssize_t n,
                                    Py_ssize_t* piece_ends, Py_ssize_t capacity) noexcept nogil
    Py_ssize_t bytebpe_pattern_scan_seen(const PatternProgram* p, const uint8_t* s, Py_ssize_t start,
                                         Py_ssize_t n, Py_ssize_t* piece_ends, Py_ssize_t* seen_out,
                                         Py_ssize_t capacity) noexcept nogil
    uint32_t bytebpe_pattern_bits_of(const PatternProgram* p, uint32_t cp) noexcept nogil
    enum:
        BYTEBPE_PATTERN_MAX_INSTRUCTIONS
        BYTEBPE_PATTERN_WORDS

# The releases whose regex engines the property tables of compiled patterns were read off.
PROPS_VERSIONS = {"tiktoken": BYTEBPE_PROPS_TIKTOKEN_VERSION.decode("ascii"),
                  "hf": BYTEBPE_PROPS_HF_VERSION.decode("ascii")}
_ORACLES = {"tiktoken": BYTEBPE_ORACLE_TIKTOKEN, "hf": BYTEBPE_ORACLE_HF}
_N_BLOCKS = 0x110000 >> 8


def case_extras(str dialect not None):
    """ASCII letter -> the other code points the oracle's ``(?i:letter)`` matches (U+017F for s, U+212A for k)."""
    cdef const uint32_t* pairs = bytebpe_case_extras(_ORACLES[dialect])
    cdef dict extras = {}
    cdef Py_ssize_t k = 0
    while pairs[k] != 0:
        extras.setdefault(chr(pairs[k + 1]), []).append(pairs[k])
        k += 2
    return {letter: tuple(cps) for letter, cps in extras.items()}


def code_point_props(str dialect not None):
    """The property byte (_unicode_props.h) of every code point for `dialect`'s oracle (for the tests)."""
    cdef int oracle = _ORACLES[dialect]
    cdef bytearray props = bytearray(0x110000)
    cdef uint32_t cp
    for cp in range(0x110000):
        props[cp] = bytebpe_props_of(oracle, cp)
    return bytes(props)


def _explicit_bits(list ranges, uint32_t block):
    """For the code points of `block`: (cp - block start) -> bits from explicit ranges, or None if none."""
    cdef uint32_t low_cp = block << 8, high_cp = low_cp + 255
    found = None
    for low, high, bits in ranges:
        if high < low_cp or low > high_cp:
            continue
        if found is None:
            found = {}
        for cp in range(max(low, low_cp), min(high, high_cp) + 1):
            found[cp - low_cp] = found.get(cp - low_cp, 0) | bits
    return found


cdef int _build_program(Scanner scanner, program, int oracle) except -1:
    """Fill scanner.program: instructions, branch starts, and the class tables (see _pattern_scan.h).

    A code point's bits: bits 0..n_sets-1 the program's sets, then one bit per top-level branch that says the
    code point can start that branch. Blocks of code points with no explicit code point of any set are
    functions of the oracle's property block alone, so each distinct property block is computed once."""
    cdef PatternProgram* p = &scanner.program
    cdef int n_sets = len(program.sets)
    cdef uint32_t value_bits[256]
    cdef uint32_t branch_masks[32]
    cdef uint32_t branch_bits[32]
    cdef uint32_t negated = 0, set_mask, sets, result, explicit
    cdef uint32_t block, cp
    cdef int k, j, value, bit, n_branches = len(program.branch_starts)
    cdef dict combo_ids = {}, block_ids = {}, props_blocks = {}, combo_example = {}
    cdef bytearray row = bytearray(256)
    set_mask = <uint32_t>(((<uint64_t>1) << n_sets) - 1)     # (n_sets may be 32: shift a 64-bit one)
    if n_branches > 32:
        raise pattern_compiler.UnsupportedPattern(f"{program.pattern!r} has more than 32 branches")
    for value in range(256):
        value_bits[value] = 0
    ranges = []
    for bit, charset in enumerate(program.sets):
        for value in range(256):
            if (charset.values >> value) & 1:
                value_bits[value] |= 1u << bit
        if charset.negated:
            negated |= 1u << bit
        for low, high in charset.ranges:
            ranges.append((low, high, 1u << bit))     # unsigned: bit 31 is a set's bit too
    # Per branch: the bit that says a code point can start it, from its first sets and bytes; 0 (try it
    # everywhere) when it has none or the bits ran out.
    bit = n_sets
    for k in range(n_branches):
        sets_of, bytes_of = program.first_sets[k], program.first_bytes[k]
        branch_masks[k] = branch_bits[k] = 0
        if bit >= 32 or (not sets_of and not bytes_of):
            continue
        branch_bits[k] = 1u << bit
        for j in sets_of:
            branch_masks[k] |= 1u << <int>j
        for byte in bytes_of:
            ranges.append((byte, byte, 1u << bit))
        bit += 1
    p.stage1.resize(_N_BLOCKS)
    # The blocks that hold an explicit code point (most hold none); and the last combination looked up, which
    # neighbouring code points mostly share (the dicts are asked only when it changes).
    explicit_blocks = {block for low, high, _ in ranges for block in range(low >> 8, (high >> 8) + 1)}
    cdef uint32_t last_result = 0, last_example = 0
    cdef bint have_last = False, have_example = False
    cdef int last_found = 0
    for block in range(_N_BLOCKS):
        extra = _explicit_bits(ranges, block) if block in explicit_blocks else None
        props_block = bytebpe_props_block(oracle, block)
        if extra is None and props_block in props_blocks:
            p.stage1[block] = props_blocks[props_block]
            continue
        for k in range(256):
            cp = (block << 8) | <uint32_t>k
            explicit = <uint32_t>extra.get(k, 0) if extra is not None else 0
            sets = ((value_bits[bytebpe_props_of(oracle, cp)] | explicit) & set_mask) ^ negated
            result = sets | (explicit & ~set_mask)
            for j in range(n_branches):
                if sets & branch_masks[j]:
                    result |= branch_bits[j]
            if not have_last or result != last_result:
                found = combo_ids.get(result)
                if found is None:
                    if len(combo_ids) >= 256:
                        raise pattern_compiler.UnsupportedPattern(
                            f"{program.pattern!r}: its classes combine in more than 256 ways")
                    found = combo_ids[result] = len(combo_ids)
                    p.combos.push_back(result)
                last_result, last_found, have_last = result, found, True
            if not (0xD800 <= cp < 0xE000) and (not have_example or result != last_example):
                if result not in combo_example:
                    combo_example[result] = cp
                last_example, have_example = result, True
            row[k] = last_found
        key = bytes(row)
        block_id = block_ids.get(key)
        if block_id is None:
            block_id = block_ids[key] = len(block_ids)
            for k in range(256):
                p.stage2.push_back(row[k])
        p.stage1[block] = block_id
        if extra is None and not (0xD8 <= block < 0xE0):   # a block computed from code points with examples
            props_blocks[props_block] = block_id
    for k in range(128, 256):
        p.ascii[k] = 0
    for k in range(128):
        p.ascii[k] = bytebpe_pattern_bits_of(p, k)
        p.ascii_branches[k] = 0
        for j in range(n_branches):
            if branch_bits[j] == 0 or p.ascii[k] & branch_bits[j]:
                p.ascii_branches[k] |= 1u << j
    # Every code point must start a match of some branch (the pieces then partition every text).
    for result, cp in combo_example.items():
        if not any(b >= 0 and (result >> b) & 1 and not (result & blocked) for b, blocked in program.coverage):
            raise pattern_compiler.UnsupportedPattern(
                f"{program.pattern!r} may match nothing at U+{cp:04X}: the compiled scanner needs a pattern "
                "that matches a piece at every position")
    for word in program.code:
        p.code.push_back(word)
    for k in range(n_branches):
        p.branch_pc.push_back(program.branch_starts[k])
        p.branch_first.push_back(branch_bits[k])
    for word in program.shapes:
        p.branch_shape.push_back(word)
    return 0


cdef bytes _ascii_props(Scanner scanner, program, int oracle):
    """The oracle's property byte of each ASCII code point, after checking that pattern_compiler reads the
    program's sets on ASCII as the scanner's tables do (block_rules decides with them)."""
    cdef bytes props = bytes([bytebpe_props_of(oracle, cp) for cp in range(128)])
    by_property = pattern_compiler._ascii_by_property(props)
    cdef int bit, cp
    for bit, charset in enumerate(program.sets):
        tables = sum(1 << cp for cp in range(128) if (scanner.program.ascii[cp] >> bit) & 1)
        if pattern_compiler._ascii_mask(charset, by_property) != tables & pattern_compiler._BLOCK_CHARS:
            raise AssertionError(f"the ASCII members of set {bit} of {program.pattern!r} differ")
    return props


_compiled_scanners = {}
_COMPILED_SCANNERS_KEPT = 64


cdef int _set_char_words(Scanner scanner, str characters, str mark, str mark_rule) except -1:
    """Fill a CHAR_WORDS scanner's spec: the bit set of `characters`, the mark and its rule."""
    if mark_rule not in MARK_RULES:
        raise ValueError(f"mark_rule must be one of {', '.join(MARK_RULES)}, got {mark_rule!r}")
    if len(mark) != 1:
        raise ValueError(f"the mark must be one character, got {mark!r}")
    cdef uint32_t cp
    scanner.known_chars.assign(0x110000 // 64, 0)
    for char in characters:
        cp = ord(char)
        if 0xD800 <= cp <= 0xDFFF:
            continue    # (a surrogate: no text that reaches a scanner holds one)
        scanner.known_chars[cp >> 6] |= 1ULL << (cp & 63)
    scanner.spec.known_chars = scanner.known_chars.data()
    scanner.spec.mark = ord(mark)
    scanner.spec.mark_rule = MARK_RULES[mark_rule]
    scanner.char_words_args = (characters, mark, mark_rule)
    return 0


@cython.final
cdef class Scanner:
    """The compiled equivalent of tiktoken's split by a pattern (``find_iter``), with the oracle's character
    classes (see the module docstring): a hand-written scanner for a known pattern (R50K, CL100K, O200K; the
    DEEPSEEK kind for HF's pre-tokenizer of DeepSeek's tokenizer.json), or for any pattern of the family the
    program pattern_compiler.py makes of it (COMPILED, `Scanner.compiled`).

    >>> Scanner.for_pattern(CL100K_PATTERN).split("Hello world's")     # doctest: +SKIP
    ['Hello', ' world', "'s"]
    """

    def __cinit__(self, PatternKind kind, str pattern=None, str dialect="tiktoken", bint blocks=True,
                  tuple char_words=None):
        if kind not in (R50K, CL100K, O200K, DEEPSEEK, COMPILED, CHAR_WORDS):
            raise ValueError(f"unknown pattern kind {kind!r}")
        self.kind = kind
        self.spec.kind = kind
        self.spec.program = NULL
        self.spec.known_chars = NULL
        if kind == CHAR_WORDS:
            if char_words is None:
                raise ValueError("a CHAR_WORDS scanner is made by Scanner.char_words")
            characters, mark, mark_rule = char_words
            _set_char_words(self, characters, mark, mark_rule)
        self.spec.block_rules = {R50K: BYTEBPE_BLOCKS_R50K, CL100K: BYTEBPE_BLOCKS_CL100K,
                                 O200K: BYTEBPE_BLOCKS_O200K}.get(kind, BYTEBPE_BLOCKS_NONE)
        if kind == COMPILED:
            if pattern is None:
                raise ValueError("a COMPILED scanner needs its pattern")
            if dialect not in _ORACLES:
                raise ValueError(f'dialect must be "tiktoken" or "hf", got {dialect!r}')
            program = pattern_compiler.compile_split_pattern(pattern, dialect, case_extras(dialect))
            if len(program.code) // BYTEBPE_PATTERN_WORDS >= BYTEBPE_PATTERN_MAX_INSTRUCTIONS:
                raise pattern_compiler.UnsupportedPattern(f"{pattern!r} compiles to too many instructions")
            _build_program(self, program, _ORACLES[dialect])
            self.spec.program = &self.program
            self.pattern = pattern
            self.dialect = dialect
            self.blocks = blocks
            if blocks:
                self.spec.block_rules = pattern_compiler.BLOCK_RULES.index(
                    pattern_compiler.block_rules(program, _ascii_props(self, program, _ORACLES[dialect])))

    @staticmethod
    def compiled(str pattern not None, str dialect="tiktoken", bint blocks=True):
        """The compiled scanner of `pattern` with `dialect`'s oracle ("tiktoken" or "hf"); raises
        `pattern_compiler.UnsupportedPattern` for a pattern outside the family. Cached per pattern.

        `blocks`: scan ASCII text 64 bytes at a time when the pattern cuts it as one of the hand-written
        block rules do (`block_rules`); False runs the program alone (the tests compare the two)."""
        key = (pattern, dialect, blocks)
        scanner = _compiled_scanners.get(key)
        if scanner is None:
            scanner = Scanner(COMPILED, pattern, dialect, blocks)
            if len(_compiled_scanners) >= _COMPILED_SCANNERS_KEPT:
                _compiled_scanners.pop(next(iter(_compiled_scanners)))
            _compiled_scanners[key] = scanner
        return scanner

    @staticmethod
    def char_words(str characters not None, str mark not None, str mark_rule not None):
        """The words of a character-level model (_char_words.h): runs of the `characters` it has tokens for,
        each byte of any other character a piece of its own; `mark_rule` ("none", "after_word", "every")
        says where a run is cut before the `mark` (Metaspace's replacement) besides."""
        return Scanner(CHAR_WORDS, char_words=(characters, mark, mark_rule))

    @staticmethod
    def for_pattern(str pattern not None, bint compile=True):
        """The scanner equal to `pattern` (tiktoken's classes): a hand-written one for a known pattern, else
        (with `compile`) its compiled program; None when the pattern is outside the family."""
        kind = {
            patterns.R50K_PATTERN: R50K,
            patterns.CL100K_PATTERN: CL100K,
            patterns.O200K_PATTERN: O200K,
        }.get(pattern)
        if kind is not None:
            return Scanner(kind)
        if not compile:
            return None
        try:
            return Scanner.compiled(pattern)
        except pattern_compiler.UnsupportedPattern:
            return None

    def split(self, str text not None):
        """The pieces of `text`, as the oracle cuts them."""
        self._check_pieces_are_text()
        cdef bytes utf8 = text.encode("utf-8")
        cdef const uint8_t* data = <const uint8_t*><const char*>utf8
        cdef Py_ssize_t n = len(utf8)
        cdef Py_ssize_t ends[SCAN_BATCH]
        cdef Py_ssize_t start = 0, count, k
        cdef list pieces = []
        while start < n:
            count = scan_pieces(&self.spec, data, start, n, ends, SCAN_BATCH)
            for k in range(count):
                pieces.append(PyUnicode_DecodeUTF8(<const char*>data + start, ends[k] - start, NULL))
                start = ends[k]
        return pieces

    def __call__(self, str text not None):
        return self.split(text)

    cdef int _check_pieces_are_text(self) except -1:
        if self.kind == CHAR_WORDS:
            raise TypeError("a CHAR_WORDS scanner's pieces may be single bytes of a character, not text: "
                            "pieces_seen gives where they end")
        return 0

    def pieces_from(self, str text not None, Py_ssize_t start, Py_ssize_t max_pieces):
        """(up to `max_pieces` pieces of `text` from byte `start` of its UTF-8 on (a piece start), where the next
        piece starts): the pieces the whole text has there, found without scanning the rest. The text's UTF-8
        is the one CPython keeps with the str (made once; for ASCII text, the str's own buffer)."""
        self._check_pieces_are_text()
        cdef Py_ssize_t n
        cdef const uint8_t* data = <const uint8_t*>PyUnicode_AsUTF8AndSize(text, &n)
        cdef Py_ssize_t ends[SCAN_BATCH]
        cdef Py_ssize_t count, k
        cdef list pieces = []
        if start < 0 or start > n:
            raise ValueError(f"start {start} is outside the text's {n} bytes")
        while start < n and PyList_GET_SIZE(pieces) < max_pieces:
            count = scan_pieces(&self.spec, data, start, n, ends,
                                min(SCAN_BATCH, max_pieces - PyList_GET_SIZE(pieces)))
            for k in range(count):
                pieces.append(PyUnicode_DecodeUTF8(<const char*>data + start, ends[k] - start, NULL))
                start = ends[k]
        return pieces, start

    def pieces_seen(self, bytes data not None, Py_ssize_t start, Py_ssize_t end, Py_ssize_t max_pieces,
                    bint by_blocks=False):
        """The pieces of the text whose UTF-8 is ``data[:end]``, from byte `start` on (a piece start), at most
        `max_pieces`: (their ends, and for each the furthest byte its match looked at, whether it held a code
        point or the text ended there). A piece, and every piece before it, is cut the same in any prefix
        ``data[:k]`` with k beyond that byte and beyond those of the pieces before it. With `by_blocks`, ASCII
        text is scanned 64 bytes at a time where the pattern allows: what such a piece looked at is then
        reported as its block's last byte (`scan_pieces_seen`).
        """
        if not 0 <= start <= end <= len(data):
            raise ValueError(f"start {start} and end {end} must satisfy 0 <= start <= end <= {len(data)}")
        cdef const uint8_t* text = <const uint8_t*><const char*>data
        cdef Py_ssize_t ends[SCAN_BATCH]
        cdef Py_ssize_t seen[SCAN_BATCH]
        cdef Py_ssize_t count, k
        cdef list piece_ends = [], piece_seen = []
        while start < end and PyList_GET_SIZE(piece_ends) < max_pieces:
            count = scan_pieces_seen(&self.spec, text, start, end, ends, seen,
                                     min(SCAN_BATCH, max_pieces - PyList_GET_SIZE(piece_ends)), by_blocks)
            for k in range(count):
                piece_ends.append(ends[k])
                piece_seen.append(seen[k])
            start = ends[count - 1]
        return piece_ends, piece_seen

    def count(self, str text not None):
        """How many pieces `text` has (the scan alone, without the GIL: benchmarks time the stage with it)."""
        cdef bytes utf8 = text.encode("utf-8")
        cdef const uint8_t* data = <const uint8_t*><const char*>utf8
        cdef Py_ssize_t n = len(utf8)
        cdef Py_ssize_t ends[SCAN_BATCH]
        cdef Py_ssize_t start = 0, count, total = 0
        with nogil:
            while start < n:
                count = scan_pieces(&self.spec, data, start, n, ends, SCAN_BATCH)
                total += count
                start = ends[count - 1]
        return total

    @property
    def block_rules(self):
        """The block rules that scan ASCII text 64 bytes at a time (pattern_compiler.BLOCK_RULES), or "none"."""
        return pattern_compiler.BLOCK_RULES[self.spec.block_rules]

    def __reduce__(self):
        if self.kind == COMPILED:
            return (Scanner.compiled, (self.pattern, self.dialect, self.blocks))
        if self.kind == CHAR_WORDS:
            return (Scanner.char_words, self.char_words_args)
        return (Scanner, (int(self.kind),))

    def __repr__(self):
        if self.kind == COMPILED:
            return f"Scanner.compiled({self.pattern!r}, {self.dialect!r})"
        if self.kind == CHAR_WORDS:
            return f"Scanner.char_words(<{len(self.char_words_args[0])} characters>, {self.char_words_args[1]!r}, " \
                   f"{self.char_words_args[2]!r})"
        return f"Scanner({PatternKind(self.kind).name})"


def code_point_classes():
    """The generated class bits of every code point, as bytes indexed by code point (for the tests)."""
    cdef bytearray bits = bytearray(0x110000)
    cdef uint32_t cp
    for cp in range(0x110000):
        bits[cp] = bytebpe_class_of(cp)
    return bytes(bits)


def contraction_letter(uint32_t cp):
    """The contraction letter (one of "dlmrstve") that ``(?i:letter)`` matches `cp` as, or ''."""
    if cp >= 0x110000:
        raise ValueError("not a code point")
    cdef uint32_t letter = bytebpe_contraction_letter(cp)
    return chr(letter) if letter else ""


CLASS_BITS = {
    "letter": BYTEBPE_LETTER,
    "number": BYTEBPE_NUMBER,
    "space": BYTEBPE_SPACE,
    "upper": BYTEBPE_UPPER,
    "lower": BYTEBPE_LOWER,
    "letter_or_mark": BYTEBPE_LETTER_OR_MARK,
    "punct_or_symbol": BYTEBPE_PUNCT_OR_SYMBOL,
}
