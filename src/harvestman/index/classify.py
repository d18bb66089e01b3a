"""The text classifier of `harvestman classify` (seed 004's categories of pages).

Its core moved down to policy/textmodel.py, where the crawl's focus scorer (policy/focus.py) can use
it too without crawl/ importing index/ (index/ sits above crawl/); this module keeps its names.
"""

from __future__ import annotations

from harvestman.policy.textmodel import (
    FORMAT,
    MODEL_FILE,
    N_FEATURES,
    NGRAMS,
    TOKENS,
    WEIGHTS_FILE,
    TextClassifier,
    cross_validated_accuracy,
    train,
)

__all__ = [
    "FORMAT",
    "MODEL_FILE",
    "NGRAMS",
    "N_FEATURES",
    "TOKENS",
    "WEIGHTS_FILE",
    "TextClassifier",
    "cross_validated_accuracy",
    "train",
]
