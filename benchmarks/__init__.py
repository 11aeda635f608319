"""`make bench`: speed and memory measurements (prints; asserts nothing)."""
