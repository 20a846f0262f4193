"""The package's shape: modules in layers, imports going one way, every dependency in a module's header.

Read from the source files (Python and Cython), so a cycle hidden in a function body is found too. A new
module must be given a layer here; an import that goes up a layer, or one inside a function, fails with the
file and line to change. (Imports of optional third-party packages — numpy where needed, pyarrow, Ray,
urllib, hashlib — are not the package's and may stay where they are used.)
"""
from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import bytebpe

CHECKOUT = Path(__file__).resolve().parents[2]
# The sources: the checkout's (the Cython files are not installed), else the installed package's.
PACKAGE = CHECKOUT / "src" / "bytebpe" if (CHECKOUT / "src" / "bytebpe").is_dir() else Path(bytebpe.__file__).parent

# Lowest first. A module may import modules of its own layer or below, never above.
LAYERS: list[tuple[str, set[str]]] = [
    ("formats, tables and the compiled core: no Encoding, no network", {
        "_version", "_bundled_digests", "_core", "_decode_streams", "_load", "_pretokenize", "_textio", "_train", "_reference",
        "atomic_write", "batching", "budgets", "bundled", "encoded_documents", "file_formats", "hf_json", "interrupts",
        "models", "pattern_compiler", "patterns", "pretokenizer", "progress", "readers", "serialization",
        "parts", "parts._char_tables", "parts.chars", "parts.fields", "parts.patterns", "parts.normalizers", "parts.pre_tokenizers",
        "parts.model", "parts.post_processors", "parts.decoders", "sentencepiece_model",
        "tokens", "tokens.arrays", "unstable", "vocab_io"}),
    ("the encoding", {"encoding"}),
    ("names and sources: the registry, plugins, downloads and caches", {
        "plugins", "registry", "tiktoken_cache", "vocab_sources"}),
    ("importers and training", {"hf_import", "model_files", "piece_counts", "tokenizer_files", "training"}),
    ("other libraries' surfaces: bytebpe.hf", {"hf", "hf.encoding", "hf.processing", "hf.tokenizer", "hf.patch", "hf.decode_stream"}),
    ("under code that imports tiktoken", {"tiktoken_patch"}),
    ("dataset pipelines and engines", {"compare", "datasets", "ray", "tokens.layout", "tokens.writer"}),
    ("the command line and the package's front", {"__init__", "__main__", "bench", "cli"}),
]
LAYER_OF = {module: index for index, (_, modules) in enumerate(LAYERS) for module in modules}

_CYTHON_IMPORT = re.compile(
    r"^([ \t]*)(?:from\s+(?:bytebpe)?\.?(\w*)\s+c?import\s+([\w ,]+)|c?import\s+bytebpe\.(\w+))", re.M)


def package_modules() -> dict[str, list[Path]]:
    """Module name -> its source files (a Cython module: its .pyx and .pxd); a subpackage's modules are named
    "package.module", its __init__ by the package's name."""
    found: dict[str, list[Path]] = {}
    for path in sorted(PACKAGE.iterdir()):
        if path.suffix in (".py", ".pyx"):
            found.setdefault(path.stem, []).append(path)
        elif path.is_dir() and (path / "__init__.py").is_file():
            for inner in sorted(path.glob("*.py")):
                name = path.name if inner.stem == "__init__" else f"{path.name}.{inner.stem}"
                found.setdefault(name, []).append(inner)
    for name, paths in found.items():
        if paths[0].suffix == ".pyx" and paths[0].with_suffix(".pxd").is_file():
            paths.append(paths[0].with_suffix(".pxd"))
    return found


def imports_of(name: str, path: Path, modules: set[str]) -> list[tuple[str, int, bool]]:
    """(imported module, line, inside a function) for each import of another package module, leaving out
    those under ``if TYPE_CHECKING:``."""
    text = path.read_text(encoding="utf-8")
    found: list[tuple[str, int, bool]] = []
    if path.suffix != ".py":
        for match in _CYTHON_IMPORT.finditer(text):
            indent, module, names, dotted = match.groups()
            line = text.count("\n", 0, match.start()) + 1
            for target in [dotted] if dotted else [module] if module else [n.strip() for n in names.split(",")]:
                if target in modules and target != name:
                    found.append((target, line, bool(indent)))
        return found
    tree = ast.parse(text)
    type_only = {id(node) for branch in ast.walk(tree) if isinstance(branch, ast.If)
                 and "TYPE_CHECKING" in ast.unparse(branch.test) for node in ast.walk(branch)}
    in_function = {id(node) for function in ast.walk(tree)
                   if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) for node in ast.walk(function)}
    for node in ast.walk(tree):
        if id(node) in type_only or not isinstance(node, ast.ImportFrom):
            continue
        # The imported module's dotted name inside the package: relative to the importing module's package.
        package = [] if name == "__init__" else name.split(".")[:-1] if path.name != "__init__.py" else name.split(".")
        if node.level >= 1 and node.level - 1 <= len(package):
            base = package[:len(package) - (node.level - 1)]
            dotted = ".".join(base + ((node.module or "").split(".") if node.module else []))
        elif node.level == 0 and (node.module or "").startswith("bytebpe"):
            dotted = ".".join((node.module or "").split(".")[1:])
        else:
            continue
        for alias in node.names:
            # `from .tokens import layout` imports the module tokens.layout; `from .x import f`, module x.
            target = f"{dotted}.{alias.name}" if f"{dotted}.{alias.name}".lstrip(".") in modules else dotted
            target = target.lstrip(".") or alias.name
            if target in modules and target != name:
                found.append((target, node.lineno, id(node) in in_function))
    return found


def import_graph() -> dict[str, list[tuple[str, int, bool]]]:
    modules = package_modules()
    return {name: [edge for path in paths for edge in imports_of(name, path, set(modules))]
            for name, paths in modules.items()}


def test_every_module_has_a_layer():
    missing = sorted(set(package_modules()) - set(LAYER_OF))
    assert not missing, f"give these modules a layer in tests/unit/test_layers.py: {missing}"


def test_imports_never_go_up_a_layer():
    upward = [f"{name} (layer {LAYER_OF[name] + 1}) imports {target} (layer {LAYER_OF[target] + 1}) at line {line}"
              for name, edges in import_graph().items() for target, line, _ in edges
              if LAYER_OF.get(target, -1) > LAYER_OF.get(name, len(LAYERS))]
    assert not upward, "\n".join(upward)


def test_no_import_cycle_even_through_function_bodies():
    graph = {name: sorted({target for target, _, _ in edges}) for name, edges in import_graph().items()}
    state: dict[str, int] = {}      # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for target in graph.get(name, []):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[name] = 2
        return None

    for name in graph:
        if name not in state and (cycle := visit(name)):
            raise AssertionError("import cycle: " + " -> ".join(cycle))


def test_the_package_imports_its_own_modules_in_module_headers_only():
    local = [f"{name} line {line} imports {target} inside a function"
             for name, edges in import_graph().items() for target, line, inside in edges if inside]
    assert not local, "\n".join(local)


def test_the_version_is_pyprojects():
    pyproject = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["version"] == bytebpe.__version__


def test_the_checker_sees_a_cycle_and_an_upward_import(tmp_path):
    # The rules above would pass on a checker that reads nothing: it must find what a planted file holds.
    planted = tmp_path / "planted.py"
    planted.write_text("from .cli import main\n\ndef f():\n    from .registry import get_encoding\n")
    edges = imports_of("planted", planted, {"cli", "registry"})
    assert edges == [("cli", 1, False), ("registry", 4, True)]
    cython = tmp_path / "planted.pyx"
    cython.write_text("from bytebpe._pretokenize cimport Scanner\ndef f():\n    from bytebpe import pattern_compiler\n")
    assert imports_of("planted", cython, {"_pretokenize", "pattern_compiler"}) == [
        ("_pretokenize", 1, False), ("pattern_compiler", 3, True)]
