"""Special tokens follow tiktoken's rules exactly, and `with_special_tokens` registers new ones.

The rules, as tiktoken states them:
  * by default (`disallowed_special="all"`) text that contains a special token is refused with a
    ValueError naming the token and pointing at `allowed_special` / `disallowed_special`;
  * a token in `allowed_special` (or every one, with `"all"`) becomes its special id;
  * a token left out of `disallowed_special` is encoded as ordinary text, so
    `encode(t, disallowed_special=()) == encode_ordinary(t)`;
  * `disallowed_special` is checked first and may name any string, special token or not.
The same rules hold for `encode_batch`, `encode_to_numpy` and `encode_batch_to_numpy`.

Stock tiktoken is the oracle wherever it defines the behaviour. It does not define which of two
overlapping special tokens wins (its choice follows hash-map order); bytebpe's rule, leftmost and then
longest, is tested on its own.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytebpe

CL100K_SPECIALS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}
IM_TOKENS = {"<|im_start|>": 100264, "<|im_end|>": 100265}   # ids in a gap of cl100k_base


@pytest.fixture(scope="module")
def enc(data_dir) -> bytebpe.Encoding:
    return bytebpe.get_encoding("cl100k_base")


@pytest.fixture(scope="module")
def tik(tiktoken_encoding):
    return tiktoken_encoding("cl100k_base")


def outcome(encode, text, **policy):
    """What `encode(text, **policy)` does: ("ids", ids) or ("raises", exception type)."""
    try:
        return ("ids", list(encode(text, **policy)))
    except ValueError as error:
        return ("raises", ValueError, str(error).split("'")[1])   # the token the message names


# ==== refused by default ==========================================================================


@pytest.mark.parametrize("token", sorted(CL100K_SPECIALS))
def test_text_containing_a_special_token_is_refused_by_default(enc, token):
    with pytest.raises(ValueError) as raised:
        enc.encode(f"some text {token} more text")
    message = str(raised.value)
    assert repr(token) in message
    assert "allowed_special" in message and "disallowed_special" in message


def test_the_refusal_names_the_leftmost_special_token_like_tiktoken(enc, tik):
    text = "a <|fim_suffix|> b <|endoftext|>"
    assert outcome(enc.encode, text) == outcome(tik.encode, text) == ("raises", ValueError, "<|fim_suffix|>")


@pytest.mark.parametrize("before", [
    "",
    "<|" * 10 + "é",            # a few places where every special token's prefix occurs: each is matched
    "<|" * 100,                 # more than _CHECK_AT_MOST: searched from the first
    "é€😀" * 50 + "<<|",        # characters of 2, 3 and 4 bytes before (character indexes from UTF-8 offsets)
    "<|endoftext",              # a prefix of a token that overlaps the next occurrence
])
@pytest.mark.parametrize("after", ["", " <|fim_prefix|> and more <|"])
def test_the_check_finds_a_token_after_any_number_of_its_prefixes_like_tiktoken(enc, tik, before, after):
    text = before + "<|endoftext|>" + after
    with pytest.raises(ValueError, match="<\\|endoftext\\|>") as ours:
        enc.encode(text)
    with pytest.raises(ValueError) as theirs:
        tik.encode(text)
    assert "'<|endoftext|>'" in str(ours.value) and "'<|endoftext|>'" in str(theirs.value)
    assert enc.encode(before + after.replace("fim_prefix", "nothing")) == tik.encode(
        before + after.replace("fim_prefix", "nothing"))
    with pytest.raises(ValueError):
        enc.encode(text, max_tokens=1)


@pytest.mark.parametrize("name", ["gpt2", "p50k_edit", "cl100k_base", "o200k_harmony"])
def test_every_special_token_of_every_encoding_is_refused_by_default(name, data_dir):
    enc = bytebpe.get_encoding(name)
    for token in enc.special_tokens_set:
        with pytest.raises(ValueError, match="disallowed special token"):
            enc.encode(f"x{token}y")


# ==== allowed_special ==============================================================================


def test_allowed_all_gives_the_special_ids(enc):
    assert enc.encode("<|endoftext|>", allowed_special="all") == [100257]
    assert enc.encode("<|fim_prefix|>x<|fim_suffix|>", allowed_special="all") == [100258, 87, 100260]


@pytest.mark.parametrize("name", ["gpt2", "p50k_edit", "cl100k_base", "o200k_harmony"])
def test_allowed_all_gives_tiktokens_ids_for_every_special_token(name, data_dir, tiktoken_encoding):
    enc, tik = bytebpe.get_encoding(name), tiktoken_encoding(name)
    specials = sorted(tik.special_tokens_set)
    text = "Hello" + " and ".join(specials) + "!"
    ids = enc.encode(text, allowed_special="all")
    assert ids == tik.encode(text, allowed_special="all")
    assert set(ids) >= {tik._special_tokens[token] for token in specials}


def test_allowing_one_token_allows_only_it(enc):
    text = "<|endoftext|> and <|fim_prefix|>"
    with pytest.raises(ValueError, match=r"<\|fim_prefix\|>"):
        enc.encode(text, allowed_special={"<|endoftext|>"})
    assert enc.encode("a<|endoftext|>", allowed_special={"<|endoftext|>"}) == [64, 100257]


def test_an_allowed_token_that_is_not_special_is_ignored_like_tiktoken(enc, tik):
    text = "x foo y"
    assert enc.encode(text, allowed_special={"foo"}) == tik.encode(text, allowed_special={"foo"}) == enc.encode_ordinary(text)


# ==== disallowed_special ===========================================================================


def test_disallowing_nothing_encodes_special_tokens_as_ordinary_text(enc, tik):
    text = "<|endoftext|> is <|fim_middle|>"
    ids = enc.encode(text, disallowed_special=())
    assert ids == enc.encode_ordinary(text) == tik.encode(text, disallowed_special=()) == tik.encode_ordinary(text)
    assert not set(ids) & set(CL100K_SPECIALS.values())


def test_a_disallowed_string_that_is_not_a_special_token_is_refused_when_present(enc, tik):
    assert outcome(enc.encode, "x foo y", disallowed_special={"foo"}) == ("raises", ValueError, "foo")
    assert outcome(tik.encode, "x foo y", disallowed_special={"foo"}) == ("raises", ValueError, "foo")
    assert enc.encode("x bar y", disallowed_special={"foo"}) == tik.encode("x bar y", disallowed_special={"foo"})


def test_special_tokens_left_out_of_an_explicit_disallowed_set_are_ordinary_text(enc, tik):
    text = "x<|endoftext|>y"
    assert enc.encode(text, disallowed_special={"foo"}) == tik.encode(text, disallowed_special={"foo"}) == enc.encode_ordinary(text)


ALL = "all"
EOT, FIM = "<|endoftext|>", "<|fim_prefix|>"
POLICIES = [
    # (allowed_special, disallowed_special)
    (set(), ALL),
    ({EOT}, ALL),
    ({EOT}, ()),
    ({EOT}, {EOT}),          # disallowed is checked first: refused
    ({EOT}, {FIM}),
    (ALL, ALL),              # "all" disallowed means all that are not allowed: nothing
    (ALL, {EOT}),            # refused
    (ALL, ()),
    ({EOT, FIM}, ALL),
    (frozenset({FIM}), ["<|endofprompt|>"]),
    (set(), ()),
]
POLICY_TEXTS = [
    "plain text",
    f"a{EOT}b",
    f"{FIM}x{EOT}",
    f"{EOT}{FIM}<|endofprompt|>",
    f"{EOT}{EOT}",
]


@pytest.mark.parametrize("allowed, disallowed", POLICIES)
@pytest.mark.parametrize("text", POLICY_TEXTS)
def test_allowed_and_disallowed_combine_as_in_tiktoken(enc, tik, text, allowed, disallowed):
    policy = {"allowed_special": allowed, "disallowed_special": disallowed}
    assert outcome(enc.encode, text, **policy) == outcome(tik.encode, text, **policy)


def test_remembered_policies_never_leak_into_one_another(data_dir, tik):
    # Each (allowed, disallowed) pair is worked out once per encoding and remembered by value. Every policy,
    # in a shuffled order, twice over, on a fresh encoding: each call must still be tiktoken's. A set the
    # caller changes after a call is read anew (it is remembered by its contents, not by the object).
    import random

    fresh = bytebpe.Encoding("cl100k_copy", pat_str=enc_pattern(), mergeable_ranks=tik._mergeable_ranks,
                             special_tokens=tik._special_tokens)
    calls = [(allowed, disallowed, text) for allowed, disallowed in POLICIES for text in POLICY_TEXTS] * 2
    random.Random(8).shuffle(calls)
    for allowed, disallowed, text in calls:
        policy = {"allowed_special": allowed, "disallowed_special": disallowed}
        assert outcome(fresh.encode, text, **policy) == outcome(tik.encode, text, **policy), (allowed, disallowed)
    allowed = {EOT}
    assert fresh.encode(f"{EOT}{FIM}", allowed_special=allowed, disallowed_special=()) == \
        tik.encode(f"{EOT}{FIM}", allowed_special={EOT}, disallowed_special=())
    allowed.add(FIM)
    assert fresh.encode(f"{EOT}{FIM}", allowed_special=allowed, disallowed_special=()) == \
        tik.encode(f"{EOT}{FIM}", allowed_special={EOT, FIM}, disallowed_special=())


def enc_pattern() -> str:
    return bytebpe.get_encoding("cl100k_base")._pat_str


# ==== where special tokens sit =====================================================================


@pytest.mark.parametrize("text", [
    "<|endoftext|>",
    "<|endoftext|>Hello",
    "Hello<|endoftext|>",
    "Hello <|endoftext|> world",
    "Hello<|endoftext|>world",
    "<|endoftext|><|endoftext|><|endoftext|>",
    "<|fim_prefix|>def f():<|fim_suffix|>\n    return 1<|fim_middle|>",
    " <|endoftext|> ",
    "\n\n<|endoftext|>\n\n",
    "日本<|endoftext|>語",
    "😀<|endofprompt|>😀",
])
def test_specials_anywhere_in_the_text_give_tiktokens_ids(enc, tik, text):
    assert enc.encode(text, allowed_special="all") == tik.encode(text, allowed_special="all")


def test_repeated_specials_give_one_id_each(enc):
    assert enc.encode("<|endoftext|>" * 3, allowed_special="all") == [100257] * 3


@pytest.mark.parametrize("text", [
    "<|endoftext",
    "endoftext|>",
    "<|endoftext|",
    "|endoftext|>",
    "<|endof<|endoftext|>",
    "<|endoftext|>|>",
    "<<|endoftext|>>",
    "<|ENDOFTEXT|>",
    "<| endoftext|>",
])
def test_partial_or_altered_special_tokens_are_ordinary_text(enc, tik, text):
    assert outcome(enc.encode, text) == outcome(tik.encode, text)
    assert enc.encode(text, allowed_special="all") == tik.encode(text, allowed_special="all")


def test_a_partial_special_token_before_a_whole_one_stays_ordinary_text(enc):
    assert enc.encode("<|endof<|endoftext|>", allowed_special="all") == enc.encode_ordinary("<|endof") + [100257]


# ==== the property, with random text ===============================================================

FRAGMENTS = [*CL100K_SPECIALS, "<|", "|>", "<", "|", ">", "endoftext", "fim_", "prefix", "<|endof", "text|>"]
texts_with_special_fragments = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=texts_with_special_fragments)
def test_disallowing_nothing_is_encode_ordinary(enc, text):
    assert enc.encode(text, disallowed_special=()) == enc.encode_ordinary(text)


@settings(max_examples=300, deadline=None)
@given(text=texts_with_special_fragments)
def test_every_policy_agrees_with_tiktoken_on_random_text(enc, tik, text):
    assert enc.encode(text, allowed_special="all") == tik.encode(text, allowed_special="all")
    assert outcome(enc.encode, text) == outcome(tik.encode, text)
    assert outcome(enc.encode, text, allowed_special={EOT}) == outcome(tik.encode, text, allowed_special={EOT})


# ==== the check the core defers to the text's UTF-8 ================================================
# With nothing allowed, `encode` and `encode_to_numpy` hand the check to the core: it searches the text's
# UTF-8 for the prefix every disallowed token shares ("<|" here) and runs the regex only where that prefix
# occurs. A token must be found wherever it sits: at either end, after many KB of multi-byte text (the core
# then works on its own UTF-8 copy, and without the GIL), after prefixes that are not tokens.

LONG_NON_ASCII = "日本語のテキスト、éàü " * 800       # ~27 KB of UTF-8, non-ASCII: a private UTF-8 copy
LONG_ASCII = "plain words and <| operators |> " * 300


@pytest.mark.parametrize("text", [
    f"{EOT}", f"{EOT}tail", f"head{EOT}", f"{LONG_NON_ASCII}{EOT}", f"{EOT}{LONG_NON_ASCII}",
    f"{LONG_ASCII}{FIM}", f"{LONG_ASCII}{LONG_NON_ASCII}<|endofprompt|>{LONG_ASCII}",
    "<" * 5000 + EOT, "<|" * 5000 + EOT, "a <| b", "ends with <", "ends with <|", "<|endoftex",
    LONG_ASCII, LONG_NON_ASCII, "\ud800 " + EOT, "\ud800 <| no token", "",
])
@pytest.mark.parametrize("method", ["encode", "encode_to_numpy"])
@pytest.mark.parametrize("engine", ["compiled", "regex"])
def test_the_deferred_check_refuses_exactly_what_tiktoken_refuses(enc, tik, text, method, engine):
    encoding = enc if engine == "compiled" else enc.with_pretokenizer("regex")
    assert outcome(getattr(encoding, method), text) == outcome(tik.encode, text)


@pytest.mark.parametrize("engine", ["compiled", "regex"])
def test_disallowed_tokens_with_no_common_prefix_are_still_found(enc, tik, engine):
    # {"foo", "<|endoftext|>"} share no prefix (an empty anchor): the core checks every text.
    encoding = enc if engine == "compiled" else enc.with_pretokenizer("regex")
    disallowed = {"foo", EOT}
    assert encoding._special_policy(set(), disallowed).deferred_check[0] == b""
    for text in (f"x{EOT}", "x foo", "plain", LONG_NON_ASCII + "foo", "foo" + LONG_ASCII, "\ud800 foo", ""):
        for method in (encoding.encode, encoding.encode_to_numpy):
            assert outcome(method, text, disallowed_special=disallowed) == \
                outcome(tik.encode, text, disallowed_special=disallowed), text


def test_a_multibyte_anchor_finds_its_tokens(enc, tik):
    # Tokens sharing a non-ASCII prefix: the anchor is the UTF-8 of "«" (2 bytes), searched byte by byte.
    guillemets = bytebpe.Encoding("guillemets", pat_str=enc_pattern(), mergeable_ranks=tik._mergeable_ranks,
                                  special_tokens={"«a»": 100300, "«bb»": 100301})
    assert guillemets._special_policy(set(), "all").deferred_check[0] == "«".encode()
    for text in ("x «a» y", LONG_NON_ASCII + "«bb»", "«bb»" + LONG_ASCII):
        with pytest.raises(ValueError, match="disallowed special token"):
            guillemets.encode(text)
        with pytest.raises(ValueError, match="disallowed special token"):
            guillemets.encode_to_numpy(text)
    for text in ("« not a token »", "«a", "a»", LONG_NON_ASCII + "«"):
        assert guillemets.encode(text) == enc.encode_ordinary(text)
        assert guillemets.encode_to_numpy(text).tolist() == enc.encode_ordinary(text)


@settings(max_examples=200, deadline=None)
@given(text=texts_with_special_fragments, padding=st.sampled_from(["", LONG_ASCII, LONG_NON_ASCII]))
def test_the_deferred_check_agrees_with_tiktoken_on_random_text(enc, tik, text, padding):
    for joined in (padding + text, text + padding):
        expected = outcome(tik.encode, joined)
        assert outcome(enc.encode, joined) == expected
        assert outcome(enc.encode_to_numpy, joined) == expected


def batch_outcome(encode_batch, texts, **policy):
    """What a batch call does: ("ids", [ids per text]) or ("raises", ValueError, the token named)."""
    try:
        return ("ids", [list(ids) for ids in encode_batch(texts, **policy)])
    except ValueError as error:
        return ("raises", ValueError, str(error).split("'")[1])


def numpy_batch_as_lists(enc):
    def encode(texts, **policy):
        ids, offsets = enc.encode_batch_to_numpy(texts, **policy)
        return [ids[offsets[i]:offsets[i + 1]] for i in range(len(texts))]
    return encode


# Big enough to be cut into chunks that two pool threads encode at once (batching.SERIAL_BATCH_CHARS).
MANY_DOCUMENTS = [f"document {i}: " + (LONG_ASCII if i % 2 else LONG_NON_ASCII[:3000]) for i in range(64)]


@pytest.mark.parametrize("bad", [[], [0], [63], [5, 40], [40, 5], [1, 2, 3], [62, 63]])
def test_a_batch_names_the_token_of_its_earliest_offending_text_like_tiktoken(enc, tik, bad):
    # The check runs in the pool's threads, chunk by chunk: whichever finishes first, the error raised must be
    # the one a serial loop meets first, as tiktoken's.
    texts = list(MANY_DOCUMENTS)
    tokens = sorted(CL100K_SPECIALS)
    for n, index in enumerate(bad):
        texts[index] = texts[index][:500] + tokens[n % len(tokens)] + texts[index][500:]
    expected = batch_outcome(tik.encode_batch, texts)
    assert batch_outcome(enc.encode_batch, texts) == expected
    assert batch_outcome(numpy_batch_as_lists(enc), texts) == expected
    assert batch_outcome(enc.with_pretokenizer("regex").encode_batch, texts) == expected


@pytest.mark.parametrize("bad", [[], [0], [63], [40, 5], [62, 63]])
def test_a_batch_with_disallowed_tokens_sharing_no_prefix_names_its_earliest_offender(enc, tik, bad):
    # No common prefix: every text of every chunk is checked before the chunk is encoded.
    disallowed = {"foo", EOT, FIM}
    texts = list(MANY_DOCUMENTS)
    for n, index in enumerate(bad):
        texts[index] = texts[index][:500] + ["foo", EOT, FIM][n % 3] + texts[index][500:]
    expected = batch_outcome(tik.encode_batch, texts, disallowed_special=disallowed)
    assert batch_outcome(enc.encode_batch, texts, disallowed_special=disallowed) == expected
    assert batch_outcome(numpy_batch_as_lists(enc), texts, disallowed_special=disallowed) == expected
    assert batch_outcome(enc.with_pretokenizer("regex").encode_batch, texts,
                         disallowed_special=disallowed) == expected


# ==== the batch and numpy variants =================================================================


def test_encode_batch_refuses_a_batch_in_which_any_text_has_a_special_token(enc, tik):
    batch = ["fine", "also fine", "not <|endoftext|> fine"]
    with pytest.raises(ValueError, match=r"<\|endoftext\|>"):
        enc.encode_batch(batch)
    with pytest.raises(ValueError):
        tik.encode_batch(batch)


@pytest.mark.parametrize("policy", [
    {"allowed_special": "all"},
    {"disallowed_special": ()},
    {"allowed_special": {EOT}, "disallowed_special": ()},
    {"allowed_special": {EOT, FIM}},
])
def test_encode_batch_applies_the_policy_to_every_text_like_tiktoken(enc, tik, policy):
    batch = ["<|endoftext|>a", "b<|fim_prefix|>c", "", "plain"]
    assert enc.encode_batch(batch, **policy) == tik.encode_batch(batch, **policy)
    assert enc.encode_batch(batch, **policy) == [enc.encode(text, **policy) for text in batch]


def test_encode_to_numpy_follows_the_same_rules(enc, tik):
    text = "x<|endoftext|>y<|fim_prefix|>"
    with pytest.raises(ValueError, match=r"<\|endoftext\|>"):
        enc.encode_to_numpy(text)
    with pytest.raises(ValueError, match=r"<\|fim_prefix\|>"):
        enc.encode_to_numpy(text, allowed_special={EOT})
    for policy in [{"allowed_special": "all"}, {"disallowed_special": ()}, {"allowed_special": {EOT}, "disallowed_special": ()}]:
        ids = enc.encode_to_numpy(text, **policy)
        assert ids.dtype == np.uint32
        assert ids.tolist() == tik.encode_to_numpy(text, **policy).tolist() == enc.encode(text, **policy)


def test_encode_batch_to_numpy_follows_the_same_rules_and_returns_flat_ids_with_offsets(enc):
    batch = ["<|endoftext|>a", "", "b<|fim_prefix|>c", "plain text"]
    with pytest.raises(ValueError, match=r"<\|endoftext\|>"):
        enc.encode_batch_to_numpy(batch)
    with pytest.raises(ValueError, match=r"<\|fim_prefix\|>"):
        enc.encode_batch_to_numpy(batch, allowed_special={EOT})
    for policy in [{"allowed_special": "all"}, {"disallowed_special": ()}, {"allowed_special": {FIM}, "disallowed_special": ()}]:
        ids, offsets = enc.encode_batch_to_numpy(batch, **policy)
        assert ids.dtype == np.uint32 and offsets.dtype == np.int64
        assert len(offsets) == len(batch) + 1 and offsets[0] == 0 and offsets[-1] == len(ids)
        per_text = [ids[offsets[i]:offsets[i + 1]].tolist() for i in range(len(batch))]
        assert per_text == [enc.encode(text, **policy) for text in batch]


# ==== what each special id decodes to ==============================================================


@pytest.mark.parametrize("name", ["gpt2", "p50k_edit", "cl100k_base", "o200k_harmony"])
def test_every_special_id_decodes_to_the_text_tiktoken_gives_it(name, data_dir, tiktoken_encoding):
    # o200k_harmony gives id 200018 two names, "<|endofprompt|>" and "<|reserved_200018|>".
    enc, tik = bytebpe.get_encoding(name), tiktoken_encoding(name)
    ids = sorted(set(tik._special_tokens.values()))
    assert [enc.decode_single_token_bytes(token) for token in ids] == [tik.decode_single_token_bytes(token) for token in ids]
    assert enc.decode(ids) == tik.decode(ids)


# ==== registering new special tokens ===============================================================


@pytest.fixture(scope="module")
def im(enc) -> bytebpe.Encoding:
    return enc.with_special_tokens(IM_TOKENS, name="cl100k_im")


@pytest.fixture(scope="module")
def tik_im(tik):
    import tiktoken

    return tiktoken.Encoding(
        "cl100k_im", pat_str=tik._pat_str, mergeable_ranks=tik._mergeable_ranks,
        special_tokens={**tik._special_tokens, **IM_TOKENS})


def test_with_special_tokens_makes_a_new_encoding_that_shares_the_merge_table(enc, im):
    assert im is not enc and isinstance(im, bytebpe.Encoding)
    assert im.name == "cl100k_im"
    assert im._table is enc._table
    assert im.special_tokens_set == set(CL100K_SPECIALS) | set(IM_TOKENS)


def test_with_special_tokens_leaves_the_original_unchanged(enc, im):
    assert enc.special_tokens_set == set(CL100K_SPECIALS)
    assert enc.encode("<|im_start|>") == enc.encode_ordinary("<|im_start|>")
    assert enc.encode("<|im_start|>", allowed_special="all") == enc.encode_ordinary("<|im_start|>")
    with pytest.raises(KeyError):
        enc.decode([100264])
    assert bytebpe.get_encoding("cl100k_base") is enc


def test_registered_tokens_encode_with_allowed_special_and_decode(im):
    ids = im.encode("<|im_start|>user\nhi<|im_end|>", allowed_special="all")
    assert ids[0] == 100264 and ids[-1] == 100265
    assert im.decode(ids) == "<|im_start|>user\nhi<|im_end|>"
    assert im.encode_single_token("<|im_end|>") == 100265
    assert im.is_special_token(100264)
    with pytest.raises(ValueError, match=r"<\|im_start\|>"):
        im.encode("<|im_start|>")


@pytest.mark.parametrize("text", [
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|endoftext|>",
    "no specials at all",
    "<|im_start|><|im_start|><|im_end|>",
    "<|im_start",
])
def test_registered_tokens_behave_as_in_tiktoken_built_with_them(im, tik_im, text):
    assert im.encode(text, allowed_special="all") == tik_im.encode(text, allowed_special="all")
    assert im.encode(text, disallowed_special=()) == tik_im.encode(text, disallowed_special=())
    assert outcome(im.encode, text) == outcome(tik_im.encode, text)
    assert outcome(im.encode, text, allowed_special={"<|im_end|>"}) == outcome(tik_im.encode, text, allowed_special={"<|im_end|>"})
    ids = tik_im.encode(text, allowed_special="all")
    assert im.decode(ids) == tik_im.decode(ids)


def test_a_derived_encoding_describes_itself_like_tiktoken(im, tik_im):
    assert im.special_tokens_set == tik_im.special_tokens_set
    assert (im.n_vocab, im.max_token_value, im.eot_token) == (tik_im.n_vocab, tik_im.max_token_value, tik_im.eot_token)
    assert repr(im) == repr(tik_im)


@pytest.mark.parametrize("new_tokens, why", [
    ({"": 100264}, "empty"),
    ({"<|x|>": 100}, "id 100 is the mergeable token b'\\xa7'"),
    ({"<|x|>": 100257}, "id of <|endoftext|>"),
    ({"<|endoftext|>": 100264}, "<|endoftext|> already has id 100257"),
    ({"<|x|>": 100264, "<|y|>": 100264}, "two new tokens, one id"),
])
def test_with_special_tokens_refuses_a_clashing_token(enc, new_tokens, why):
    with pytest.raises(ValueError):
        enc.with_special_tokens(new_tokens)
    assert enc.special_tokens_set == set(CL100K_SPECIALS)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_harmony"])
def test_registering_an_encodings_own_special_tokens_again_changes_nothing(name, data_dir):
    enc = bytebpe.get_encoding(name)
    same = enc.with_special_tokens(dict(enc.special_tokens))
    assert same.special_tokens == enc.special_tokens


# ==== overlapping special tokens ===================================================================


@pytest.fixture(scope="module")
def overlapping(enc) -> bytebpe.Encoding:
    # "<|a|>" is a prefix of "<|a|>b"; "]]B[[" overlaps the end of "[[A]]".
    return enc.with_special_tokens({"<|a|>": 100264, "<|a|>b": 100265, "[[A]]": 100266, "]]B[[": 100267})


def test_of_specials_starting_at_one_place_the_longest_wins(overlapping):
    assert overlapping.encode("x<|a|>b<|a|>c", allowed_special="all") == [87, 100265, 100264, 66]


def test_of_overlapping_specials_the_leftmost_wins(overlapping):
    # "[[A]]" starts first, so "]]B[[" (which starts inside it) is not a token here; "B[[" is ordinary.
    assert overlapping.encode("[[A]]B[[", allowed_special="all") == [100266] + overlapping.encode_ordinary("B[[")
    assert overlapping.encode("]]B[[A]]", allowed_special="all") == [100267] + overlapping.encode_ordinary("A]]")


def test_only_allowed_specials_compete_for_a_place(overlapping):
    assert overlapping.encode("<|a|>b", allowed_special={"<|a|>"}, disallowed_special=()) == [100264, 65]
    assert overlapping.encode("<|a|>c", allowed_special={"<|a|>b"}, disallowed_special=()) == overlapping.encode_ordinary("<|a|>c")
    with pytest.raises(ValueError):
        overlapping.encode("<|a|>b", allowed_special={"<|a|>"})


# ---- the search for special tokens: a trie, leftmost and then longest ----------------------------------------

MANY_TOKENS = frozenset(["<s>", "</s>", "<unk>", "[INST]", "[/INST]", "<|a|>", "<|ab|>", "<|a", "x", "xy", "xyz"]
                        + [f"<SPECIAL_{i}>" for i in range(1000)])


def leftmost_longest_split(tokens: frozenset[str], text: str) -> list[str]:
    """The text and the tokens found in it, alternately: at each position the longest token that starts there,
    the search going on after it (written out by hand, as the definition)."""
    parts, last, at = [], 0, 0
    while at < len(text):
        found = max((token for token in tokens if text.startswith(token, at)), key=len, default=None)
        if found is None:
            at += 1
            continue
        parts += [text[last:at], found]
        at = last = at + len(found)
    return parts + [text[last:]]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.one_of(st.sampled_from(sorted(MANY_TOKENS)), st.text("<>|/[]abxyzSPECIAL_019 ", max_size=6)),
                max_size=12).map("".join))
def test_the_token_search_finds_the_leftmost_then_longest_token_among_many(text):
    from bytebpe.encoding import _special_token_regex

    assert _special_token_regex(MANY_TOKENS).split(text) == leftmost_longest_split(MANY_TOKENS, text)


def test_the_token_search_copes_with_tokens_that_are_prefixes_thousands_deep():
    from bytebpe.encoding import _special_token_regex

    nested = frozenset("a" * k for k in range(1, 3000))
    assert _special_token_regex(nested).search("b" + "a" * 5000).group() == "a" * 2999
    assert _special_token_regex(frozenset(["q" * 20000])).search("q" * 20001).span() == (0, 20000)
