"""`python evaluation.py [--payments N] [--seed S] [--as-of ISO] [--json]`

Generates the default benchmark, reconciles it in an isolated in-memory database and prints
the full and held-out reports. See core/evaluation.py and docs/benchmark.md.
"""

import sys

from core.evaluation import main

if __name__ == "__main__":
    sys.exit(main())
