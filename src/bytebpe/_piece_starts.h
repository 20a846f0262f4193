/* Where pieces start in 64 bytes of ASCII text, computed for all 64 positions at once (cl100k's and o200k's
 * patterns below; r50k's, simpler, at the end).
 *
 * The byte-at-a-time scanner pays a branch misprediction at the end of nearly every piece: on English
 * prose a piece is ~4.5 bytes, so that is most of its ~9 ns per piece. Here the classes of 64 bytes become
 * one bit mask each (letters, digits, space, line breaks, other whitespace, other), and the pattern's rules,
 * read as "does a piece start at this byte?", become a few dozen bitwise operations on those masks. The
 * caller then walks the set bits. There are no data-dependent branches except the walk's.
 *
 * THE RULES (ASCII, no apostrophe; byte 0 of the window is known to start a piece, and a piece's start
 * depends only on what lies at and after the previous start):
 *   cl100k '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$
 *          |\s*[\r\n]|\s+(?!\S)|\s
 *   o200k  [^\r\n\p{L}\p{N}]?[Lu Lt Lm Lo M]*[Ll Lm Lo M]+(contraction)?|...[Lu...]+[Ll...]*(contraction)?
 *          |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * With L letters, D digits, S the space, N \r or \n, T the other whitespace, O everything else:
 * - a letter starts a piece unless it follows a letter, a space or T (the last character of a whitespace
 *   run before a non-space always starts a piece, and takes a word as its prefix), or an O that itself
 *   starts a piece (the one-character prefix); an O that does not start a piece is inside a run of O.
 *   o200k also starts one at an upper-case letter after a lower-case one (in ASCII its two word branches
 *   are [A-Z]*[a-z]+ and [A-Z]+);
 * - a digit starts a piece at the start of its run and every third digit after it;
 * - an O starts a piece unless it follows an O of its run or a space (` ?` before the run);
 * - line breaks right after a run of O belong to it (`[\r\n]*+`; o200k's `[\r\n/]*` takes slashes among
 *   them too): they are "absorbed", and the whitespace that follows them is a run of its own;
 * - in a run of (unabsorbed) whitespace, a piece starts at its first character, after its last line break
 *   (`\s*[\r\n]`), and at its last character when the part after the last line break has two or more
 *   characters and a non-space follows (`\s+(?!\S)`).
 * Apostrophes (contractions) and bytes >= 0x80 are "hard": the window stops before them and the scalar
 * scanner takes over (see _pretokenize.pyx). The rules are tested against `regex` and tiktoken on every
 * combination of classes (tests/unit/test_pretokenize.py).
 *
 * WHICH STARTS ARE CERTAIN. Everything above looks back only, except whitespace runs: where a run's last
 * line break is, and whether a non-space follows, depend on where the run ends. So a window is trusted up
 * to its first hard byte, and not inside a whitespace run that reaches that limit (or the window's end,
 * where `\s++$` might also apply). The caller resumes at the last certain start.
 *
 * CLASSIFYING. SSE2 is part of x86-64, so it needs no CPU check; elsewhere a byte loop fills the same masks.
 * On x86-64 built by gcc or clang, AVX2 (two 32-byte halves) and AVX-512BW (the whole block in one
 * register, each class one compare straight into a 64-bit mask) variants are compiled too, each in a
 * function of its own for its instruction set; `bytebpe_block_isa` says which one runs, the widest the CPU
 * has (bytebpe_block_isa_best, when _pretokenize is imported), settable for tests, which check every variant
 * against the others.
 * Only the classifying differs: the rules below are the same code for every variant.
 */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BYTEBPE_WIDE_BLOCKS 1
#endif
#if defined(__GNUC__) || defined(__clang__)
/* The rules are inlined into each variant, with the pattern's rules constant in each case. */
#define BYTEBPE_INLINE static inline __attribute__((always_inline))
#else
#define BYTEBPE_INLINE static inline
#endif

typedef struct {
    uint64_t letter;    /* A-Z a-z */
    uint64_t lower;     /* a-z */
    uint64_t slash;     /* '/' (o200k's runs of punctuation take it after their line breaks) */
    uint64_t digit;     /* 0-9 */
    uint64_t space;     /* ' ' */
    uint64_t newline;   /* \r \n */
    uint64_t white;     /* \t \n \v \f \r and ' ' */
    uint64_t hard;      /* >= 0x80, or the apostrophe */
} bytebpe_ascii_masks;

#if defined(__SSE2__)
static inline uint64_t bytebpe_mask16(__m128i m, int lane) {
    return (uint64_t)(unsigned)_mm_movemask_epi8(m) << (16 * lane);
}
#endif

/* The class masks of s[0:64] (bit j is byte j). */
static inline void bytebpe_classify64(const uint8_t* s, bytebpe_ascii_masks* m) {
#if defined(__SSE2__)
    const __m128i fold = _mm_set1_epi8(0x20);
    const __m128i letter_shift = _mm_set1_epi8((char)(0x61 + 0x80));
    const __m128i digit_shift = _mm_set1_epi8((char)(0x30 + 0x80));
    const __m128i ctrl_shift = _mm_set1_epi8((char)(0x09 + 0x80));
    const __m128i below_26 = _mm_set1_epi8((char)(26 - 128));
    const __m128i below_10 = _mm_set1_epi8((char)(10 - 128));
    const __m128i below_5 = _mm_set1_epi8((char)(5 - 128));
    const __m128i space = _mm_set1_epi8(0x20);
    const __m128i cr = _mm_set1_epi8(0x0D);
    const __m128i lf = _mm_set1_epi8(0x0A);
    const __m128i quote = _mm_set1_epi8(0x27);
    const __m128i slash = _mm_set1_epi8(0x2F);
    m->letter = m->lower = m->slash = m->digit = m->space = m->newline = m->white = m->hard = 0;
    for (int lane = 0; lane < 4; lane++) {
        __m128i v = _mm_loadu_si128((const __m128i*)(s + 16 * lane));
        /* c - (base + 128) as a signed byte is below width - 128 exactly when base <= c < base + width. */
        __m128i letter = _mm_cmplt_epi8(_mm_sub_epi8(_mm_or_si128(v, fold), letter_shift), below_26);
        __m128i lower = _mm_cmplt_epi8(_mm_sub_epi8(v, letter_shift), below_26);
        __m128i digit = _mm_cmplt_epi8(_mm_sub_epi8(v, digit_shift), below_10);
        __m128i is_space = _mm_cmpeq_epi8(v, space);
        __m128i newline = _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, lf));
        __m128i white = _mm_or_si128(is_space, _mm_cmplt_epi8(_mm_sub_epi8(v, ctrl_shift), below_5));
        m->letter |= bytebpe_mask16(letter, lane);
        m->lower |= bytebpe_mask16(lower, lane);
        m->slash |= bytebpe_mask16(_mm_cmpeq_epi8(v, slash), lane);
        m->digit |= bytebpe_mask16(digit, lane);
        m->space |= bytebpe_mask16(is_space, lane);
        m->newline |= bytebpe_mask16(newline, lane);
        m->white |= bytebpe_mask16(white, lane);
        /* movemask of the bytes themselves: their top bit, set from 0x80 up */
        m->hard |= bytebpe_mask16(_mm_or_si128(v, _mm_cmpeq_epi8(v, quote)), lane);
    }
#else
    m->letter = m->lower = m->slash = m->digit = m->space = m->newline = m->white = m->hard = 0;
    for (int j = 0; j < 64; j++) {
        uint8_t c = s[j];
        uint64_t bit = 1ULL << j;
        if ((uint8_t)((c | 0x20) - 0x61) < 26) m->letter |= bit;
        if ((uint8_t)(c - 0x61) < 26) m->lower |= bit;
        if (c == 0x2F) m->slash |= bit;
        if ((uint8_t)(c - 0x30) < 10) m->digit |= bit;
        if (c == 0x20) m->space |= bit;
        if (c == 0x0D || c == 0x0A) m->newline |= bit;
        if (c == 0x20 || (uint8_t)(c - 0x09) < 5) m->white |= bit;
        if (c >= 0x80 || c == 0x27) m->hard |= bit;
    }
#endif
}

#if BYTEBPE_WIDE_BLOCKS
/* bytebpe_classify64 with AVX2: two 32-byte halves, the same range tests as SSE2's. */
__attribute__((target("avx2"))) static inline void bytebpe_classify64_avx2(const uint8_t* s,
                                                                            bytebpe_ascii_masks* m) {
    const __m256i fold = _mm256_set1_epi8(0x20);
    const __m256i letter_shift = _mm256_set1_epi8((char)(0x61 + 0x80));
    const __m256i digit_shift = _mm256_set1_epi8((char)(0x30 + 0x80));
    const __m256i ctrl_shift = _mm256_set1_epi8((char)(0x09 + 0x80));
    const __m256i below_26 = _mm256_set1_epi8((char)(26 - 128));
    const __m256i below_10 = _mm256_set1_epi8((char)(10 - 128));
    const __m256i below_5 = _mm256_set1_epi8((char)(5 - 128));
    const __m256i space = _mm256_set1_epi8(0x20);
    const __m256i cr = _mm256_set1_epi8(0x0D);
    const __m256i lf = _mm256_set1_epi8(0x0A);
    const __m256i quote = _mm256_set1_epi8(0x27);
    const __m256i slash = _mm256_set1_epi8(0x2F);
    m->letter = m->lower = m->slash = m->digit = m->space = m->newline = m->white = m->hard = 0;
    for (int half = 0; half < 2; half++) {
        __m256i v = _mm256_loadu_si256((const __m256i*)(s + 32 * half));
        /* As in SSE2: signed compares below `width - 128` after shifting the range's base to -128. */
        __m256i letter = _mm256_cmpgt_epi8(below_26, _mm256_sub_epi8(_mm256_or_si256(v, fold), letter_shift));
        __m256i lower = _mm256_cmpgt_epi8(below_26, _mm256_sub_epi8(v, letter_shift));
        __m256i digit = _mm256_cmpgt_epi8(below_10, _mm256_sub_epi8(v, digit_shift));
        __m256i is_space = _mm256_cmpeq_epi8(v, space);
        __m256i newline = _mm256_or_si256(_mm256_cmpeq_epi8(v, cr), _mm256_cmpeq_epi8(v, lf));
        __m256i white = _mm256_or_si256(is_space, _mm256_cmpgt_epi8(below_5, _mm256_sub_epi8(v, ctrl_shift)));
        int shift = 32 * half;
        m->letter |= (uint64_t)(uint32_t)_mm256_movemask_epi8(letter) << shift;
        m->lower |= (uint64_t)(uint32_t)_mm256_movemask_epi8(lower) << shift;
        m->slash |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, slash)) << shift;
        m->digit |= (uint64_t)(uint32_t)_mm256_movemask_epi8(digit) << shift;
        m->space |= (uint64_t)(uint32_t)_mm256_movemask_epi8(is_space) << shift;
        m->newline |= (uint64_t)(uint32_t)_mm256_movemask_epi8(newline) << shift;
        m->white |= (uint64_t)(uint32_t)_mm256_movemask_epi8(white) << shift;
        m->hard |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_or_si256(v, _mm256_cmpeq_epi8(v, quote)))
                   << shift;
    }
}

/* bytebpe_classify64 with AVX-512BW: the 64 bytes in one register, each class an unsigned range compare
 * straight into a mask register. */
__attribute__((target("avx512f,avx512bw"))) static inline void bytebpe_classify64_avx512(const uint8_t* s,
                                                                                          bytebpe_ascii_masks* m) {
    const __m512i v = _mm512_loadu_si512((const void*)s);
    m->letter = _mm512_cmplt_epu8_mask(
        _mm512_sub_epi8(_mm512_or_si512(v, _mm512_set1_epi8(0x20)), _mm512_set1_epi8(0x61)), _mm512_set1_epi8(26));
    m->lower = _mm512_cmplt_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8(0x61)), _mm512_set1_epi8(26));
    m->slash = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(0x2F));
    m->digit = _mm512_cmplt_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8(0x30)), _mm512_set1_epi8(10));
    m->space = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(0x20));
    m->newline = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(0x0D)) | _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(0x0A));
    m->white = m->space | _mm512_cmplt_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8(0x09)), _mm512_set1_epi8(5));
    m->hard = _mm512_movepi8_mask(v) | _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(0x27));
}
#endif

/* Spread every bit of `seed` downward (to lower positions) through the contiguous set bits of `within`
 * that hold it: the result has bit j when j is in `within` and some seed bit lies at or above j in the
 * same run. Six doubling steps instead of a loop over the run. */
BYTEBPE_INLINE uint64_t bytebpe_smear_down(uint64_t seed, uint64_t within) {
    uint64_t reach = seed & within;
    uint64_t run = within;
    for (int shift = 1; shift < 64; shift <<= 1) {
        reach |= (reach >> shift) & run;
        run &= run >> shift;
    }
    return reach;
}

/* The same upward (to higher positions): bit j when j is in `within` and a seed bit lies at or below j in
 * the same run. */
BYTEBPE_INLINE uint64_t bytebpe_smear_up(uint64_t seed, uint64_t within) {
    uint64_t reach = seed & within;
    uint64_t run = within;
    for (int shift = 1; shift < 64; shift <<= 1) {
        reach |= (reach << shift) & run;
        run &= run << shift;
    }
    return reach;
}

/* Of `starts`, those that are certain: below the first hard byte, and not inside a whitespace run (`white`)
 * that reaches it or the window's end. */
BYTEBPE_INLINE uint64_t bytebpe_certain_starts(uint64_t starts, uint64_t white, uint64_t hard) {
    unsigned limit = hard ? (unsigned)__builtin_ctzll(hard) : 64;
    uint64_t trusted = limit == 64 ? ~0ULL : (1ULL << limit) - 1;
    if (limit > 0 && (white >> (limit - 1)) & 1) {
        /* The run starts just after the last non-whitespace byte below it; its start is certain (it looks
         * back only), what lies inside it is not. */
        uint64_t non_white_below = ~white & trusted;
        unsigned run_begin = non_white_below ? 64 - (unsigned)__builtin_clzll(non_white_below) : 0;
        trusted = (2ULL << run_begin) - 1;
    }
    return starts & trusted;
}

/* The certain piece starts in the 64 bytes classed in `m` (bit 0, the window's start, always among them) of
 * cl100k's pattern, or of o200k's when `o200k` is set, with digit runs cut every `digits` digits (3:
 * `\p{N}{1,3}`; 1: `\p{N}`; 0: `\p{N}+`, never); and in `*hard` the mask of hard bytes. The caller
 * guarantees that a piece starts at byte 0. (Inlined into bytebpe_rules_starts_of, so `o200k` and `digits`
 * are constants.) */
BYTEBPE_INLINE uint64_t bytebpe_block_starts(const bytebpe_ascii_masks* masks, uint64_t* hard, int o200k,
                                            int digits) {
    const bytebpe_ascii_masks m = *masks;
    const uint64_t L = m.letter, D = m.digit, S = m.space, N = m.newline, W = m.white;
    const uint64_t T = W & ~S & ~N;
    const uint64_t O = ~(L | D | W | m.hard);
    /* A run of O takes the line breaks right after it (cl100k `[\r\n]*+`; o200k `[\r\n/]*`: slashes too,
     * once a line break has come; slashes before it are O of the run itself). Seed the first line break
     * after an O in each stretch of such characters; adding the seed carries through the rest of the
     * stretch and stops where it ends. (In o200k, a later line break after a slash of the same stretch
     * is taken already: "\n/\n/" after a letter is "\n" and "/\n/".) */
    uint64_t tail_chars = N, absorb_seed = N & (O << 1);
    if (o200k) {
        tail_chars = N | m.slash;
        absorb_seed &= ~bytebpe_smear_up((absorb_seed << 1) & tail_chars, tail_chars);
    }
    const uint64_t absorbed = ((tail_chars + absorb_seed) ^ tail_chars) & tail_chars;
    const uint64_t run_of_o = O & ~absorbed;
    /* An O starts a piece unless it continues a run of O or follows a space; byte 0 always starts one. */
    const uint64_t o_start = (run_of_o & ~(run_of_o << 1) & ~(S << 1)) | (O & 1);
    /* A letter starts a piece unless it follows a letter, a space or T, or an O that starts a piece; in
     * o200k also where an upper-case letter follows a lower-case one ([A-Z]*[a-z]+|[A-Z]+[a-z]*). */
    uint64_t letter_starts = L & ~(L << 1) & ~((S | T) << 1) & ~(o_start << 1);
    if (o200k)
        letter_starts |= L & ~m.lower & (m.lower << 1);
    /* A digit run starts a piece, and so does every third digit of it (rarely more than one step), or
     * every digit, as `digits` says. */
    uint64_t digit_starts = digits == 1 ? D : D & ~(D << 1);
    if (digits == 3) {
        uint64_t group = digit_starts;
        const uint64_t three_digits = D & (D << 1) & (D << 2);
        while ((group = (group << 3) & three_digits) != 0)
            digit_starts |= group;
    }
    /* Whitespace (line breaks a run of O took aside) */
    const uint64_t white = W & ~absorbed;
    const uint64_t run_start = white & ~(white << 1);
    const uint64_t before_last_break = bytebpe_smear_down(N & white, white);
    const uint64_t after_breaks = white & ~before_last_break;
    const uint64_t after_last_break = after_breaks & (before_last_break << 1);
    const uint64_t before_non_space = ~(W >> 1);
    /* (A tail of one character also gets its bit here: it starts a piece anyway, as the run's start or
     * after its last line break.) */
    const uint64_t last_of_tail = after_breaks & before_non_space;
    uint64_t starts = 1 | o_start | letter_starts | digit_starts | run_start | after_last_break | last_of_tail;

    *hard = m.hard;
    return bytebpe_certain_starts(starts, W, m.hard);
}

/* The same for r50k's pattern (gpt2, r50k_base, p50k_base, p50k_edit), whose rules are simpler: every piece
 * but whitespace is an optional space and a run of one class, and line breaks are whitespace like any other.
 *   '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s
 * - a letter, digit or O starts a piece unless it continues a run of its class or follows a space (the
 *   last character of a whitespace run before a non-space starts a piece; a space takes the run after it);
 * - a whitespace run starts a piece at its first character and at its last when a non-space follows. */
BYTEBPE_INLINE uint64_t bytebpe_r50k_starts(const bytebpe_ascii_masks* masks, uint64_t* hard) {
    const bytebpe_ascii_masks m = *masks;
    const uint64_t L = m.letter, D = m.digit, S = m.space, W = m.white;
    const uint64_t O = ~(L | D | W | m.hard);
    const uint64_t after_space = S << 1;
    const uint64_t runs = (L & ~(L << 1)) | (D & ~(D << 1)) | (O & ~(O << 1));
    const uint64_t white_ends = (W & ~(W << 1)) | (W & ~(W >> 1));
    *hard = m.hard;
    return bytebpe_certain_starts(1 | (runs & ~after_space) | white_ends, W, m.hard);
}

/* The block rules a compiled pattern shares on ASCII text (pattern_compiler.block_rules says which): one
 * of these, or BYTEBPE_BLOCKS_NONE. */
enum {
    BYTEBPE_BLOCKS_NONE, BYTEBPE_BLOCKS_R50K, BYTEBPE_BLOCKS_CL100K, BYTEBPE_BLOCKS_CL100K_1,
    BYTEBPE_BLOCKS_CL100K_ANY, BYTEBPE_BLOCKS_O200K, BYTEBPE_BLOCKS_O200K_1, BYTEBPE_BLOCKS_O200K_ANY,
};

/* The certain starts in the 64 bytes classed in `m` under the block rules `rules` (not BYTEBPE_BLOCKS_NONE);
 * the suffix says how digit runs are cut: none, every third digit; _1, every digit; _ANY, never. */
BYTEBPE_INLINE uint64_t bytebpe_rules_starts_of(int rules, const bytebpe_ascii_masks* m, uint64_t* hard) {
    switch (rules) {
    case BYTEBPE_BLOCKS_R50K: return bytebpe_r50k_starts(m, hard);
    case BYTEBPE_BLOCKS_CL100K: return bytebpe_block_starts(m, hard, 0, 3);
    case BYTEBPE_BLOCKS_CL100K_1: return bytebpe_block_starts(m, hard, 0, 1);
    case BYTEBPE_BLOCKS_CL100K_ANY: return bytebpe_block_starts(m, hard, 0, 0);
    case BYTEBPE_BLOCKS_O200K: return bytebpe_block_starts(m, hard, 1, 3);
    case BYTEBPE_BLOCKS_O200K_1: return bytebpe_block_starts(m, hard, 1, 1);
    default: return bytebpe_block_starts(m, hard, 1, 0);
    }
}

/* The instruction sets that can class a block (see CLASSIFYING above). */
enum { BYTEBPE_ISA_PORTABLE, BYTEBPE_ISA_AVX2, BYTEBPE_ISA_AVX512, BYTEBPE_ISA_COUNT };

/* Whether this CPU (and build) can run variant `isa`. */
static inline int bytebpe_block_isa_supported(int isa) {
    if (isa == BYTEBPE_ISA_PORTABLE)
        return 1;
#if BYTEBPE_WIDE_BLOCKS
    __builtin_cpu_init();
    if (isa == BYTEBPE_ISA_AVX2)
        return __builtin_cpu_supports("avx2");
    if (isa == BYTEBPE_ISA_AVX512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#endif
    return 0;
}

/* The variant blocks are classed with (one per module that includes this header: _pretokenize's). */
static int bytebpe_block_isa = BYTEBPE_ISA_PORTABLE;

/* The widest variant this CPU runs. */
static inline int bytebpe_block_isa_best(void) {
    int isa = BYTEBPE_ISA_COUNT - 1;
    while (!bytebpe_block_isa_supported(isa))
        isa--;
    return isa;
}

static uint64_t bytebpe_rules_starts_portable(int rules, const uint8_t* s, uint64_t* hard) {
    bytebpe_ascii_masks m;
    bytebpe_classify64(s, &m);
    return bytebpe_rules_starts_of(rules, &m, hard);
}

#if BYTEBPE_WIDE_BLOCKS
__attribute__((target("avx2"))) static uint64_t bytebpe_rules_starts_avx2(int rules, const uint8_t* s,
                                                                          uint64_t* hard) {
    bytebpe_ascii_masks m;
    bytebpe_classify64_avx2(s, &m);
    return bytebpe_rules_starts_of(rules, &m, hard);
}

__attribute__((target("avx512f,avx512bw"))) static uint64_t bytebpe_rules_starts_avx512(int rules, const uint8_t* s,
                                                                                        uint64_t* hard) {
    bytebpe_ascii_masks m;
    bytebpe_classify64_avx512(s, &m);
    return bytebpe_rules_starts_of(rules, &m, hard);
}
#endif

/* The walk of a block's starts (the positions of its set bits, lowest first, as offsets from the block's
 * start `base`), with AVX-512 VBMI2 (Ice Lake and Zen 4 on): the bits' places compressed into bytes in one
 * register, then widened to 64 bits eight at a time. The scalar walk (_pretokenize.pyx) takes a ctz, an add,
 * a store and a bit clear per piece, and a block holds ~14 pieces of English. Writes out[0:8 * ceil(count /
 * 8)], the entries past `count` with `base` (the caller has room for 64); returns count, the number of set
 * bits. Used, with the loop below, with the AVX-512 classing (set_block_isa), so the tests of each variant
 * test them too. */
#if BYTEBPE_WIDE_BLOCKS
static inline int bytebpe_starts_walk_supported(void) {
    return bytebpe_block_isa_supported(BYTEBPE_ISA_AVX512) && __builtin_cpu_supports("avx512vbmi2");
}

__attribute__((target("avx512f,avx512bw,avx512vbmi2,popcnt"))) static int bytebpe_walk_starts_avx512(
        uint64_t starts, int64_t base, int64_t* out) {
    static const uint8_t places[64] = {
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
        28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,
        54, 55, 56, 57, 58, 59, 60, 61, 62, 63};
    uint8_t packed[64];
    _mm512_storeu_si512((void*)packed, _mm512_maskz_compress_epi8(starts, _mm512_loadu_si512((const void*)places)));
    const int count = (int)_mm_popcnt_u64(starts);
    const __m512i at = _mm512_set1_epi64(base);
    for (int i = 0; i < count; i += 8)
        _mm512_storeu_si512((void*)(out + i), _mm512_add_epi64(
            at, _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i*)(packed + i)))));
    return count;
}

/* Consecutive blocks of the text `s[0:n]` from *start on, classed with AVX-512 and walked as above, for as
 * long as each block may run and ends at a certain start: the loop _scan_by_blocks runs a block at a time,
 * kept in one function so that the constants are set once and no call is made per block. A block may run
 * when it starts at or past *scalar_until, lies within the text, begins with eight ASCII bytes, and
 * out[count:capacity] has room for the walk's stores: all 64, or its starts rounded up to eight (nothing is
 * written at or past `capacity`; a block that does not fit is left to the caller). A block with a hard byte
 * is the last: its starts are taken and *scalar_until set past the hard byte; a block with no start past its
 * first byte sets *scalar_until as the caller does and ends the loop. Returns the new count; *start is where
 * the caller goes on. */
#define BYTEBPE_BLOCK_LOOP(RULES_STARTS)                                                                      \
    while (*start + 64 <= n && *start >= *scalar_until) {                                                    \
        uint64_t head_word;                                                                                  \
        memcpy(&head_word, s + *start, 8);                                                                   \
        if (head_word & 0x8080808080808080ULL)                                                               \
            break;                                                                                           \
        bytebpe_ascii_masks m;                                                                               \
        uint64_t hard;                                                                                       \
        __builtin_prefetch(s + *start + 1024);                                                               \
        bytebpe_classify64_avx512(s + *start, &m);                                                           \
        uint64_t starts = (RULES_STARTS) & ~1ULL;                                                            \
        if (!starts) {                                                                                       \
            *scalar_until = *start + (hard ? 64 - (int64_t)__builtin_clzll(hard) : 1);                       \
            break;                                                                                           \
        }                                                                                                    \
        if (capacity - count < 64 && ((int64_t)_mm_popcnt_u64(starts) + 7) / 8 * 8 > capacity - count)      \
            break;      /* the caller's block path walks it, up to capacity */                               \
        const int64_t next = *start + 63 - (int64_t)__builtin_clzll(starts);                                 \
        count += bytebpe_walk_starts_avx512(starts, *start, out + count);                                     \
        if (hard)                                                                                            \
            *scalar_until = *start + (int64_t)__builtin_ctzll(hard) + 1;                                     \
        *start = next;                                                                                       \
        if (hard)                                                                                            \
            break;                                                                                           \
    }

__attribute__((target("avx512f,avx512bw,avx512vbmi2,popcnt"))) static int64_t bytebpe_scan_blocks_avx512(
        int rules, const uint8_t* s, int64_t n, int64_t* out, int64_t count, int64_t capacity, int64_t* start,
        int64_t* scalar_until) {
    switch (rules) {
    case BYTEBPE_BLOCKS_R50K: BYTEBPE_BLOCK_LOOP(bytebpe_r50k_starts(&m, &hard)) break;
    case BYTEBPE_BLOCKS_CL100K: BYTEBPE_BLOCK_LOOP(bytebpe_block_starts(&m, &hard, 0, 3)) break;
    case BYTEBPE_BLOCKS_CL100K_1: BYTEBPE_BLOCK_LOOP(bytebpe_block_starts(&m, &hard, 0, 1)) break;
    case BYTEBPE_BLOCKS_CL100K_ANY: BYTEBPE_BLOCK_LOOP(bytebpe_block_starts(&m, &hard, 0, 0)) break;
    case BYTEBPE_BLOCKS_O200K: BYTEBPE_BLOCK_LOOP(bytebpe_block_starts(&m, &hard, 1, 3)) break;
    case BYTEBPE_BLOCKS_O200K_1: BYTEBPE_BLOCK_LOOP(bytebpe_block_starts(&m, &hard, 1, 1)) break;
    default: BYTEBPE_BLOCK_LOOP(bytebpe_block_starts(&m, &hard, 1, 0)) break;
    }
    return count;
}
#undef BYTEBPE_BLOCK_LOOP
#else
static inline int64_t bytebpe_scan_blocks_avx512(int rules, const uint8_t* s, int64_t n, int64_t* out,
                                                 int64_t count, int64_t capacity, int64_t* start,
                                                 int64_t* scalar_until) {
    (void)rules; (void)s; (void)n; (void)out; (void)capacity; (void)start; (void)scalar_until;
    return count;   /* never called: bytebpe_starts_walk_supported() is 0 */
}
static inline int bytebpe_starts_walk_supported(void) { return 0; }
#endif

/* The certain starts in s[0:64] under the block rules `rules`, classed by variant `isa` (supported). */
static inline uint64_t bytebpe_rules_starts_with(int isa, int rules, const uint8_t* s, uint64_t* hard) {
#if BYTEBPE_WIDE_BLOCKS
    if (isa == BYTEBPE_ISA_AVX512)
        return bytebpe_rules_starts_avx512(rules, s, hard);
    if (isa == BYTEBPE_ISA_AVX2)
        return bytebpe_rules_starts_avx2(rules, s, hard);
#endif
    (void)isa;
    return bytebpe_rules_starts_portable(rules, s, hard);
}

/* The same with the variant in use. */
static inline uint64_t bytebpe_rules_starts(int rules, const uint8_t* s, uint64_t* hard) {
    /* The text 1 KiB ahead: converted at the call's start, it has mostly left the nearer caches by the time
     * a block reaches it (the tables read meanwhile pushed it out), and the first load of a block waited. */
    __builtin_prefetch(s + 1024);
    return bytebpe_rules_starts_with(bytebpe_block_isa, rules, s, hard);
}
