/* Runs of ASCII letters (and of one byte), 16 bytes at a time: the hot inner loops of the pre-tokenizer.
 *
 * A word ends at an unpredictable byte; a byte-at-a-time loop pays a branch misprediction there for
 * every piece. Comparing 16 bytes at once and counting the trailing letters with one instruction leaves
 * a branch that is almost always taken the same way. SSE2 is part of x86-64, so no CPU check is needed;
 * elsewhere the portable loop below does the same job.
 */
#pragma once
#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The end of the run of ASCII letters at s[i:n]: a..z only when `fold` is 0, also A..Z when it is 0x20.
 * Stops at the first other byte, non-ASCII ones included (the caller decodes those). */
static inline size_t bytebpe_ascii_letter_run(const uint8_t* s, size_t i, size_t n, uint8_t fold) {
#if defined(__SSE2__)
    const __m128i fold_bits = _mm_set1_epi8((char)fold);
    /* c - ('a' + 128) as a signed byte is below 26 - 128 exactly when 'a' <= c <= 'z' (unsigned). */
    const __m128i shift = _mm_set1_epi8((char)(0x61 + 0x80));
    const __m128i limit = _mm_set1_epi8((char)(26 - 128));
    while (i + 16 <= n) {
        __m128i bytes = _mm_or_si128(_mm_loadu_si128((const __m128i*)(s + i)), fold_bits);
        __m128i letters = _mm_cmplt_epi8(_mm_sub_epi8(bytes, shift), limit);
        unsigned mask = (unsigned)_mm_movemask_epi8(letters);
        if (mask != 0xFFFFu)
            return i + (size_t)__builtin_ctz(~mask);
        i += 16;
    }
#endif
    while (i < n && (uint8_t)((s[i] | fold) - 0x61) < 26)
        i++;
    return i;
}

/* The end of the run of bytes equal to `byte` at s[i:n] (code indents with runs of spaces). */
static inline size_t bytebpe_byte_run(const uint8_t* s, size_t i, size_t n, uint8_t byte) {
#if defined(__SSE2__)
    const __m128i wanted = _mm_set1_epi8((char)byte);
    while (i + 16 <= n) {
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i*)(s + i)), wanted));
        if (mask != 0xFFFFu)
            return i + (size_t)__builtin_ctz(~mask);
        i += 16;
    }
#endif
    while (i < n && s[i] == byte)
        i++;
    return i;
}
