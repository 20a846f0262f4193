"""bytebpe under Hugging Face: `tokenizers.Tokenizer`'s surface (`Tokenizer`, `Encoding`, `AddedToken`) for
the tokenizer.json files bytebpe serves, with HF's outputs and bytebpe's speed."""
from .encoding import Encoding
from .tokenizer import AddedToken, Tokenizer

__all__ = ["AddedToken", "Encoding", "Tokenizer"]
