# cython: language_level=3
# distutils: language = c++
"""The contract of the compiled pre-tokenizer: hand-written scanners equal to the known split patterns, and
the compiled program of any pattern of the GPT family (pattern_compiler.py, _pattern_scan.h).

A scanner reads UTF-8 and reports where each piece ends; the pieces are exactly the oracle's: tiktoken's
``find_iter`` of the pattern (or HF's Split, for a tokenizer.json), with the character classes of that oracle's
engine (see _pretokenize.pyx). It never allocates and never fails, so it is `noexcept nogil` and callable from
the merge loop.
"""
from libc.stdint cimport int32_t, uint8_t, uint16_t, uint32_t, uint64_t
from libcpp.vector cimport vector

cdef extern from "_pattern_scan.h":
    # A compiled pattern: its class tables and instructions; owned by a Scanner, never changed once built.
    cdef cppclass PatternProgram "BytebpePatternProgram":
        uint32_t ascii[256]
        uint32_t ascii_branches[128]
        vector[uint16_t] stage1
        vector[uint8_t] stage2
        vector[uint32_t] combos
        vector[int32_t] code
        vector[int32_t] branch_pc
        vector[uint32_t] branch_first
        vector[int32_t] branch_shape

# The pattern families in use (see patterns.py). 0 is reserved for "no compiled scanner".
cpdef enum PatternKind:
    R50K = 1      # gpt2, r50k_base, p50k_base, p50k_edit
    CL100K = 2    # cl100k_base
    O200K = 3     # o200k_base, o200k_harmony
    DEEPSEEK = 4  # DeepSeek's tokenizer.json (V3, R1): three Splits in sequence, with HF's classes
    COMPILED = 5  # any pattern of the family, compiled (pattern_compiler.py)
    CHAR_WORDS = 6  # a character-level model's words, unknown characters cut out byte by byte (_char_words.h)


# What a scan needs: the kind, for COMPILED the program and for CHAR_WORDS the known characters, which the
# Scanner owning this spec keeps alive (a caller holds the Scanner for the whole call: the ownership rule).
cdef struct ScanSpec:
    PatternKind kind
    const PatternProgram* program
    # CHAR_WORDS: a bit per code point, set for the characters that are tokens; the mark (Metaspace's
    # replacement) and where a word is cut before it (BYTEBPE_MARK_*, _char_words.h).
    const uint64_t* known_chars
    uint32_t mark
    int mark_rule
    # _piece_starts.h's block rules (BYTEBPE_BLOCKS_*) that cut the pattern as it cuts ASCII text without
    # apostrophes; 0: none (the pattern is scanned one piece at a time).
    int block_rules


# Scan pieces of `text[start:length]` (UTF-8) and write the end offset of each into `piece_ends`, at most
# `capacity` of them (capacity >= 1). Returns how many were written; the last one written is where the next
# call starts. `start < length` always yields at least one piece. Pieces never split a UTF-8 sequence, but
# for CHAR_WORDS, whose pieces are each byte of a character the vocabulary lacks.
cdef Py_ssize_t scan_pieces(const ScanSpec* spec, const uint8_t* text, Py_ssize_t start, Py_ssize_t length,
                            Py_ssize_t* piece_ends, Py_ssize_t capacity) noexcept nogil

# scan_pieces, also writing to `seen_out` for each piece the furthest byte its scan looked at (read, or
# compared with the end: `length` when it met the end). A prefix text[:k] with k beyond the seen of a piece
# and of every piece before it cuts those pieces as the whole text does (what budgets.py needs). Every kind
# reports it. With `by_blocks`, ASCII text goes 64 bytes at a time where the pattern has block rules, and a
# piece a block ends reports the block's last byte (faster, but up to a block beyond what its match needed);
# without, each piece is scanned on its own and reports exactly what it looked at.
cdef Py_ssize_t scan_pieces_seen(const ScanSpec* spec, const uint8_t* text, Py_ssize_t start, Py_ssize_t length,
                                 Py_ssize_t* piece_ends, Py_ssize_t* seen_out, Py_ssize_t capacity,
                                 bint by_blocks) noexcept nogil


cdef class Scanner:
    cdef readonly PatternKind kind
    cdef ScanSpec spec
    cdef PatternProgram program
    cdef vector[uint64_t] known_chars      # CHAR_WORDS: spec.known_chars points into it
    # For COMPILED: the pattern and the oracle whose classes it has ("tiktoken" or "hf").
    cdef readonly str pattern
    cdef readonly str dialect
    cdef bint blocks        # COMPILED: block rules were asked for (`Scanner.compiled(..., blocks=)`)
    # CHAR_WORDS: (the known characters, the mark, the mark rule's name), as `Scanner.char_words` took them.
    cdef readonly tuple char_words_args

    cdef int _check_pieces_are_text(self) except -1
