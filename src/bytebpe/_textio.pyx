# cython: language_level=3
"""A whole text file read straight into a str.

`bytes.decode` needs the bytes and the str at once: twice a document's size at the peak, for one huge `.txt`
document. ASCII text (most code and English) is its own UTF-8 and a compact ASCII str stores exactly those
bytes, so it is read into the buffer of a new str instead: once its size.
"""

cdef extern from "Python.h":
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    void* PyUnicode_DATA(object text)


def read_ascii(file, Py_ssize_t size):
    """The next `size` bytes of the binary `file` as a str if they are all ASCII, else None (the file is then
    read up to `size` bytes further: seek back to read it otherwise). None too if the file ends early."""
    if size <= 0:
        return None     # PyUnicode_New(0) is the shared empty str, never to be written into
    # A fresh str: no other reference exists until it is returned, so filling it in place is safe.
    text = PyUnicode_New(size, 127)
    cdef unsigned char* data = <unsigned char*>PyUnicode_DATA(text)
    cdef Py_ssize_t done = 0, n, i
    cdef unsigned char seen = 0
    while done < size:
        n = file.readinto(<unsigned char[:size - done]>(data + done))
        if not n:
            return None
        for i in range(done, done + n):
            seen |= data[i]
        if seen & 0x80:
            return None
        done += n
    return text
