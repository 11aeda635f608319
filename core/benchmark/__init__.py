"""The seeded benchmark: a Razorpay merchant's quarter with planted faults and their labels.

`generate(out_dir, payments=5000, seed=42, as_of=None)` writes the dataset files of spec
section 2 into `out_dir` and the ground truth into `out_dir/ground_truth.csv`, which the
importer never reads. See docs/benchmark.md.
"""

from core.benchmark.generator import (
    DEFAULT_AS_OF,
    DEVELOPMENT,
    GROUND_TRUTH_FILE,
    HELD_OUT,
    GeneratedBenchmark,
    generate,
    read_ground_truth,
)
from core.benchmark.world import GenerationError

__all__ = [
    "DEFAULT_AS_OF",
    "DEVELOPMENT",
    "GROUND_TRUTH_FILE",
    "HELD_OUT",
    "GeneratedBenchmark",
    "GenerationError",
    "generate",
    "read_ground_truth",
]
