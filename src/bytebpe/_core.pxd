# cython: language_level=3
# distutils: language = c++
"""The contract of the compiled core: its C types, tables and the GIL/error behaviour of each routine.

A `MergeTable` is immutable once built and is shared by every `CoreBPE` made from it (an encoding and the
encodings derived from it by `with_special_tokens` share one table, so registering specials costs nothing).
"""
from libc.stdint cimport int32_t, uint8_t, uint32_t, uint64_t
from libcpp.vector cimport vector


cdef extern from "_huge_pages.h" namespace "bytebpe":
    # The allocator of the large tables read at random (the header says why: huge pages, measured).
    cdef cppclass TableAllocator[T]:
        pass

# A token id; for a mergeable token it is also its merge priority (lower merges first).
ctypedef uint32_t Rank

# Rank of a byte string that is not a mergeable token. Above every real id: ids are capped below 2**31.
cdef enum:
    NO_RANK = 0xFFFFFFFF


# One slot of the token hash table. Tokens are mostly short, so their first 8 bytes live in the slot:
# a lookup of a token up to 8 bytes long touches this slot alone. A longer token's other bytes are in the
# table's blob; where every token is shorter than 256 bytes and the blob smaller than 16 MiB (all of
# OpenAI's and the usual HF vocabularies), the slot also holds where they are, so that comparing them
# takes one load after the slot's instead of two (MergeTable.length_mask).
# (Declared in _home_lookup.h, whose vector pass reads slots too.)
cdef extern from "_home_lookup.h":
    ctypedef struct Slot "bytebpe_slot":
        uint64_t head           # first 8 bytes of the token, zero padded
        uint32_t rank_plus_one  # 0 marks an empty slot
        uint32_t length         # the token's length; with tails in the slot, | its blob offset << 8 above 8
                                # bytes


# A memo of "rank of token `left` followed by token `right`" for the merge loop: the two ids determine the
# bytes, so a hit skips hashing the span and probing the token tables. Owned by one call (see _core.pyx).
cdef struct PairMemoEntry:
    uint64_t pair       # left << 32 | right; NO_PAIR for an empty entry
    Rank rank

cdef struct PairMemo:
    PairMemoEntry* entries
    int shift           # entry index = (pair * golden ratio) >> shift
    # The table's characters that may enter the merge loop whole (_merge_char_starts.pxi), or NULL: read
    # from the table once per call, with the GIL.
    const uint32_t* char_starts


# One entry of the pair-merge table (HF BPE's rule, see MergeTable._merge_by_pair_rank): adjacent tokens
# `left` and `right` merge into token `result`, with priority `merge_rank` (the pair's index in HF's
# `merges`; lower merges first). Token ids and merge ranks are independent numberings.
cdef struct PairMerge:
    uint64_t pair       # left << 32 | right; all ones (NO_PAIR) for an empty slot
    Rank merge_rank
    Rank result


cdef class MergeTable:
    # All token bytes back to back; token `id` is blob[token_start[id] : token_start[id] + token_len[id]].
    cdef vector[uint8_t] blob
    cdef vector[uint32_t] token_start   # id -> offset into blob
    cdef vector[int32_t] token_len      # id -> length in bytes, -1 where the id is a gap
    # One open-addressing hash table (linear probing, load factor <= 1/2). (A small table of the most
    # frequent ranks in front of it was measured slower: every other token then cost two probes.)
    cdef vector[Slot, TableAllocator[Slot]] slots     # on huge pages where the kernel allows (_huge_pages.h)
    cdef uint64_t mask
    # Blocked Bloom filter over all tokens: each token sets two bits of one 64-bit word (~16 bits per
    # token), so a query reads one word. The merge loop mostly asks about spans that are *not* tokens; the
    # filter answers those from L2 cache instead of a probe into the large table.
    cdef vector[uint64_t] bloom
    cdef uint64_t bloom_mask            # in words
    cdef Rank byte_rank[256]            # rank of each single byte, NO_RANK when absent
    cdef vector[Rank] pair_of_bytes_rank  # (b0 << 8 | b1) -> rank of that 2-byte token: the merge loop's
                                          # first lookups, answered by one array read
    cdef readonly Py_ssize_t max_token_len  # no lookup of a longer span can hit, so it is skipped
    # The bits of Slot.length that hold the length: 0xFF where slots hold their tokens' blob offsets (see
    # Slot), all ones where they do not (a token of 256 bytes or more, or a blob of 16 MiB or more).
    cdef readonly uint32_t length_mask
    # rank -> the int object for it (taken from the ranks dict, so it costs only the list): building
    # result lists from these skips allocating an int per token.
    cdef list rank_objects
    cdef dict ranks_dict                # token bytes -> rank: the dict it was built from, or built lazily
    # The persistent piece cache (a PieceCache, or None when off), shared by every CoreBPE over this table:
    # the ids of a piece depend on the table alone. The only mutable part of a table; made on first use.
    cdef object piece_cache
    cdef bint piece_cache_configured
    cdef readonly Py_ssize_t n_tokens
    cdef readonly Py_ssize_t max_rank
    # The pair-rank rule (a table made by `from_pair_merges`): (left id, right id) -> PairMerge, open
    # addressing with linear probing at a load factor <= 1/2; empty for tiktoken's rule. The whole-piece
    # lookups (slots, pair_of_bytes_rank) then hold only the tokens that this rule gives for their own bytes,
    # unless `whole_pieces` (HF's ignore_merges): a piece found there is one id, as under either rule.
    cdef vector[PairMerge, TableAllocator[PairMerge]] pair_merges
    cdef int pair_shift                 # slot = (pair * golden ratio) >> pair_shift
    cdef vector[uint64_t] pair_bloom    # bit (pair * golden ratio) >> pair_bloom_shift: set for every listed pair
    cdef int pair_bloom_shift
    cdef vector[PairMerge] byte_pair_merges   # (b0 << 8 | b1) -> the merge of those two bytes' tokens
    cdef readonly bint by_pair_rank
    cdef readonly bint whole_pieces
    cdef readonly Py_ssize_t n_merges
    # Code point -> whether that character may start the merge loop whole, and as which token
    # (_merge_char_starts.pxi); built on first use by text that is not all ASCII, then read-only.
    cdef vector[uint32_t] char_starts
    cdef bint char_starts_built
    # Hashed 2- and 3-byte tokens and 4-byte substrings of every token: where a long piece may be cut
    # (_merge_windows.pxi); built on the first such piece, then read-only.
    cdef vector[uint64_t] span_grams
    cdef bint span_grams_built
    cdef Py_ssize_t non_ascii_chars     # characters of non-ASCII text encoded before the build

    # Pure lookups: never allocate, never fail.
    cdef Rank rank_of(self, const uint8_t* data, Py_ssize_t n) noexcept nogil
    # rank_of for a span of 3..max_token_len bytes whose head word and hash are already known.
    cdef Rank rank_of_hashed(self, const uint8_t* data, Py_ssize_t n, uint64_t head, uint64_t h) noexcept nogil
    # Append the BPE ids of one piece to `out`. Returns 0, or 1 when a byte of the piece has no rank
    # (the table lacks a single-byte token); raises MemoryError (with the GIL) when allocation fails.
    cdef int encode_piece(self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out) except -1 nogil
    # Like encode_piece, for a piece already known not to be a whole token. It picks the merge strategy;
    # the strategies are module-level functions of the table (_merge_*.pxi, _core.pyx's docstring).
    cdef int merge_piece(self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out,
                         PairMemo* memo) except -1 nogil
    # merge_piece without cutting a long piece into windows (_merge_windows.pxi): one merge of all of it.
    cdef int merge_whole(self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out,
                         PairMemo* memo) except -1 nogil
    cdef Rank _pair_rank(self, PairMemo* memo, const uint8_t* data, Py_ssize_t n, Rank left,
                         Rank right) noexcept nogil
    cdef bint _maybe_merge(self, uint64_t pair) noexcept nogil
    cdef void _prefetch_merge(self, Rank left, Rank right) noexcept nogil
    cdef const PairMerge* _find_merge(self, Rank left, Rank right) noexcept nogil
    cdef const PairMerge* _first_merge(self, const Rank* ids, const uint8_t* data, Py_ssize_t k) noexcept nogil
    # Fill a table just built from its tokens with merges (left, right, result ids, in rank order).
    cdef int _set_pair_merges(self, const vector[Rank]& triples, bint ignore_merges,
                              bint detect_token_rank) except -1
    cdef int _keep_whole_tokens_of_rule(self) except -1
    cdef bint _is_token_rank_rule(self, vector[uint8_t]& made_whole) except -1
    cdef int _keep_whole_only(self, const vector[uint8_t]& keep) except -1
    cdef bint _token_rank_split(self, Rank token, Rank* left, Rank* right, vector[Py_ssize_t]& start,
                                vector[Rank]& joined) except -1
    cdef bint _insert(self, Rank rank, uint64_t h) noexcept
    cdef uint64_t _hash_of(self, Py_ssize_t rank) noexcept
    cdef int _check_size(self, Py_ssize_t n_tokens, Py_ssize_t max_rank, Py_ssize_t total_bytes) except -1
    cdef bint _index(self) except -1
    cdef bytes _token_bytes(self, Py_ssize_t rank)
    cdef bint _maybe_token(self, uint64_t h) noexcept nogil
    cdef object current_piece_cache(self)
    cdef int _set_piece_cache(self, Py_ssize_t max_bytes) except -1


# What other compiled modules read of a CoreBPE (`core`: one, checked by the caller); in _core.pyx.
cdef Py_ssize_t core_check_id(object core, object token) except -1
cdef int core_append_token(object core, Py_ssize_t token, vector[uint8_t]& buffer) except -1
cdef bint core_has_token(object core, Py_ssize_t token) except -1
cdef list core_token_texts(object core)
