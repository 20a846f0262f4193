// The UTF-8 bytes of a non-ASCII str, as a new bytes object: what PyUnicode_AsUTF8String returns, faster on
// the text encoders meet.
//
// Why. Text with one character past U+007F (a curly quote, a dash, an accented letter) is stored by CPython
// one, two or four bytes per character, and the scanner reads UTF-8, so every such str is encoded first.
// CPython's encoder takes each character through a chain of branches, a noticeable part of an encode.
// Here runs of ASCII characters, most of any such text, are copied 16 at a time (SSE2), the rest one by one.
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
    PyObject* result = PyBytes_FromStringAndSize(NULL, n * per_char);
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
