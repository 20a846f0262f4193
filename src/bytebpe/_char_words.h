/* The pieces of a character-level (SentencePiece-style) BPE model: HF's words, with the characters the
 * vocabulary lacks cut out byte by byte.
 *
 * HF's BPE starts a word from its characters; a character that is not a token becomes the <0xXX> tokens of
 * its bytes (byte_fallback), which no merge joins (parts/model.py checks it). So a word's ids are those of
 * its runs of known characters, merged each on its own, with every byte of an unknown character between
 * them as a piece of one byte -- whose whole-piece lookup is its <0xXX> token, since a byte the vocabulary
 * has no character for is that token in the table (parts/model.py, `BPEModel._character_tokens`). The
 * scanner is used only when every byte has its <0xXX> token (`BPEModel.word_scanner`).
 *
 * Where a run of known characters is cut besides (`mark_rule`, the mark being Metaspace's replacement):
 *   BYTEBPE_MARK_NONE        nowhere (no pre-tokenizer: the text is one word);
 *   BYTEBPE_MARK_AFTER_WORD  before a mark that follows another character (parts/model.py, `_word_split`:
 *                            the ids are the same as the whole word's, as no merge joins there);
 *   BYTEBPE_MARK_EVERY       before every mark but one that starts the text (Metaspace's split,
 *                            MergedWithNext: "a▁▁b" -> a, ▁, ▁b).
 *
 * So a piece here may be one byte of a character: unlike the pattern scanners' pieces, these can cut a
 * character's UTF-8 (only an unknown one's). The text is CPython's UTF-8 of a str: valid, no surrogates.
 */
#ifndef BYTEBPE_CHAR_WORDS_H
#define BYTEBPE_CHAR_WORDS_H

#include <stddef.h>
#include <stdint.h>

enum {
    BYTEBPE_MARK_NONE = 0,
    BYTEBPE_MARK_AFTER_WORD = 1,
    BYTEBPE_MARK_EVERY = 2,
};

/* The code point at s[i] (valid UTF-8 whose lead byte is at i) and its width. */
static inline uint32_t bytebpe_char_at(const uint8_t* s, ptrdiff_t i, ptrdiff_t* width) {
    uint8_t c = s[i];
    if (c < 0x80) {
        *width = 1;
        return c;
    }
    if (c < 0xE0) {
        *width = 2;
        return ((uint32_t)(c & 0x1F) << 6) | (s[i + 1] & 0x3F);
    }
    if (c < 0xF0) {
        *width = 3;
        return ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
    }
    *width = 4;
    return ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) |
           ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
}

static inline int bytebpe_char_known(const uint64_t* known, uint32_t cp) {
    return (int)((known[cp >> 6] >> (cp & 63)) & 1);
}

/* Where the piece starting at s[i] ends (i < n); `*seen` gets the furthest byte the decision looked at
 * (the next character's last byte, or n when the text ended). `known`: a bit per code point, set for the
 * characters that are tokens. */
static inline ptrdiff_t bytebpe_char_word_end(const uint64_t* known, uint32_t mark, int mark_rule,
                                              const uint8_t* s, ptrdiff_t i, ptrdiff_t n, ptrdiff_t* seen) {
    ptrdiff_t width, j;
    uint32_t cp;
    int previous_mark;
    if ((s[i] & 0xC0) == 0x80) {     /* inside an unknown character: its next byte */
        *seen = i;
        return i + 1;
    }
    cp = bytebpe_char_at(s, i, &width);
    if (!bytebpe_char_known(known, cp)) {
        *seen = i + width - 1;
        return i + 1;
    }
    previous_mark = cp == mark;
    j = i + width;
    while (j < n) {
        cp = bytebpe_char_at(s, j, &width);
        if (!bytebpe_char_known(known, cp))
            break;
        if (cp == mark && (mark_rule == BYTEBPE_MARK_EVERY || (mark_rule == BYTEBPE_MARK_AFTER_WORD && !previous_mark)))
            break;
        previous_mark = cp == mark;
        j += width;
    }
    *seen = j < n ? j + width - 1 : n;
    return j;
}

#endif
