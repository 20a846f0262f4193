"""tiktoken's own test suite (release 0.14.0, MIT licence: LICENSE here), its files unchanged, run against
bytebpe standing in for tiktoken: tests/integration/test_tiktoken_suite.py runs it in a process of its own
with BYTEBPE_VENDORED_SUITE=tiktoken, where this calls `bytebpe.patch_tiktoken()` before the tests import
tiktoken. Anywhere else (the main test run, whose oracle is stock tiktoken) these files are not collected."""
import os

if os.environ.get("BYTEBPE_VENDORED_SUITE") == "tiktoken":
    import bytebpe

    bytebpe.patch_tiktoken()
    import tiktoken

    assert getattr(tiktoken, "__bytebpe__", False), "tiktoken is not bytebpe here"
else:
    collect_ignore_glob = ["test_*.py"]
