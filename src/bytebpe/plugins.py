"""Encodings that other installed packages define by name, so `get_encoding("mine")` works everywhere —
in any process, after unpickling too (an encoding made this way pickles as its name).

Two ways to declare one, looked at only for a name that is not one of the seven built in:
  1. an entry point in the group ``bytebpe.encodings``, in the package's pyproject.toml:
         [project.entry-points."bytebpe.encodings"]
         mine = "mypackage.tokenizers:mine"
     The object it names is called if callable (with no arguments); the result is an `Encoding`, a path
     to a file saved by `Encoding.save`, or a dict of `Encoding(...)` keyword arguments (name, pat_str,
     mergeable_ranks, special_tokens and optionally explicit_n_vocab) — what tiktoken's constructors return.
  2. tiktoken's plugin convention, unchanged: a module in the `tiktoken_ext` namespace package with an
     ``ENCODING_CONSTRUCTORS`` dict of name -> function returning those keyword arguments (tiktoken's own
     `tiktoken_ext.openai_public` is skipped: its encodings are built in and bundled here).
The encoding's own name must be the name it is registered under: it travels by that name.
"""
from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .encoding import Encoding, load

if TYPE_CHECKING:
    import importlib.metadata

__all__ = ["ENTRY_POINT_GROUP", "PluginError", "build", "plugin_names", "unreadable_plugins"]

ENTRY_POINT_GROUP = "bytebpe.encodings"
_TIKTOKEN_BUILT_IN = "tiktoken_ext.openai_public"


class PluginError(RuntimeError):
    """A declared encoding could not be built; the message names the entry point or module."""


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    import importlib.metadata   # slow to import: only when a name is looked for among the plugins

    return {entry.name: entry for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _tiktoken_ext_constructors() -> tuple[dict[str, tuple[str, Callable[[], Any]]], list[str]]:
    """name -> (module, constructor) from the modules of the `tiktoken_ext` namespace, tiktoken's own left out,
    and what went wrong with the modules that could not be read (one broken plugin must not hide the rest)."""
    try:
        namespace = importlib.import_module("tiktoken_ext")
    except ImportError:
        return {}, []
    import pkgutil  # (only when tiktoken_ext exists)

    found: dict[str, tuple[str, Callable[[], Any]]] = {}
    problems: list[str] = []
    for module_info in pkgutil.iter_modules(namespace.__path__, "tiktoken_ext."):
        if module_info.name == _TIKTOKEN_BUILT_IN:
            continue
        try:
            module = importlib.import_module(module_info.name)
        except Exception as error:
            problems.append(f"tiktoken plugin module {module_info.name} failed to import: "
                            f"{type(error).__name__}: {error}")
            continue
        constructors = getattr(module, "ENCODING_CONSTRUCTORS", None)
        if not isinstance(constructors, Mapping):
            problems.append(f"tiktoken plugin module {module_info.name} has no ENCODING_CONSTRUCTORS dict")
            continue
        for name, constructor in constructors.items():
            found.setdefault(name, (module_info.name, constructor))
    return found, problems


def plugin_names() -> list[str]:
    """The names declared by installed packages (entry points first, then tiktoken_ext modules)."""
    names = list(_entry_points())
    names += [name for name in _tiktoken_ext_constructors()[0] if name not in names]
    return names


def unreadable_plugins() -> list[str]:
    """What is wrong with each tiktoken plugin module that could not be read (for error messages)."""
    return _tiktoken_ext_constructors()[1]


def build(name: str) -> Encoding | None:
    """The encoding an installed package declares under `name`, freshly built; None if none declares it.
    Raises PluginError if the declaration fails."""
    entry = _entry_points().get(name)
    if entry is not None:
        where = f"entry point {name!r} ({entry.value}) of group {ENTRY_POINT_GROUP!r}"
        try:
            target = entry.load()
            made = target() if callable(target) else target
        except Exception as error:
            raise PluginError(f"{where} failed: {type(error).__name__}: {error}") from error
        return _as_encoding(made, name, where)
    found = _tiktoken_ext_constructors()[0].get(name)
    if found is None:
        return None
    module, constructor = found
    where = f"ENCODING_CONSTRUCTORS[{name!r}] of {module}"
    try:
        made = constructor()
    except Exception as error:
        raise PluginError(f"{where} failed: {type(error).__name__}: {error}") from error
    return _as_encoding(made, name, where)


def _as_encoding(made: Any, name: str, where: str) -> Encoding:
    if isinstance(made, Encoding):
        encoding = made
    elif isinstance(made, (str, os.PathLike)):
        encoding = load(made)
    elif isinstance(made, Mapping):
        try:
            encoding = Encoding(**made)
        except TypeError as error:
            raise PluginError(f"{where} returned arguments Encoding does not take: {error}") from error
    else:
        raise PluginError(f"{where} gave a {type(made).__name__}; expected an Encoding, a path to a saved "
                          f"encoding, or a dict of Encoding arguments")
    if encoding.name != name:
        raise PluginError(f"{where} built an encoding named {encoding.name!r}, not {name!r}: it would not "
                          f"unpickle by name; give it the name it is registered under")
    return encoding
