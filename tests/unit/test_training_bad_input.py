"""Bad arguments to `bytebpe.train` are a clear ValueError or TypeError, raised before the texts are read."""
from __future__ import annotations

import pytest

import bytebpe
from bytebpe import _train
from bytebpe._core import MAX_TOKEN_ID


class Untouchable:
    """An iterable of texts that fails the test if training starts reading it."""

    def __iter__(self):
        pytest.fail("the texts were read before the arguments were checked")


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"vocab_size": 255}, ValueError, "below the minimum 256"),
        ({"vocab_size": 257, "special_tokens": ["<a>", "<b>"]}, ValueError, r"minimum 258: 256 single bytes \+ 2"),
        ({"vocab_size": 300.0}, TypeError, "vocab_size must be an int"),
        ({"vocab_size": MAX_TOKEN_ID + 2}, ValueError, "above the largest"),
        # A name is never read as a regex ("cl100k" once trained a tokenizer that encoded text as []).
        ({"pattern": "cl100k"}, ValueError, "unknown pattern name 'cl100k': known names are gpt2, "),
        ({"pattern": r"\w+|\W"}, ValueError, r"for a regex of your own, give it as pat_str="),
        ({"pattern": ""}, ValueError, "unknown pattern name ''"),
        ({"pattern": 5}, TypeError, "pattern must be a str"),
        ({"pat_str": "(unclosed"}, ValueError, "is not a valid regex"),
        ({"pat_str": ""}, ValueError, "pat_str must not be empty"),
        ({"pat_str": b"\\w+"}, TypeError, "pat_str must be a str"),
        ({"pattern": "gpt2", "pat_str": r"\w+"}, ValueError, "not both"),
        # Regexes that cut nothing out of ordinary text: nothing to learn, every text encoded as [].
        ({"pat_str": r"\d{5}"}, ValueError, r"cuts no piece out of 'hello world 123'"),
        ({"pat_str": "x*"}, ValueError, "cuts no piece"),       # only empty matches
        ({"special_tokens": ["<a>", "<a>"]}, ValueError, "listed twice"),
        ({"special_tokens": [""]}, ValueError, "empty string"),
        ({"special_tokens": [b"<a>"]}, TypeError, "special tokens are str"),
        ({"special_tokens": "<a>"}, TypeError, "list of str"),
        ({"special_tokens": {"<a>": 100}}, ValueError, "collides with the mergeable ranks 0..298"),
        ({"special_tokens": {"<a>": 300, "<b>": 300}}, ValueError, "both have id 300"),
        ({"special_tokens": {"<a>": "300"}}, TypeError, "must be an int"),
        ({"min_frequency": 0}, ValueError, "min_frequency must be an int >= 1"),
        ({"max_token_length": 0}, ValueError, "max_token_length must be None or an int >= 1"),
        ({"name": 5}, TypeError, "name must be a str"),
    ],
)
def test_bad_arguments_fail_before_any_work(options, error, message):
    arguments = {"vocab_size": 300, **options}
    with pytest.raises(error, match=message):
        bytebpe.train(Untouchable(), arguments.pop("vocab_size"), **arguments)


def test_the_unknown_pattern_error_lists_every_known_name():
    with pytest.raises(ValueError) as raised:
        bytebpe.train(Untouchable(), 300, pattern="cl100k")
    assert all(name in str(raised.value) for name in bytebpe.list_encoding_names())


@pytest.mark.parametrize("texts", ["one string", b"bytes", 42, None])
def test_texts_must_be_an_iterable_of_str(texts):
    with pytest.raises(TypeError, match="texts must be an iterable of str"):
        bytebpe.train(texts, 300)


def test_a_non_str_item_is_named_by_its_index():
    def texts():
        yield "fine"
        yield "also fine"
        yield b"bytes"

    with pytest.raises(TypeError, match=r"texts\[2\] is a bytes, not a str"):
        bytebpe.train(texts(), 300)


def test_an_error_inside_the_iterable_propagates_unchanged():
    def texts():
        yield "fine"
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        bytebpe.train(texts(), 300)


def test_compiled_trainer_checks_its_arguments():
    with pytest.raises(ValueError, match="min_frequency"):
        _train.BPETrainer(_train.PieceCounts(), 0)
    with pytest.raises(ValueError, match="max_token_length"):
        _train.BPETrainer(_train.PieceCounts(), 1, -1)
    with pytest.raises(ValueError, match="max_merges"):
        _train.BPETrainer(_train.PieceCounts()).merge(-1)
    counts = _train.PieceCounts()
    with pytest.raises(TypeError, match="pieces must be str"):
        counts.add_pieces(["ok", b"no"])
    with pytest.raises(TypeError, match="pieces must be bytes"):
        counts.add_counts({"ab": 1})
    with pytest.raises(ValueError, match="count of b'ab'"):
        counts.add_counts({b"ab": -1})
    assert len(counts) == 0   # nothing was counted by the failed calls
