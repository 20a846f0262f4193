/* The first two passes of the fused encode loop (_core.pyx, _encode_scanned) over a batch of pieces, eight
 * pieces per step where the CPU has AVX-512: hash each piece and prefetch its home slot in the token table,
 * then find the pieces that are tokens of up to 8 bytes in their home slot.
 *
 * Most pieces of text are short tokens found in their home slot, and the scalar passes spent about as much
 * per piece on these two steps as on everything else after the scan (benchmarks/README.md has the figures).
 * The work per piece is the same arithmetic on independent data, so eight lanes do it at once: the pieces'
 * first words come in with one gather, the hash is three lane-wise multiplies, the home slots come in with
 * eight 16-byte loads, and the pieces that fail the test are listed with one compress. (Compressed in a register,
 * then stored whole: a compress straight to memory is microcoded on AMD's Zen 4 and made the vector passes
 * slower than the scalar ones.)
 *
 * Exactness: the lanes compute what the scalar code computes, bit for bit: the same head word (the piece's
 * first bytes, zero padded), the same hash (_hash_bytes in _shared.pxd, with _piece_hash.h's constants),
 * the same home-slot test. A piece the vector pass cannot take (longer than 8 bytes, empty, or
 * too near the text's end to read 8 bytes from its start) is listed for the scalar code, which then does
 * all of that piece's work. The tests run every encode test under each variant (`lookup_isas`).
 *
 * Memory: every load is of the text's bytes [start, start + 8) with start + 8 <= the text's length, of the
 * caller's arrays within `count` (masked loads past it read nothing), or of a slot at index hash & mask,
 * inside the table.
 */
#pragma once
#include <stddef.h>
#include <stdint.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BYTEBPE_WIDE_LOOKUP 1
#endif

#include "_piece_hash.h"

/* One slot of the token table (Slot in _core.pxd, which says what it holds). */
typedef struct {
    uint64_t head;
    uint32_t rank_plus_one;
    uint32_t length;
} bytebpe_slot;

/* The instruction sets the two passes can run with, by index into _core.pyx's LOOKUP_ISAS. */
enum { BYTEBPE_LOOKUP_SCALAR, BYTEBPE_LOOKUP_AVX512, BYTEBPE_LOOKUP_COUNT };

/* Whether this CPU (and build) can run variant `isa`. */
static inline int bytebpe_lookup_isa_supported(int isa) {
    if (isa == BYTEBPE_LOOKUP_SCALAR)
        return 1;
#if BYTEBPE_WIDE_LOOKUP
    __builtin_cpu_init();
    if (isa == BYTEBPE_LOOKUP_AVX512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vl");
#endif
    return 0;
}

#if BYTEBPE_WIDE_LOOKUP
#define BYTEBPE_LOOKUP_TARGET __attribute__((target("avx512f,avx512dq,avx512vl")))

/* Pass one over pieces 0..count-1 of data[:n], piece k being data[ends[k - 1]:ends[k]] (ends[-1] is `first`):
 * for each piece of 1 to 8 bytes whose start is at least 8 bytes before n, its head word into heads[k], its
 * hash into hashes[k], its length into home_lengths[k], and a prefetch of its home slot in `slots` (index
 * hash & mask). The other pieces' indices go to rest[], in order, and their entries in the three arrays
 * hold nothing meaningful: the caller computes them. rest[] has room for count + 8 (each step stores 8
 * indices, of which only the ones listed count). Returns how many went to rest[]. */
BYTEBPE_LOOKUP_TARGET static size_t bytebpe_hash_pieces_avx512(const uint8_t* data, int64_t n, int64_t first,
                                                               const int64_t* ends, size_t count,
                                                               const bytebpe_slot* slots, uint64_t mask,
                                                               uint64_t* heads, uint64_t* hashes,
                                                               uint32_t* home_lengths, uint32_t* rest) {
    const __m512i ones = _mm512_set1_epi64(-1);
    const __m512i one = _mm512_set1_epi64(1);
    const __m512i seven = _mm512_set1_epi64(7);
    const __m512i last_start = _mm512_set1_epi64(n - 8);
    const __m512i by_length = _mm512_set1_epi64((long long)BYTEBPE_HASH_LENGTH);
    const __m512i mix = _mm512_set1_epi64((long long)BYTEBPE_HASH_MIX);
    const __m512i final_mix = _mm512_set1_epi64((long long)BYTEBPE_HASH_FINAL);
    const __m512i slot_mask = _mm512_set1_epi64((long long)mask);
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m512i previous_ends = _mm512_set1_epi64(first);
    size_t k = 0, rests = 0;
    for (; k + 8 <= count; k += 8) {
        __m512i piece_ends = _mm512_loadu_si512((const void*)(ends + k));
        /* Each lane's start is the end before it: the last lane of the previous step, then lanes 0..6. */
        __m512i starts = _mm512_alignr_epi64(piece_ends, previous_ends, 7);
        __m512i sizes = _mm512_sub_epi64(piece_ends, starts);
        __mmask8 vector = _mm512_cmple_epu64_mask(_mm512_sub_epi64(sizes, one), seven) &
                          _mm512_cmple_epi64_mask(starts, last_start);
        __m512i words = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), vector, starts, (const void*)data, 1);
        /* The first `size` bytes: a shift by 64 bits or more gives 0, so 8 bytes keep the whole word. */
        __m512i heads_v = _mm512_andnot_si512(_mm512_sllv_epi64(ones, _mm512_slli_epi64(sizes, 3)), words);
        __m512i h = _mm512_mullo_epi64(_mm512_xor_si512(heads_v, _mm512_mullo_epi64(sizes, by_length)), mix);
        h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 32));
        h = _mm512_mullo_epi64(h, final_mix);
        h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 29));
        _mm512_storeu_si512((void*)(heads + k), heads_v);
        _mm512_storeu_si512((void*)(hashes + k), h);
        _mm256_storeu_si256((__m256i*)(home_lengths + k), _mm512_cvtepi64_epi32(sizes));
        uint64_t homes[8];
        _mm512_storeu_si512((void*)homes, _mm512_and_si512(h, slot_mask));
        for (int j = 0; j < 8; j++)
            __builtin_prefetch(slots + homes[j]);
        __mmask8 scalar = (__mmask8)~vector;
        _mm256_storeu_si256((__m256i*)(rest + rests),
                            _mm256_maskz_compress_epi32(scalar, _mm256_add_epi32(lanes, _mm256_set1_epi32((int)k))));
        rests += (size_t)__builtin_popcount(scalar);
        previous_ends = piece_ends;
    }
    for (; k < count; k++)
        rest[rests++] = (uint32_t)k;
    return rests;
}

/* Pass two over pieces 0..count-1, after pass one: ranks[k] is the rank in piece k's home slot when that
 * slot holds it as a token of up to 8 bytes (its head equals heads[k] and its length home_lengths[k]),
 * else NO_RANK (all ones); the indices of the pieces not found go to other[], in order (room for count + 8,
 * as rest[] above). Returns how many. */
BYTEBPE_LOOKUP_TARGET static size_t bytebpe_home_ranks_avx512(const bytebpe_slot* slots, uint64_t mask,
                                                              const uint64_t* heads, const uint64_t* hashes,
                                                              const uint32_t* home_lengths, size_t count,
                                                              uint32_t* ranks, uint32_t* other) {
    const __m512i slot_mask = _mm512_set1_epi64((long long)mask);
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i no_rank = _mm256_set1_epi32(-1);
    const __m256i one = _mm256_set1_epi32(1);
    const __m512i even_words = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
    const __m512i odd_words = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    size_t others = 0;
    for (size_t k = 0; k < count; k += 8) {
        __mmask8 live = count - k >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << (count - k)) - 1);
        __m512i h = _mm512_maskz_loadu_epi64(live, (const void*)(hashes + k));
        /* The eight home slots, 16 bytes each, loaded whole (two gathers of their halves cost more on AMD's
         * Zen 4) and split into their heads and their other halves (rank_plus_one | length << 32). A lane
         * past `count` reads slot 0. */
        uint64_t homes[8];
        _mm512_storeu_si512((void*)homes, _mm512_and_si512(h, slot_mask));
        __m512i low = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i*)(slots + homes[0])));
        low = _mm512_inserti64x2(low, _mm_loadu_si128((const __m128i*)(slots + homes[1])), 1);
        low = _mm512_inserti64x2(low, _mm_loadu_si128((const __m128i*)(slots + homes[2])), 2);
        low = _mm512_inserti64x2(low, _mm_loadu_si128((const __m128i*)(slots + homes[3])), 3);
        __m512i high = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i*)(slots + homes[4])));
        high = _mm512_inserti64x2(high, _mm_loadu_si128((const __m128i*)(slots + homes[5])), 1);
        high = _mm512_inserti64x2(high, _mm_loadu_si128((const __m128i*)(slots + homes[6])), 2);
        high = _mm512_inserti64x2(high, _mm_loadu_si128((const __m128i*)(slots + homes[7])), 3);
        __m512i slot_heads = _mm512_permutex2var_epi64(low, even_words, high);
        __m512i slot_rest = _mm512_permutex2var_epi64(low, odd_words, high);
        __m512i lengths = _mm512_cvtepu32_epi64(_mm256_maskz_loadu_epi32(live, (const void*)(home_lengths + k)));
        __mmask8 found = _mm512_mask_cmpeq_epi64_mask(live, slot_heads,
                                                      _mm512_maskz_loadu_epi64(live, (const void*)(heads + k)));
        found = _mm512_mask_cmpeq_epi64_mask(found, _mm512_srli_epi64(slot_rest, 32), lengths);
        __m256i found_ranks = _mm256_sub_epi32(_mm512_cvtepi64_epi32(slot_rest), one);
        _mm256_mask_storeu_epi32((void*)(ranks + k), live, _mm256_mask_blend_epi32(found, no_rank, found_ranks));
        __mmask8 missed = live & (__mmask8)~found;
        _mm256_storeu_si256((__m256i*)(other + others),
                            _mm256_maskz_compress_epi32(missed, _mm256_add_epi32(lanes, _mm256_set1_epi32((int)k))));
        others += (size_t)__builtin_popcount(missed);
    }
    return others;
}
#else
/* No vector variant in this build (bytebpe_lookup_isa_supported says so, and _core.pyx never calls these):
 * the same results, one piece at a time, so that the module links. */
static size_t bytebpe_hash_pieces_avx512(const uint8_t* data, int64_t n, int64_t first, const int64_t* ends,
                                         size_t count, const bytebpe_slot* slots, uint64_t mask, uint64_t* heads,
                                         uint64_t* hashes, uint32_t* home_lengths, uint32_t* rest) {
    (void)data, (void)n, (void)first, (void)ends, (void)slots, (void)mask, (void)heads, (void)hashes;
    (void)home_lengths;
    for (size_t k = 0; k < count; k++)
        rest[k] = (uint32_t)k;
    return count;
}

static size_t bytebpe_home_ranks_avx512(const bytebpe_slot* slots, uint64_t mask, const uint64_t* heads,
                                        const uint64_t* hashes, const uint32_t* home_lengths, size_t count,
                                        uint32_t* ranks, uint32_t* other) {
    size_t others = 0;
    for (size_t k = 0; k < count; k++) {
        const bytebpe_slot* slot = slots + (hashes[k] & mask);
        int found = slot->head == heads[k] && slot->length == home_lengths[k];
        ranks[k] = found ? slot->rank_plus_one - 1 : 0xFFFFFFFFu;
        if (!found)
            other[others++] = (uint32_t)k;
    }
    return others;
}
#endif
