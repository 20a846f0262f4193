// The UTF-8 bytes of a non-ASCII str, as a new bytes object: what PyUnicode_AsUTF8String returns, faster on
// the text encoders meet.
//
// Why. Text with one character past U+007F (a curly quote, a dash, an accented letter) is stored by CPython
// one, two or four bytes per character, and the scanner reads UTF-8, so every such str is encoded first.
// CPython's encoder takes each character through a chain of branches, a noticeable part of an encode.
// Here runs of ASCII characters, most of any such text, are copied 16 at a time (SSE2); the rest, where the
// CPU has AVX-512 (BW and VBMI2), 16 at a time too, else one by one.
#pragma once

#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static inline char* bytebpe_put_utf8(char* out, Py_UCS4 c) {
    if (c < 0x80) {
        *out++ = (char)c;
    } else if (c < 0x800) {
        *out++ = (char)(0xC0 | (c >> 6));
        *out++ = (char)(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        *out++ = (char)(0xE0 | (c >> 12));
        *out++ = (char)(0x80 | ((c >> 6) & 0x3F));
        *out++ = (char)(0x80 | (c & 0x3F));
    } else {
        *out++ = (char)(0xF0 | (c >> 18));
        *out++ = (char)(0x80 | ((c >> 12) & 0x3F));
        *out++ = (char)(0x80 | ((c >> 6) & 0x3F));
        *out++ = (char)(0x80 | (c & 0x3F));
    }
    return out;
}

// Copy the ASCII characters at the start of s[0:n] to out, in blocks of 16; returns how many were copied (a
// multiple of 16, or fewer only at the end of no block). SSE2 where there is SSE2 (every x86-64), else 0.
static inline Py_ssize_t bytebpe_ascii_prefix_ucs1(const Py_UCS1* s, Py_ssize_t n, char* out) {
    Py_ssize_t i = 0;
#if defined(__SSE2__)
    for (; i + 16 <= n; i += 16) {
        __m128i chars = _mm_loadu_si128((const __m128i*)(s + i));
        if (_mm_movemask_epi8(chars)) {
            break;
        }
        _mm_storeu_si128((__m128i*)(out + i), chars);
    }
#else
    (void)s; (void)n; (void)out;
#endif
    return i;
}

static inline Py_ssize_t bytebpe_ascii_prefix_ucs2(const Py_UCS2* s, Py_ssize_t n, char* out) {
    Py_ssize_t i = 0;
#if defined(__SSE2__)
    const __m128i high = _mm_set1_epi16((short)0xFF80);
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i*)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i*)(s + i + 8));
        if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(_mm_or_si128(a, b), high), _mm_setzero_si128()))
                != 0xFFFF) {
            break;
        }
        _mm_storeu_si128((__m128i*)(out + i), _mm_packus_epi16(a, b));
    }
#else
    (void)s; (void)n; (void)out;
#endif
    return i;
}

// Sixteen characters of a 1- or 2-byte str at once, with AVX-512 (BW and VBMI2): each widened to a 32-bit
// lane that holds its 1, 2 or 3 UTF-8 bytes, then the bytes packed together with one compress. For text
// that mixes ASCII with letters of other scripts (spaces between Cyrillic or Hangul words), where the loop
// one character at a time mispredicted its branch on the character's width every few characters.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BYTEBPE_WIDE_UTF8 1

static inline int bytebpe_utf8_wide_supported(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi2");
}

// Whether the encoder converts 16 characters at a time: set by the module that includes this header, at
// import, from bytebpe_utf8_wide_supported (and by the tests, to check both ways).
static int bytebpe_utf8_wide = 0;

// The UTF-8 of the 16 characters `c` (code points below U+10000, widened to 32 bits) written at out, where
// 64 bytes may be written; returns the number of bytes they take, or -1 (nothing written) when one is a
// surrogate.
__attribute__((target("avx512f,avx512bw,avx512vbmi2")))
static inline Py_ssize_t bytebpe_utf8_16_avx512(__m512i c, char* out) {
    const __m512i low6 = _mm512_set1_epi32(0x3F);
    if (_mm512_cmpeq_epi32_mask(_mm512_and_si512(c, _mm512_set1_epi32(0xF800)), _mm512_set1_epi32(0xD800)))
        return -1;
    __m512i high = _mm512_srli_epi32(c, 6);
    __m512i last = _mm512_or_si512(_mm512_and_si512(c, low6), _mm512_set1_epi32(0x80));
    // two bytes: 110xxxxx 10xxxxxx; three: 1110xxxx 10xxxxxx 10xxxxxx (byte 0 lowest in the lane)
    __m512i two = _mm512_or_si512(_mm512_or_si512(high, _mm512_set1_epi32(0xC0)), _mm512_slli_epi32(last, 8));
    __m512i three = _mm512_or_si512(
        _mm512_or_si512(_mm512_srli_epi32(c, 12), _mm512_set1_epi32(0xE0)),
        _mm512_or_si512(
            _mm512_slli_epi32(_mm512_or_si512(_mm512_and_si512(high, low6), _mm512_set1_epi32(0x80)), 8),
            _mm512_slli_epi32(last, 16)));
    __mmask16 wide2 = _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(0x80));
    __mmask16 wide3 = _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(0x800));
    __m512i bytes = _mm512_mask_mov_epi32(_mm512_mask_mov_epi32(c, wide2, two), wide3, three);
    // each lane's length (1 + wide2 + wide3) in all four of its bytes, against each byte's place in its lane
    const __m512i one_each = _mm512_set1_epi32(0x01010101);
    __m512i length = _mm512_mask_add_epi32(one_each, wide2, one_each, one_each);
    length = _mm512_mask_add_epi32(length, wide3, length, one_each);
    __mmask64 keep = _mm512_cmplt_epu8_mask(_mm512_set1_epi32(0x03020100), length);
    _mm512_storeu_si512((void*)out, _mm512_maskz_compress_epi8(keep, bytes));
    return (Py_ssize_t)__builtin_popcountll(keep);
}

__attribute__((target("avx512f,avx512bw,avx512vbmi2")))
static inline Py_ssize_t bytebpe_utf8_16_ucs2(const Py_UCS2* s, char* out) {
    return bytebpe_utf8_16_avx512(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)s)), out);
}

__attribute__((target("avx512f,avx512bw,avx512vbmi2")))
static inline Py_ssize_t bytebpe_utf8_16_ucs1(const Py_UCS1* s, char* out) {
    return bytebpe_utf8_16_avx512(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)s)), out);
}
#else
static int bytebpe_utf8_wide = 0;
static inline int bytebpe_utf8_wide_supported(void) { return 0; }
#endif

// A new reference to the UTF-8 bytes of `text` (a str), or NULL with an exception set.
//
// One pass into a buffer of the largest size the kind allows (a character of a 1-, 2- or 4-byte kind takes
// at most 2, 3 or 4 UTF-8 bytes), cut to size at the end: pages never written are never resident. A run of
// ASCII characters is copied 16 at a time; a surrogate sends the str to PyUnicode_AsUTF8String, which
// raises the UnicodeEncodeError callers expect (and repair).
static PyObject* bytebpe_utf8_bytes(PyObject* text) {
    int kind = PyUnicode_KIND(text);
    const void* data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_ssize_t per_char = kind == PyUnicode_1BYTE_KIND ? 2 : kind == PyUnicode_2BYTE_KIND ? 3 : 4;
    if (n > PY_SSIZE_T_MAX / 4) {
        return PyUnicode_AsUTF8String(text);
    }
    // 64 bytes of room more: a block of 16 characters writes a whole vector wherever it ends.
    PyObject* result = PyBytes_FromStringAndSize(NULL, n * per_char + 64);
    if (result == NULL) {
        return NULL;
    }
    char* const begin = PyBytes_AS_STRING(result);
    char* out = begin;
    Py_ssize_t i = 0;
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1* s = (const Py_UCS1*)data;
        while (i < n) {
            Py_ssize_t run = bytebpe_ascii_prefix_ucs1(s + i, n - i, out);
            i += run;
            out += run;
#if BYTEBPE_WIDE_UTF8
            if (bytebpe_utf8_wide && i + 16 <= n) {     // 16 characters, not all ASCII, at once
                out += bytebpe_utf8_16_ucs1(s + i, out);
                i += 16;
                continue;
            }
#endif
            // Then characters one by one up to the next 16-aligned run of ASCII, or the end.
            for (Py_ssize_t stop = i + 16 < n ? i + 16 : n; i < stop; i++) {
                out = bytebpe_put_utf8(out, s[i]);
            }
        }
    } else if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2* s = (const Py_UCS2*)data;
        while (i < n) {
            Py_ssize_t run = bytebpe_ascii_prefix_ucs2(s + i, n - i, out);
            i += run;
            out += run;
#if BYTEBPE_WIDE_UTF8
            if (bytebpe_utf8_wide && i + 16 <= n) {     // 16 characters, not all ASCII, at once
                Py_ssize_t written = bytebpe_utf8_16_ucs2(s + i, out);
                if (written < 0) {          // a surrogate
                    Py_DECREF(result);
                    return PyUnicode_AsUTF8String(text);
                }
                out += written;
                i += 16;
                continue;
            }
#endif
            for (Py_ssize_t stop = i + 16 < n ? i + 16 : n; i < stop; i++) {
                Py_UCS2 c = s[i];
                if (c < 0x80) {
                    *out++ = (char)c;
                } else if (c < 0x800) {
                    out[0] = (char)(0xC0 | (c >> 6));
                    out[1] = (char)(0x80 | (c & 0x3F));
                    out += 2;
                } else {
                    if ((c & 0xF800) == 0xD800) {
                        Py_DECREF(result);
                        return PyUnicode_AsUTF8String(text);
                    }
                    out[0] = (char)(0xE0 | (c >> 12));
                    out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
                    out[2] = (char)(0x80 | (c & 0x3F));
                    out += 3;
                }
            }
        }
    } else {
        const Py_UCS4* s = (const Py_UCS4*)data;
        for (; i < n; i++) {
            Py_UCS4 c = s[i];
            if ((c & 0xFFFFF800u) == 0xD800) {
                Py_DECREF(result);
                return PyUnicode_AsUTF8String(text);
            }
            out = bytebpe_put_utf8(out, c);
        }
    }
    if (_PyBytes_Resize(&result, out - begin) < 0) {
        return NULL;
    }
    return result;
}
