# cython: language_level=3
# distutils: language = c++
"""Byte-pair merging over a C-level rank table: the compiled core of bytebpe.

BPE rule (tiktoken's, and the original "earliest learned merge first"): a piece that is itself a token is
one lookup; otherwise start from single bytes and repeatedly merge the adjacent pair whose concatenated
bytes have the lowest rank, the leftmost pair on ties, until no adjacent pair is a token.

Short pieces use a flat scan over an array of parts (cache-friendly, no allocation); long pieces use a
binary heap of (rank, position) with a linked list of parts and lazy invalidation, O(n log n).

The Python-facing methods work in three phases: with the GIL, run the pre-tokenizer and collect pointers to
each piece's UTF-8 bytes (the piece objects stay alive in a list); without the GIL, merge every piece into
one C++ vector of ids; with the GIL again, build the list or numpy array once.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromUnsignedLong
from cpython.ref cimport PyObject, Py_INCREF
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy
from libcpp.queue cimport priority_queue
from libcpp.vector cimport vector

from ._shared cimport (
    PyUnicode_AsUTF8AndSize,
    PyUnicode_DATA,
    PyUnicode_GET_LENGTH,
    PyUnicode_IS_COMPACT_ASCII,
    _hash_bytes,
    _head_word,
    _load32,
    _load64,
)


# Pieces up to this many bytes merge by flat scan; longer ones by heap. Measured on the real vocabularies:
# nearly every piece is far shorter, and the scan's O(n^2) only loses to the heap well above this length.
cdef enum:
    SCAN_MAX_BYTES = 64
# Gathered input of at least this many bytes is merged with the GIL released; below it, releasing and
# re-taking the GIL costs more than another thread could gain.
cdef enum:
    RELEASE_GIL_MIN_BYTES = 4096
# Ranks below this go to the small, cache-resident hash table (see MergeTable in _core.pxd).
cdef enum:
    HOT_RANKS = 4096
# A batch is gathered and merged in groups of about this many bytes of text: small enough that the
# pieces are still in cache when merged, large enough that releasing the GIL once per group is free.
cdef enum:
    BATCH_GROUP_BYTES = 65536
# Token ids must stay below this so that NO_RANK and (rank << 32 | position) heap keys never collide.
cdef enum:
    MAX_TOKEN_ID = 0x7FFFFFFE
# Dense id tables are allowed to be at most this many times (plus a constant) larger than the token count.
cdef enum:
    MAX_ID_SPARSITY = 64


class InvalidTokenError(KeyError, ValueError):
    """A token id that is negative, beyond the vocabulary, or in a gap of it.

    A `KeyError` like tiktoken's, and a `ValueError` so that either ``except`` clause catches it.
    """

    def __str__(self) -> str:
        # KeyError.__str__ would repr() the message and wrap it in quotes.
        return str(self.args[0]) if self.args else ""


cdef struct Span:
    # One piece: its UTF-8 bytes, and its id when the whole piece is a token (or a special token, which
    # has no bytes here); NO_RANK when the piece still needs merging.
    const uint8_t* data
    Py_ssize_t size
    Rank rank


cdef inline uint64_t _table_capacity(Py_ssize_t n_keys) noexcept:
    """Slots for `n_keys` keys at a load factor of at most 1/2: a power of two, so masking replaces modulo."""
    cdef uint64_t capacity = 16
    while capacity < <uint64_t>(2 * n_keys):
        capacity <<= 1
    return capacity


cdef inline Rank _probe(const Slot* slots, uint64_t mask, uint64_t h, uint64_t head, const uint8_t* data,
                        Py_ssize_t n, const uint8_t* blob, const uint32_t* token_start) noexcept nogil:
    """Find the token `data[:n]` (hash `h`, first word `head`) in one table; NO_RANK when absent."""
    cdef uint64_t i = h & mask
    cdef const Slot* slot
    cdef Rank rank
    while True:
        slot = slots + i
        if slot.rank_plus_one == 0:
            return NO_RANK
        if slot.head == head and slot.length == n:
            rank = slot.rank_plus_one - 1
            if n <= 8 or memcmp(blob + token_start[rank] + 8, data + 8, n - 8) == 0:
                return rank
        i = (i + 1) & mask


@cython.final
cdef class MergeTable:
    """The mergeable tokens of an encoding: bytes -> rank lookups and the BPE merge loop.

    Built once from a ``dict[bytes, int]`` and immutable afterwards, so it is shared freely between
    encodings and threads.
    """

    def __cinit__(self, mergeable_ranks):
        if not isinstance(mergeable_ranks, dict):
            mergeable_ranks = dict(mergeable_ranks)
        cdef Py_ssize_t total_bytes = 0
        cdef Py_ssize_t max_rank = -1
        cdef Py_ssize_t rank
        for token, value in (<dict>mergeable_ranks).items():
            if not isinstance(token, bytes):
                raise TypeError(f"mergeable_ranks keys must be bytes, got {type(token).__name__}: {token!r}")
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"rank of {token!r} must be an int, got {type(value).__name__}")
            if not 0 <= value <= MAX_TOKEN_ID:
                raise ValueError(f"rank of {token!r} is {value}, outside 0..{MAX_TOKEN_ID}")
            if len(<bytes>token) == 0:
                raise ValueError("the empty byte string cannot be a token")
            total_bytes += len(<bytes>token)
            if value > max_rank:
                max_rank = value
        self.n_tokens = len(mergeable_ranks)
        if total_bytes > 0xFFFFFFFF:
            raise ValueError("mergeable tokens hold more than 4 GiB of bytes")
        if max_rank + 1 > MAX_ID_SPARSITY * self.n_tokens + 65536:
            raise ValueError(
                f"ranks are too sparse: {self.n_tokens} tokens with ranks up to {max_rank}")
        self.max_rank = max_rank

        self.rank_objects = [None] * (max_rank + 1)
        self.token_start.assign(max_rank + 1, 0)
        self.token_len.assign(max_rank + 1, -1)
        self.blob.reserve(total_bytes)
        cdef Py_ssize_t n_hot = 0
        for value in (<dict>mergeable_ranks).values():
            n_hot += value < HOT_RANKS
        self.hot_mask = _table_capacity(n_hot) - 1
        self.hot_slots.assign(self.hot_mask + 1, Slot(0, 0, 0))
        self.cold_mask = _table_capacity(self.n_tokens - n_hot) - 1
        self.cold_slots.assign(self.cold_mask + 1, Slot(0, 0, 0))
        self.bloom_mask = 8 * _table_capacity(self.n_tokens) - 1
        self.bloom.assign((self.bloom_mask + 1) // 64, 0)
        cdef Py_ssize_t i
        for i in range(256):
            self.byte_rank[i] = NO_RANK
        self.pair_of_bytes_rank.assign(65536, NO_RANK)
        self.max_token_len = 0

        cdef const uint8_t* data
        cdef Py_ssize_t n
        for token, value in (<dict>mergeable_ranks).items():
            rank = value
            if self.token_len[rank] != -1:
                raise ValueError(
                    f"rank {rank} is given to two tokens: {self._token_bytes(rank)!r} and {token!r}")
            data = <const uint8_t*>PyBytes_AS_STRING(token)
            n = PyBytes_GET_SIZE(token)
            self.rank_objects[rank] = value if type(value) is int else int(value)
            self.token_start[rank] = self.blob.size()
            self.token_len[rank] = <int32_t>n
            self.blob.insert(self.blob.end(), data, data + n)
            if rank < HOT_RANKS:
                self._insert(self.hot_slots, self.hot_mask, <Rank>rank)
            else:
                self._insert(self.cold_slots, self.cold_mask, <Rank>rank)
            if n == 1:
                self.byte_rank[data[0]] = <Rank>rank
            elif n == 2:
                self.pair_of_bytes_rank[data[0] << 8 | data[1]] = <Rank>rank
            if n > self.max_token_len:
                self.max_token_len = n

    cdef void _insert(self, vector[Slot]& slots, uint64_t mask, Rank rank) noexcept:
        cdef const uint8_t* data = self.blob.data() + self.token_start[rank]
        cdef Py_ssize_t n = self.token_len[rank]
        cdef uint64_t head = _head_word(data, n)
        cdef uint64_t h = _hash_bytes(head, data, n)
        cdef uint64_t i = h & mask
        while slots[i].rank_plus_one != 0:
            i = (i + 1) & mask
        slots[i] = Slot(head, rank + 1, <uint32_t>n)
        self._bloom_set((h >> 40) & self.bloom_mask)
        self._bloom_set((h >> 20) & self.bloom_mask)

    cdef inline void _bloom_set(self, uint64_t bit) noexcept:
        self.bloom[bit >> 6] |= 1ULL << (bit & 63)

    cdef inline bint _bloom_has(self, uint64_t bit) noexcept nogil:
        return (self.bloom[bit >> 6] >> (bit & 63)) & 1

    cdef Rank rank_of(self, const uint8_t* data, Py_ssize_t n) noexcept nogil:
        if n > self.max_token_len:
            return NO_RANK
        if n <= 2:
            return self.byte_rank[data[0]] if n == 1 else self.pair_of_bytes_rank[data[0] << 8 | data[1]]
        cdef uint64_t head = _head_word(data, n)
        cdef uint64_t h = _hash_bytes(head, data, n)
        if not (self._bloom_has((h >> 40) & self.bloom_mask) and self._bloom_has((h >> 20) & self.bloom_mask)):
            return NO_RANK
        cdef Rank rank = _probe(self.hot_slots.data(), self.hot_mask, h, head, data, n, self.blob.data(),
                                self.token_start.data())
        if rank == NO_RANK:
            rank = _probe(self.cold_slots.data(), self.cold_mask, h, head, data, n, self.blob.data(),
                          self.token_start.data())
        return rank

    cdef int encode_piece(self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out) except -1 nogil:
        if n <= 0:     # a user pattern may match the empty string; it holds no tokens
            return 0
        cdef Rank whole = self.rank_of(data, n)
        if whole != NO_RANK:
            out.push_back(whole)
            return 0
        return self.merge_piece(data, n, out)

    cdef int merge_piece(self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out) except -1 nogil:
        if n <= 0:
            return 0
        if n <= SCAN_MAX_BYTES:
            return self._merge_by_scan(data, n, out)
        return self._merge_by_heap(data, n, out)

    cdef int _merge_by_scan(self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out) except -1 nogil:
        # parts[k] starts at byte start[k]; pair_rank[k] is the rank of parts k and k+1 merged.
        # start[count] == n is a sentinel so that part k always ends at start[k + 1].
        cdef uint32_t start[SCAN_MAX_BYTES + 1]
        cdef Rank pair_rank[SCAN_MAX_BYTES]
        cdef Py_ssize_t count = n
        cdef Py_ssize_t k, best
        cdef Rank best_rank, rank
        for k in range(n + 1):
            start[k] = <uint32_t>k
        for k in range(n - 1):
            pair_rank[k] = self.rank_of(data + k, 2)
        pair_rank[n - 1] = NO_RANK
        while count > 1:
            best_rank = NO_RANK
            best = 0
            for k in range(count - 1):
                if pair_rank[k] < best_rank:
                    best_rank = pair_rank[k]
                    best = k
            if best_rank == NO_RANK:
                break
            # Merge part best+1 into part best: drop start[best+1] and pair_rank[best+1].
            for k in range(best + 1, count):
                start[k] = start[k + 1]
            for k in range(best + 1, count - 1):
                pair_rank[k] = pair_rank[k + 1]
            count -= 1
            pair_rank[best] = (self.rank_of(data + start[best], start[best + 2] - start[best])
                               if best + 1 < count else NO_RANK)
            if best > 0:
                pair_rank[best - 1] = self.rank_of(data + start[best - 1], start[best + 1] - start[best - 1])
        for k in range(count):
            rank = self.rank_of(data + start[k], start[k + 1] - start[k])
            if rank == NO_RANK:
                return 1
            out.push_back(rank)
        return 0

    cdef int _merge_by_heap(self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out) except -1 nogil:
        # Parts are named by their first byte. next_part[p] is where part p ends (n for the last part),
        # prev_part[p] the part before it (-1 for none); pair_rank[p] ranks part p merged with its successor,
        # NO_RANK when it is not a token or p is gone. The heap holds ~(rank << 32 | p) so that the largest
        # key is the lowest rank, leftmost on ties; an entry is stale when pair_rank[p] no longer equals its
        # rank (a part only ever grows, so a rank never comes back for the same p).
        cdef vector[uint32_t] next_part
        cdef vector[int64_t] prev_part
        cdef vector[Rank] pair_rank
        cdef priority_queue[uint64_t] heap
        next_part.resize(n)
        prev_part.resize(n)
        pair_rank.resize(n)
        cdef Py_ssize_t p, q, after, before
        cdef Rank rank
        cdef uint64_t key
        for p in range(n):
            next_part[p] = <uint32_t>(p + 1)
            prev_part[p] = p - 1
            rank = self.rank_of(data + p, 2) if p + 1 < n else NO_RANK
            pair_rank[p] = rank
            if rank != NO_RANK:
                heap.push(~((<uint64_t>rank << 32) | <uint64_t>p))
        while not heap.empty():
            key = ~heap.top()
            heap.pop()
            p = <Py_ssize_t>(key & 0xFFFFFFFFULL)
            rank = <Rank>(key >> 32)
            if pair_rank[p] != rank:
                continue
            q = next_part[p]
            after = next_part[q]
            next_part[p] = <uint32_t>after
            pair_rank[q] = NO_RANK
            if after < n:
                prev_part[after] = p
                rank = self.rank_of(data + p, next_part[after] - p)
            else:
                rank = NO_RANK
            pair_rank[p] = rank
            if rank != NO_RANK:
                heap.push(~((<uint64_t>rank << 32) | <uint64_t>p))
            before = prev_part[p]
            if before >= 0:
                rank = self.rank_of(data + before, after - before)
                pair_rank[before] = rank
                if rank != NO_RANK:
                    heap.push(~((<uint64_t>rank << 32) | <uint64_t>before))
        p = 0
        while p < n:
            rank = self.rank_of(data + p, next_part[p] - p)
            if rank == NO_RANK:
                return 1
            out.push_back(rank)
            p = next_part[p]
        return 0

    cdef bytes _token_bytes(self, Py_ssize_t rank):
        return PyBytes_FromStringAndSize(
            <const char*>self.blob.data() + self.token_start[rank], self.token_len[rank])

    # ---- Python-facing helpers -------------------------------------------------------------------------

    def rank(self, bytes token not None):
        """The rank of `token`, or None when it is not a mergeable token."""
        cdef Rank rank = self.rank_of(<const uint8_t*>PyBytes_AS_STRING(token), PyBytes_GET_SIZE(token))
        return None if rank == NO_RANK else rank

    def token_bytes(self, Py_ssize_t rank):
        """The bytes of mergeable token `rank`, or None when there is none."""
        if rank < 0 or rank > self.max_rank or self.token_len[rank] < 0:
            return None
        return self._token_bytes(rank)

    def token_byte_values(self):
        """Every mergeable token's bytes, in rank order."""
        return [self._token_bytes(rank) for rank in range(self.max_rank + 1) if self.token_len[rank] >= 0]

    def encode_single_piece(self, bytes piece not None):
        """BPE of one piece of bytes, with no pre-tokenization."""
        cdef vector[Rank] out
        if self.encode_piece(<const uint8_t*>PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece), out):
            _raise_missing_byte(piece)
        return out


cdef _raise_missing_byte(bytes data):
    raise ValueError(
        f"cannot encode {data[:40]!r}: one of its bytes is not a token of this vocabulary "
        "(a byte-level vocabulary must give all 256 single bytes a rank)")


@cython.final
cdef class CoreBPE:
    """A merge table plus special tokens: text in, ids out, and ids back to bytes.

    `findall` (the pre-tokenizer) is any callable str -> list[str]; `special_split`, when given, is the
    ``split`` method of a regex with one capturing group around the allowed special tokens, so that its
    result alternates ordinary text and special tokens.
    """
    cdef readonly MergeTable table
    cdef dict special_ids      # str -> id
    cdef dict special_bytes    # id -> UTF-8 bytes

    def __cinit__(self, MergeTable table not None, dict special_tokens not None):
        self.table = table
        self.special_ids = dict(special_tokens)
        self.special_bytes = {}
        for text, token in special_tokens.items():
            # An id with two names decodes to the first (tiktoken does so for o200k_harmony's 200018).
            self.special_bytes.setdefault(token, text.encode("utf-8"))

    # ---- encoding ---------------------------------------------------------------------------------------

    cdef Py_ssize_t _gather_ordinary(self, object findall, str text, vector[Span]& spans, list owners) except -1:
        """Pre-tokenize `text` and append a span per piece; returns the bytes gathered."""
        cdef list pieces = findall(text)
        owners.append(pieces)   # keeps every piece, and so every span's bytes, alive
        cdef Py_ssize_t count = PyList_GET_SIZE(pieces)
        cdef Py_ssize_t i, size, total = 0
        cdef const char* data
        cdef PyObject* piece
        if spans.capacity() < spans.size() + count:
            # Grow geometrically: a batch gathers text after text into one vector, and reserving exactly
            # what each text needs would copy the whole vector every time.
            spans.reserve(max(2 * spans.capacity(), spans.size() + count))
        for i in range(count):
            piece = PyList_GET_ITEM(pieces, i)
            if PyUnicode_IS_COMPACT_ASCII(<object>piece):
                # ASCII is its own UTF-8: point into the str itself.
                data = <const char*>PyUnicode_DATA(<object>piece)
                size = PyUnicode_GET_LENGTH(<object>piece)
            else:
                data = PyUnicode_AsUTF8AndSize(<object>piece, &size)
            # Look the whole piece up now, while its bytes are in cache: by the time every piece has been
            # gathered, the first ones are long evicted, and most pieces are whole tokens.
            spans.push_back(Span(<const uint8_t*>data, size, self.table.rank_of(<const uint8_t*>data, size)
                                 if size > 0 else NO_RANK))
            total += size
        return total

    cdef Py_ssize_t _gather(self, object findall, object special_split, str text,
                            vector[Span]& spans, list owners) except -1:
        if special_split is None:
            return self._gather_ordinary(findall, text, spans, owners)
        cdef list parts = special_split(text)
        cdef Py_ssize_t i, total = 0
        for i in range(PyList_GET_SIZE(parts)):
            part = <object>PyList_GET_ITEM(parts, i)
            if i & 1:
                spans.push_back(Span(NULL, 0, <Rank>self.special_ids[part]))
            elif part:
                total += self._gather_ordinary(findall, part, spans, owners)
        return total

    cdef Py_ssize_t _merge_spans(self, const Span* spans, Py_ssize_t count, vector[Rank]& out) except -1 nogil:
        cdef Py_ssize_t i
        for i in range(count):
            if spans[i].rank != NO_RANK:
                out.push_back(spans[i].rank)
            elif self.table.merge_piece(spans[i].data, spans[i].size, out):
                return 1 + i    # which span failed, so the caller can name it
        return 0

    cdef Py_ssize_t _merge_texts(self, vector[Span]& spans, vector[Py_ssize_t]& text_ends, vector[Rank]& out,
                                 vector[int64_t]& offsets) except -1 nogil:
        """Merge the gathered spans text by text, recording where each text's ids end.

        Returns 0, or 1 + the index of a span holding a byte the vocabulary lacks.
        """
        cdef Py_ssize_t i, failed, begin = 0
        for i in range(<Py_ssize_t>text_ends.size()):
            failed = self._merge_spans(spans.data() + begin, text_ends[i] - begin, out)
            if failed:
                return failed + begin
            offsets.push_back(out.size())
            begin = text_ends[i]
        return 0

    cdef int _merge_group(self, vector[Span]& spans, vector[Py_ssize_t]& text_ends, Py_ssize_t total_bytes,
                          vector[Rank]& out, vector[int64_t]& offsets) except -1:
        cdef Py_ssize_t failed
        out.reserve(out.size() + total_bytes // 4 + 16)
        if total_bytes >= RELEASE_GIL_MIN_BYTES:
            with nogil:
                failed = self._merge_texts(spans, text_ends, out, offsets)
        else:
            failed = self._merge_texts(spans, text_ends, out, offsets)
        if failed:
            _raise_missing_byte(PyBytes_FromStringAndSize(
                <const char*>spans[failed - 1].data, spans[failed - 1].size))
        return 0

    cdef int _encode_into(self, object findall, object special_split, str text, vector[Rank]& out) except -1:
        cdef vector[Span] spans
        cdef list owners = []
        cdef Py_ssize_t total = self._gather(findall, special_split, text, spans, owners)
        cdef vector[Py_ssize_t] text_ends
        cdef vector[int64_t] offsets
        text_ends.push_back(spans.size())
        return self._merge_group(spans, text_ends, total, out, offsets)

    def encode(self, findall, special_split, str text not None):
        """Ids of `text`: pre-tokenized by `findall`, special tokens split out by `special_split` (or None)."""
        cdef vector[Rank] out
        self._encode_into(findall, special_split, text, out)
        return self._to_list(out, 0, out.size())

    cdef list _to_list(self, vector[Rank]& ids, Py_ssize_t begin, Py_ssize_t end):
        """ids[begin:end] as a list of Python ints, reusing the table's int objects."""
        cdef list result = PyList_New(end - begin)
        cdef list rank_objects = self.table.rank_objects
        cdef Py_ssize_t i, limit = PyList_GET_SIZE(rank_objects)
        cdef Rank token
        cdef object item
        for i in range(begin, end):
            token = ids[i]
            item = <object>PyList_GET_ITEM(rank_objects, token) if token < limit else None
            if item is None:    # a special token, beyond the mergeable ranks or in a gap of them
                item = PyLong_FromUnsignedLong(token)
            Py_INCREF(item)
            PyList_SET_ITEM(result, i - begin, item)
        return result

    def encode_to_numpy(self, findall, special_split, str text not None):
        """Like `encode`, but a uint32 numpy array built straight from the C buffer."""
        cdef vector[Rank] out
        self._encode_into(findall, special_split, text, out)
        return _to_numpy(out)

    def encode_pieces(self, list pieces not None):
        """Merge already pre-tokenized pieces (benchmarks time the merge stage alone with this)."""
        cdef vector[Rank] out
        self._encode_into(_identity_findall(pieces), None, "", out)
        return self._to_list(out, 0, out.size())

    def encode_batch(self, findall, special_split, list texts not None, bint flat=False):
        """Encode many texts into one buffer, merging a group of texts at a time without the GIL.

        Returns a list of id lists, or with `flat` a (uint32 ids, int64 offsets) pair of numpy arrays
        where text i is ``ids[offsets[i]:offsets[i + 1]]``.
        """
        cdef vector[Span] spans
        cdef vector[Py_ssize_t] text_ends      # span index where each text of the group ends
        cdef vector[Rank] out
        cdef vector[int64_t] offsets
        cdef list owners = []
        cdef Py_ssize_t group_bytes = 0
        offsets.push_back(0)
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"expected str, got {type(text).__name__}")
            group_bytes += self._gather(findall, special_split, text, spans, owners)
            text_ends.push_back(spans.size())
            # Merge in groups: the pieces are still in cache, and memory stays bounded by the group size
            # rather than growing with the batch.
            if group_bytes >= BATCH_GROUP_BYTES:
                self._merge_group(spans, text_ends, group_bytes, out, offsets)
                spans.clear()
                text_ends.clear()
                del owners[:]
                group_bytes = 0
        self._merge_group(spans, text_ends, group_bytes, out, offsets)
        if flat:
            import numpy as np
            return _to_numpy(out), np.asarray(<int64_t[:offsets.size()]>offsets.data()).copy()
        return [self._to_list(out, offsets[k], offsets[k + 1]) for k in range(texts.__len__())]

    # ---- decoding ---------------------------------------------------------------------------------------

    cdef Py_ssize_t _check_id(self, object token) except -1:
        if not isinstance(token, int):
            try:
                token = token.__index__()    # numpy integers
            except AttributeError:
                raise TypeError(f"token ids must be int, got {type(token).__name__}: {token!r}") from None
        if token < 0 or token > MAX_TOKEN_ID:
            raise InvalidTokenError(f"invalid token id {token}: not in this vocabulary")
        return token

    cdef bytes _special_token_bytes(self, Py_ssize_t token):
        try:
            return self.special_bytes[token]
        except KeyError:
            raise InvalidTokenError(f"invalid token id {token}: not in this vocabulary") from None

    def decode_bytes(self, tokens):
        """The bytes of a sequence of ids (list, tuple, numpy array or any iterable of ints)."""
        if isinstance(tokens, (str, bytes)):
            raise TypeError(f"expected a sequence of token ids, got {type(tokens).__name__}")
        if hasattr(tokens, "tolist") and not isinstance(tokens, list):
            tokens = tokens.tolist()     # numpy arrays: plain ints in one C pass
            if not isinstance(tokens, list):    # a numpy scalar or 0-d array is one id, not a sequence
                raise TypeError("expected a sequence of token ids, got a single value")
        else:
            # Always a private copy: an id's __index__ may run Python code that changes the caller's list.
            tokens = list(tokens)
        cdef vector[uint8_t] buffer
        cdef MergeTable table = self.table
        cdef Py_ssize_t i, token, length
        cdef const uint8_t* start
        cdef bytes special
        buffer.reserve(PyList_GET_SIZE(tokens) * 4)
        for i in range(PyList_GET_SIZE(<list>tokens)):
            token = self._check_id(<object>PyList_GET_ITEM(<list>tokens, i))
            if token <= table.max_rank and table.token_len[token] >= 0:
                start = table.blob.data() + table.token_start[token]
                buffer.insert(buffer.end(), start, start + table.token_len[token])
            else:
                special = self._special_token_bytes(token)
                start = <const uint8_t*>PyBytes_AS_STRING(special)
                buffer.insert(buffer.end(), start, start + PyBytes_GET_SIZE(special))
        return PyBytes_FromStringAndSize(<const char*>buffer.data(), buffer.size())

    def decode_single_token_bytes(self, token):
        cdef Py_ssize_t checked = self._check_id(token)
        if checked <= self.table.max_rank and self.table.token_len[checked] >= 0:
            return self.table._token_bytes(checked)
        return self._special_token_bytes(checked)


cdef object _to_numpy(vector[Rank]& ids):
    import numpy as np    # imported on first use: it costs ~100 ms and most callers want lists
    array = np.empty(ids.size(), dtype=np.uint32)
    cdef uint32_t[::1] view = array
    if ids.size():
        memcpy(&view[0], ids.data(), ids.size() * sizeof(Rank))
    return array


cdef class _identity_findall:
    """A pre-tokenizer that returns pieces split beforehand (for `CoreBPE.encode_pieces`)."""
    cdef list pieces

    def __cinit__(self, list pieces):
        self.pieces = pieces

    def __call__(self, text):
        return self.pieces
