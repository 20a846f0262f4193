# cython: language_level=3
# distutils: language = c++
"""Streaming decode, two contracts: `DecodeStream` (tiktoken-style: whole characters as soon as their bytes
are in; `Encoding.decode_stream()`) and `HFStream` (`tokenizers.decoders.DecodeStream`'s rule, for
bytebpe.hf). Both read token bytes from a `_core.CoreBPE` through the C-level functions `_core.pxd`
declares; neither shares state with another stream.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uint8_t, uint32_t
from libc.string cimport memcmp
from libcpp.vector cimport vector

from bytebpe._core cimport core_append_token, core_check_id, core_has_token, core_token_texts

from ._core import CoreBPE

cdef extern from "Python.h":
    object PyUnicode_DecodeUTF8(const char* s, Py_ssize_t size, const char* errors)
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size) except NULL
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    uint32_t PyUnicode_READ_CHAR(object text, Py_ssize_t index)
    bint PyDict_Next(object d, Py_ssize_t* position, PyObject** key, PyObject** value)


cdef Py_ssize_t _unfinished_tail(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """How many bytes at the end of s[:n] start a UTF-8 character that more bytes could still finish: the
    bytes Python's incremental UTF-8 decoder keeps (a lead byte and the continuation bytes it allows so far;
    E0 takes A0-BF next, ED 80-9F, F0 90-BF, F4 80-8F, F5-FF and C0-C1 nothing); 0 when every byte is final."""
    cdef Py_ssize_t k = n, need
    cdef uint8_t lead, second
    while k > 0 and n - k < 3 and (s[k - 1] & 0xC0) == 0x80:
        k -= 1
    if k == 0:
        return 0
    k -= 1
    lead = s[k]
    if 0xC2 <= lead <= 0xDF:
        need = 2
    elif 0xE0 <= lead <= 0xEF:
        need = 3
    elif 0xF0 <= lead <= 0xF4:
        need = 4
    else:
        return 0
    if n - k >= need:
        return 0
    if n - k >= 2:
        second = s[k + 1]
        if (lead == 0xE0 and second < 0xA0) or (lead == 0xED and second > 0x9F) \
                or (lead == 0xF0 and second < 0x90) or (lead == 0xF4 and second > 0x8F):
            return 0
    return n - k


@cython.final
cdef class DecodeStream:
    """Text of ids given a few at a time, as a model emits them (`Encoding.decode_stream()`).

    A token's bytes need not end on a character boundary (a CJK character or an emoji is often two or three
    tokens). The stream keeps the bytes of an unfinished character until the ids that finish it arrive, and
    returns whole characters only: what the steps return, joined with `flush()`'s, is what Python's
    incremental UTF-8 decoder gives for the tokens' bytes, step by step (and so ``decode(ids, errors)``).

    >>> stream = enc.decode_stream()                    # doctest: +SKIP
    >>> [stream.step(i) for i in enc.encode("日本")]     # doctest: +SKIP
    ['', '日', '本']

    `errors` is what `bytes.decode` takes ("replace": U+FFFD where the bytes are no UTF-8; "strict": raise
    UnicodeDecodeError); with `skip_special_tokens`, the ids of special tokens give no text. An id that is
    no token raises as `Encoding.decode` does, and the stream is left as it was before that step.
    """
    cdef object core                    # a CoreBPE
    cdef vector[uint8_t] buffer         # the bytes of an unfinished character (at most 3 after each step)
    cdef bytes errors_utf8
    cdef frozenset skipped
    cdef list texts                     # the core's token_texts
    cdef readonly str errors

    def __cinit__(self, core not None, str errors not None, frozenset skipped=None):
        import codecs
        if not isinstance(core, CoreBPE):
            raise TypeError(f"DecodeStream takes a CoreBPE, got {type(core).__name__}")
        codecs.lookup_error(errors)     # LookupError now for an unknown handler, not at the first bad byte
        self.core = core
        self.texts = core_token_texts(core)
        self.errors = errors
        self.errors_utf8 = errors.encode("utf-8")
        self.skipped = skipped if skipped else None

    cdef object _whole_text(self, Py_ssize_t token):
        """The text of `token` if its bytes are whole characters (then kept in the core's token_texts), else
        False (kept too)."""
        cdef vector[uint8_t] data
        core_append_token(self.core, token, data)
        try:
            text = PyUnicode_DecodeUTF8(<const char*>data.data(), data.size(), "strict")
        except UnicodeDecodeError:
            text = False
        self.texts[token] = text
        return text

    cdef str _take(self, bint final):
        """Decode and drop the bytes that are final (all of them with `final`)."""
        cdef Py_ssize_t n = self.buffer.size()
        cdef Py_ssize_t done = n if final else n - _unfinished_tail(self.buffer.data(), n)
        if done == 0:
            return ""
        text = PyUnicode_DecodeUTF8(<const char*>self.buffer.data(), done, PyBytes_AS_STRING(self.errors_utf8))
        self.buffer.erase(self.buffer.begin(), self.buffer.begin() + done)
        return text

    @cython.binding(False)      # one call per id a model emits: the plainest method call there is (METH_O)
    @cython.always_allow_keywords(False)
    def step(self, ids):
        """The characters that `ids` (one id, or a sequence of them) complete, after those already returned."""
        cdef Py_ssize_t token, i, before = self.buffer.size()
        cdef list texts = self.texts
        if type(ids) is int:
            token = core_check_id(self.core, ids)
            if self.skipped is not None and ids in self.skipped:
                return self._take(False)
            if before == 0 and token < PyList_GET_SIZE(texts):
                # Nothing unfinished before it: a token whose bytes are whole characters is its own text.
                text = <object>PyList_GET_ITEM(texts, token)
                if text is None:
                    text = self._whole_text(token)
                if text is not False:
                    return text
            core_append_token(self.core, token, self.buffer)
            return self._take(False)
        if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
            if hasattr(ids, "__index__") and not isinstance(ids, bool):
                return self.step(ids.__index__())
            raise TypeError(f"expected a token id or a sequence of them, got {type(ids).__name__}")
        cdef list tokens = list(ids.tolist() if hasattr(ids, "tolist") else ids)
        try:
            for i in range(PyList_GET_SIZE(tokens)):
                item = <object>PyList_GET_ITEM(tokens, i)
                token = core_check_id(self.core, item)
                if self.skipped is None or token not in self.skipped:
                    core_append_token(self.core, token, self.buffer)
        except BaseException:
            self.buffer.resize(before)     # the stream as it was
            raise
        return self._take(False)

    def prefill(self, ids):
        """Take `ids` (a prompt) without returning their text: a character they leave unfinished is finished,
        and returned, by the next step."""
        self.step(ids)

    def flush(self):
        """What is left: the bytes of an unfinished character, as `errors` says ("replace": one U+FFFD;
        "strict": UnicodeDecodeError). The stream is empty afterwards, and can go on."""
        try:
            return self._take(True)
        finally:
            self.buffer.clear()

    @property
    def pending(self):
        """The bytes of an unfinished character, kept for the next step."""
        return PyBytes_FromStringAndSize(<const char*>self.buffer.data(), self.buffer.size())

    def __repr__(self):
        return f"DecodeStream(errors={self.errors!r}, pending={self.pending!r})"

    def __reduce__(self):
        raise TypeError("a DecodeStream cannot be pickled; make a new one with Encoding.decode_stream()")


# ---- HF's DecodeStream -------------------------------------------------------------------------------------

class DecodeStreamError(ValueError):
    """A stream's text no longer starts with what it already gave (HF's InvalidPrefix)."""


cdef void _lossy_utf8(const uint8_t* s, Py_ssize_t n, vector[uint8_t]& out) noexcept nogil:
    """Append s[:n] as valid UTF-8: each maximal subpart of an ill-formed sequence (a lead byte and the
    continuation bytes it allows so far; or one byte that starts nothing) becomes U+FFFD. Rust's
    `String::from_utf8_lossy`, which HF's ByteLevel decoder ends in, and Python's "replace" both do this."""
    cdef Py_ssize_t i = 0, j, need
    cdef uint8_t lead, low, high, c
    while i < n:
        lead = s[i]
        if lead < 0x80:
            out.push_back(lead)
            i += 1
            continue
        low, high = 0x80, 0xBF
        if 0xC2 <= lead <= 0xDF:
            need = 1
        elif 0xE0 <= lead <= 0xEF:
            need = 2
            if lead == 0xE0:
                low = 0xA0
            elif lead == 0xED:
                high = 0x9F
        elif 0xF0 <= lead <= 0xF4:
            need = 3
            if lead == 0xF0:
                low = 0x90
            elif lead == 0xF4:
                high = 0x8F
        else:
            need = 0
        j = i + 1
        while need > 0 and j < n:
            c = s[j]
            if c < low or c > high:
                break
            low, high = 0x80, 0xBF
            j += 1
            need -= 1
        if need == 0 and j > i + 1:
            out.insert(out.end(), s + i, s + j)
        else:
            out.push_back(0xEF)
            out.push_back(0xBF)
            out.push_back(0xBD)
        i = j


cdef inline bint _ends_in_replacement(const vector[uint8_t]& text) noexcept nogil:
    cdef Py_ssize_t n = text.size()
    return n >= 3 and text[n - 3] == 0xEF and text[n - 2] == 0xBF and text[n - 1] == 0xBD


# What an id is to a StreamTokens' decode (its `kinds`, one byte per id; ids past the end are NO_TOKEN).
cdef enum:
    STREAM_TOKEN = 0        # its text is joined
    STREAM_SPECIAL = 1      # a special token's: left out with skip_special_tokens (HF drops it before decoding)
    STREAM_NO_TOKEN = 2     # no token: HF's decode drops it
    STREAM_BYTE = 3         # a ByteFallback byte token (<0xXX>): its byte, in a run of such tokens


@cython.final
cdef class StreamTokens:
    """A tokenizer's decode as `HFStream` runs it, in C. Two kinds of tokenizer:
    - byte-level (`core` given): the ids' bytes from the core, joined, as UTF-8 with U+FFFD for ill-formed
      bytes (HF's ByteLevel decoder);
    - a table (`texts` given: id -> its string after the decoder's per-token steps, as
      `parts.decoders.JoinedDecoder.mapped` holds them: one character U+F0000 + b for a ByteFallback byte
      token of byte b, U+F0100 for a token of no text): the strings joined, each run of byte tokens as its
      bytes where they are UTF-8 and else one U+FFFD per byte (HF's ByteFallback), then `strips`
      ((content, start, stop) per Strip step on the fused string) -- `parts.decoders.JoinedDecoder`.
    `kinds`: one STREAM_* byte per id (a table's byte tokens are made STREAM_BYTE here)."""
    cdef object core                    # a CoreBPE, or None
    cdef bytes kinds
    cdef vector[uint8_t] texts          # a table's strings, as UTF-8, one after the other:
    cdef vector[uint32_t] starts        #   id i's at texts[starts[i]:starts[i + 1]]
    cdef list strips

    def __cinit__(self, kinds not None, core=None, dict texts=None, list strips=None):
        cdef bytearray marked = bytearray(kinds)
        cdef Py_ssize_t n = len(marked), position = 0, size, token, total = 0
        cdef PyObject* key
        cdef PyObject* value
        cdef uint32_t mark
        cdef vector[int64_t] sizes          # per id: its text's UTF-8 length, or -1 - byte for a byte token
        cdef vector[const char*] data
        if (core is None) == (texts is None):
            raise ValueError("StreamTokens takes a core or texts")
        if core is not None and not isinstance(core, CoreBPE):
            raise TypeError(f"StreamTokens takes a CoreBPE, got {type(core).__name__}")
        if texts is not None:
            sizes.assign(n, 0)
            data.assign(n, NULL)
            while PyDict_Next(texts, &position, &key, &value):
                token = <object>key
                text = <object>value
                if not isinstance(text, str):
                    raise TypeError(f"a StreamTokens text is a str, got {type(text).__name__}")
                if token < 0 or token >= n:
                    continue
                mark = <uint32_t>PyUnicode_READ_CHAR(text, 0) if PyUnicode_GET_LENGTH(text) == 1 else 0
                if 0xF0000 <= mark <= 0xF0100:
                    if mark < 0xF0100:
                        sizes[token] = -1 - <int64_t>(mark - 0xF0000)
                        marked[token] = STREAM_BYTE
                    continue
                data[token] = PyUnicode_AsUTF8AndSize(text, &size)
                sizes[token] = size
                total += size
            if total + n > 0xFFFFFFFF:
                raise ValueError("StreamTokens' texts take more than 4 GiB")
            self.texts.reserve(total + n)
            self.starts.reserve(n + 1)
            self.starts.push_back(0)
            for token in range(n):
                if sizes[token] < 0:
                    self.texts.push_back(<uint8_t>(-1 - sizes[token]))
                elif sizes[token] > 0:
                    self.texts.insert(self.texts.end(), <const uint8_t*>data[token],
                                      <const uint8_t*>data[token] + sizes[token])
                self.starts.push_back(self.texts.size())
        for content, start, stop in strips or ():
            if not isinstance(content, bytes) or not content or start < 0 or stop < 0:
                raise ValueError("a strip is (content as non-empty UTF-8 bytes, start >= 0, stop >= 0)")
        self.core, self.kinds, self.strips = core, bytes(marked), strips or []

    cdef int decode(self, const vector[uint32_t]& ids, Py_ssize_t start, bint skip_special,
                    vector[uint8_t]& raw, vector[uint8_t]& out) except -1:
        """`out` = the text of ids[start:], as UTF-8 (`raw`: scratch)."""
        cdef const uint8_t* kinds = <const uint8_t*>PyBytes_AS_STRING(self.kinds)
        cdef Py_ssize_t i, n_kinds = PyBytes_GET_SIZE(self.kinds)
        cdef uint32_t token
        cdef uint8_t kind
        cdef const uint8_t* texts
        cdef const uint32_t* offsets
        raw.clear()
        out.clear()
        if self.core is not None:
            for i in range(start, <Py_ssize_t>ids.size()):
                token = ids[i]
                kind = kinds[token] if token < n_kinds else STREAM_NO_TOKEN
                if kind == STREAM_TOKEN or (kind == STREAM_SPECIAL and not skip_special):
                    core_append_token(self.core, token, raw)
            _lossy_utf8(raw.data(), raw.size(), out)
            return 0
        texts = self.texts.data()
        offsets = self.starts.data()
        for i in range(start, <Py_ssize_t>ids.size()):
            token = ids[i]
            kind = kinds[token] if token < n_kinds else STREAM_NO_TOKEN
            if kind == STREAM_NO_TOKEN or (kind == STREAM_SPECIAL and skip_special):
                continue
            if kind == STREAM_BYTE:
                raw.push_back(texts[offsets[token]])
                continue
            if raw.size():
                _append_byte_run(raw, out)
            out.insert(out.end(), texts + offsets[token], texts + offsets[token + 1])
        if raw.size():
            _append_byte_run(raw, out)
        for content, strip_start, strip_stop in self.strips:
            _strip(out, <bytes>content, strip_start, strip_stop)
        return 0


    def text_of(self, ids, bint skip_special_tokens=False):
        """The text of `ids` by this table (what a stream's steps compare; the tests hold it to HF's decode)."""
        cdef vector[uint32_t] checked
        cdef vector[uint8_t] raw, out
        for token in ids:
            checked.push_back(_stream_id(token))
        self.decode(checked, 0, skip_special_tokens, raw, out)
        return _utf8_text(out, 0)


def stream_token_kinds(core not None, Py_ssize_t n):
    """A StreamTokens' `kinds` for ids below `n` as a CoreBPE sees them: STREAM_TOKEN where it has the id's
    bytes, else STREAM_NO_TOKEN (the caller marks the specials, and checks the count against its own)."""
    if not isinstance(core, CoreBPE):
        raise TypeError(f"stream_token_kinds takes a CoreBPE, got {type(core).__name__}")
    cdef bytearray kinds = bytearray(n)
    cdef unsigned char* out = kinds
    cdef Py_ssize_t i
    for i in range(n):
        out[i] = STREAM_TOKEN if core_has_token(core, i) else STREAM_NO_TOKEN
    return kinds


cdef void _append_byte_run(vector[uint8_t]& run, vector[uint8_t]& out) noexcept:
    """ByteFallback's text of a run of byte tokens: its bytes where they are UTF-8, else one U+FFFD per byte;
    the run is emptied."""
    cdef Py_ssize_t before = out.size(), n = run.size(), i
    _lossy_utf8(run.data(), n, out)
    if <Py_ssize_t>out.size() - before != n or memcmp(out.data() + before, run.data(), n) != 0:
        out.resize(before)
        for i in range(n):
            out.push_back(0xEF)
            out.push_back(0xBF)
            out.push_back(0xBD)
    run.clear()


cdef void _strip(vector[uint8_t]& text, bytes content, Py_ssize_t start, Py_ssize_t stop) noexcept:
    """HF's Strip of one string: up to `start` leading and `stop` trailing `content` characters off (the
    trailing ones counted from the end of the whole string; "" where the cuts cross). On UTF-8: the bytes of
    a whole character match only at a character's boundary."""
    cdef const uint8_t* c = <const uint8_t*>PyBytes_AS_STRING(content)
    cdef Py_ssize_t width = PyBytes_GET_SIZE(content), n = text.size(), head = 0, tail = n, i
    for i in range(start):
        if n - head < width or memcmp(text.data() + head, c, width) != 0:
            break
        head += width
    for i in range(stop):
        if tail < width or memcmp(text.data() + tail - width, c, width) != 0:
            break
        tail -= width
    if head >= tail:
        text.clear()
    else:
        text.erase(text.begin() + tail, text.end())
        text.erase(text.begin(), text.begin() + head)


cdef class HFStream:
    """`tokenizers.decoders.DecodeStream`'s rule (tokenizers/src/tokenizer/mod.rs, `step_decode_stream`), kept
    exactly: the ids since the last chunk are decoded with the ids before them (the *prefix*, which makes a
    decoder that looks at a token's neighbours decode it as it would in the whole text); a chunk is what the
    decode adds to the prefix's text, given once that text is longer (in UTF-8 bytes) than the prefix's and
    does not end in U+FFFD (an incomplete character). A decode that does not start with the prefix's text is
    HF's InvalidPrefix (DecodeStreamError).

    The decode is the tokenizer's: for a bytebpe tokenizer whose decoder a `StreamTokens` runs (ByteLevel,
    or a Llama 2-style table) that, here in C; for any other, its ``decode(ids, skip_special_tokens)``. What
    a tokenizer decodes by is asked of the subclass (`_source_of(tokenizer)` -> (key, StreamTokens or None,
    decode)) at the first step with it, and again when its key (its ``_pipeline`` attribute, which a
    bytebpe tokenizer replaces when its parts change) is not the one seen then. One step at a time: a step
    begun while another is under way (another thread let in by a Python decode) is a RuntimeError.
    """
    cdef vector[uint32_t] ids           # HF's ids: those since the chunk before last
    cdef Py_ssize_t prefix_index        # ids[:prefix_index] decode to `prefix`
    cdef vector[uint8_t] prefix         # (UTF-8)
    cdef vector[uint8_t] raw, text      # scratch
    cdef readonly bint skip_special_tokens
    cdef object tokenizer, key          # the tokenizer last stepped with, and its key then
    cdef StreamTokens tokens            # what it decodes by: its StreamTokens, or
    cdef object decode_ids              # its decode(ids, skip_special_tokens)
    cdef bint stepping                  # a step is under way (its Python calls may let another thread in,
                                        # whose step would move `ids` under this one's `prefix_index`)

    def __init__(self, ids=None, skip_special_tokens=False):
        cdef object token
        self.ids.clear()
        if ids is not None:
            for token in ids:
                self.ids.push_back(_stream_id(token))
        self.skip_special_tokens = skip_special_tokens
        self.prefix_index = 0
        self.prefix.clear()
        self.tokenizer = self.key = self.tokens = self.decode_ids = None

    cdef int _decode(self, Py_ssize_t start, vector[uint8_t]& out) except -1:
        """`out` = the tokenizer's text of ids[start:], as UTF-8."""
        if self.tokens is not None:
            return self.tokens.decode(self.ids, start, self.skip_special_tokens, self.raw, out)
        window = [self.ids[i] for i in range(start, <Py_ssize_t>self.ids.size())]
        text = self.decode_ids(window, self.skip_special_tokens)
        if not isinstance(text, str):
            raise TypeError(f"the tokenizer's decode gave {type(text).__name__}, not str")
        data = (<str>text).encode("utf-8", "surrogatepass")
        out.assign(<const uint8_t*>PyBytes_AS_STRING(data), <const uint8_t*>PyBytes_AS_STRING(data) + len(data))
        return 0

    cdef int _use(self, object tokenizer) except -1:
        key, tokens, decode = (<object>self)._source_of(tokenizer)
        self.tokenizer, self.key, self.tokens, self.decode_ids = tokenizer, key, tokens, decode
        return 0

    @cython.binding(False)      # one call per id a model emits: no keywords, no binding
    def step(self, tokenizer, id):
        """The text the id (or ids) adds, or None while it is not whole."""
        if self.stepping:
            raise RuntimeError("a DecodeStream is stepped by one thread at a time (HF's: Already borrowed)")
        self.stepping = True
        try:
            chunk = self._step(tokenizer, id)
        except BaseException:
            self.stepping = False
            raise
        self.stepping = False
        return chunk

    cdef inline object _step(self, object tokenizer, object id):
        cdef Py_ssize_t before = self.ids.size(), new_index, kept = self.prefix.size()
        cdef uint32_t single = 0
        cdef list many = None
        if type(id) is int:
            single = _stream_id(id)
        else:
            many = [_stream_id(token) for token in (<object>self)._ids_of(id)]
        if tokenizer is not self.tokenizer or getattr(tokenizer, "_pipeline", None) is not self.key:
            self._use(tokenizer)
        if kept == 0 and before > 0:
            self._decode(0, self.text)
            if not _ends_in_replacement(self.text):
                self.prefix.swap(self.text)
                self.prefix_index = before
                kept = self.prefix.size()
        if many is None:
            self.ids.push_back(single)
        else:
            for token in many:
                self.ids.push_back(token)
        try:
            self._decode(0, self.text)
        except BaseException:
            self.ids.resize(before)
            raise
        if <Py_ssize_t>self.text.size() <= kept or _ends_in_replacement(self.text):
            return None
        if kept and memcmp(self.text.data(), self.prefix.data(), kept) != 0:
            raise DecodeStreamError(
                f"Invalid prefix encountered while decoding stream. Token ID: {self.ids.back()}, Expected prefix: "
                f"'{_utf8_text(self.prefix, 0)}', Actual string: '{_utf8_text(self.text, 0)}'")
        chunk = _utf8_text(self.text, kept)
        new_index = self.ids.size() - self.prefix_index
        self.ids.erase(self.ids.begin(), self.ids.begin() + self.prefix_index)
        self._decode(0, self.prefix)
        self.prefix_index = new_index
        return chunk

    def __copy__(self):
        cdef HFStream made = type(self).__new__(type(self))
        made.ids = self.ids
        made.prefix_index = self.prefix_index
        made.prefix = self.prefix
        made.skip_special_tokens = self.skip_special_tokens
        made.tokenizer, made.key, made.tokens, made.decode_ids = self.tokenizer, self.key, self.tokens, \
            self.decode_ids
        return made

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __reduce__(self):
        raise TypeError("a DecodeStream cannot be pickled")


cdef inline str _utf8_text(const vector[uint8_t]& data, Py_ssize_t start):
    return PyUnicode_DecodeUTF8(<const char*>data.data() + start, data.size() - start, "surrogatepass")


cdef inline uint32_t _stream_id(object token) except? 0xFFFFFFFF:
    """An id as HF's step takes it: an int (bools and numpy's integers too) from 0 to 2**32 - 1, else
    HF's TypeError."""
    cdef int overflow = 0
    cdef long long value = -1
    if not isinstance(token, int) and hasattr(token, "__index__"):
        token = token.__index__()
    if isinstance(token, int):
        value = PyLong_AsLongLongAndOverflow(token, &overflow)
    if overflow or value < 0 or value > 0xFFFFFFFF:
        raise TypeError(f"DecodeStream.step takes an id (an int from 0 to 2**32 - 1) or a list of them, got "
                        f"{token!r}")
    return <uint32_t>value
