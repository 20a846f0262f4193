"""Reading a tokenizer.json's objects: each field checked for its type, an error naming the component."""
from __future__ import annotations

from typing import Any

from ..file_formats import TokenizerJsonError

__all__ = ["field", "kind_of"]


def field(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], component: str, default: Any = None) -> Any:
    """`obj[key]` (or `default` when it is absent), which must be of `kind` (a bool is not an int)."""
    value = obj.get(key, default)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        shown = repr(value) if len(repr(value)) <= 80 else f"a {type(value).__name__}"
        raise TokenizerJsonError(f"{component}: {key!r} must be {getattr(kind, '__name__', kind)}, got {shown}")
    return value


def kind_of(spec: Any, stage: str) -> str:
    """The "type" of a stage's object (a normalizer, a pre-tokenizer, ...), checked to be a str."""
    if not isinstance(spec, dict):
        raise TokenizerJsonError(f"{stage} must be an object or null, got {type(spec).__name__}")
    kind = spec.get("type")
    if not isinstance(kind, str):
        raise TokenizerJsonError(f"{stage}: 'type' must be a string, got {str(kind)[:40]!r}")
    return kind
