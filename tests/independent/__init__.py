"""An independent conformance dataset for spec sections 2-8, written from the spec text only."""
