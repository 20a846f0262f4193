"""bytebpe under Hugging Face: `tokenizers.Tokenizer`'s surface (`Tokenizer`, `Encoding`, `AddedToken`) for
the tokenizer.json files bytebpe serves, with HF's outputs and bytebpe's speed; and transformers' fast
tokenizers run on it (`patch_transformers`, `accelerate`, `is_accelerated`)."""
from .decode_stream import DecodeStream, DecodeStreamError
from .encoding import Encoding
from .patch import accelerate, is_accelerated, patch_transformers, unpatch_transformers
from .tokenizer import AddedToken, Tokenizer

__all__ = ["AddedToken", "DecodeStream", "DecodeStreamError", "Encoding", "Tokenizer", "accelerate", "is_accelerated", "patch_transformers",
           "unpatch_transformers"]
