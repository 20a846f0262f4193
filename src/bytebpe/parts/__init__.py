"""A tokenizer's parts, HF `tokenizers`' stages: one module per stage, its variants in one table.

    normalizers.py       NORMALIZERS       text -> normalized text
    pre_tokenizers.py    PRE_TOKENIZERS    a piece -> pieces; `PreTokenizer`, the stage the encoding runs
    model.py             BPEModel          byte-level or character-level BPE on the compiled merge table
    post_processors.py   POST_PROCESSORS   the ids put around a sequence's ids
    decoders.py          DECODERS          token strings -> text

Below them: fields.py (reading the JSON), patterns.py (Oniguruma patterns on `regex` with HF's classes),
chars.py (the character predicates HF takes from Rust). hf_import.py assembles an encoding from the parts.
"""
