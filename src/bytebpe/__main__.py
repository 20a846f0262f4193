"""`python -m bytebpe`: the same as the `bytebpe` command."""
from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
