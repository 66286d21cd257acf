"""Plain `pytest --nbval` from the repository root validates the chapters as `make test` does: notebook kernels
inherit TQDM_DISABLE=1, so no progress bar is printed that the executed notebooks do not hold."""

import os

os.environ.setdefault("TQDM_DISABLE", "1")
