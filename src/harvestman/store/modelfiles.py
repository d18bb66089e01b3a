"""A trained text classifier (policy/textmodel.py) in a folder: saved as numbers (model.json and
weights.npz), never a pickle, so that loading a model runs no code."""

from __future__ import annotations

import json
from pathlib import Path

from harvestman.model.errors import ConfigError, StorageError
from harvestman.policy.textmodel import N_FEATURES, NGRAMS, TOKENS, TextClassifier

FORMAT = 1  # the saved model's format version
MODEL_FILE = "model.json"
WEIGHTS_FILE = "weights.npz"


def save_classifier(model: TextClassifier, folder: Path) -> None:
    """Write `model` to `folder` (model.json and weights.npz); StorageError when it cannot."""
    import numpy as np

    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(folder / WEIGHTS_FILE, coef=model.coef, intercept=model.intercept, idf=model.idf)
        meta = {"format": FORMAT, "classes": list(model.classes), "n_features": N_FEATURES,
                "ngrams": list(NGRAMS), "tokens": TOKENS}
        (folder / MODEL_FILE).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise StorageError(f"cannot save the model in {folder}: {exc.strerror or exc}") from None


def load_classifier(folder: Path) -> TextClassifier:
    """Read a model `save_classifier` wrote; ConfigError when `folder` holds none, or one of another
    version, or a damaged one."""
    import numpy as np

    folder = Path(folder)
    try:
        meta = json.loads((folder / MODEL_FILE).read_text(encoding="utf-8"))
        with np.load(folder / WEIGHTS_FILE, allow_pickle=False) as weights:
            coef, intercept, idf = weights["coef"], weights["intercept"], weights["idf"]
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"{folder} holds no classifier model ({MODEL_FILE} and {WEIGHTS_FILE}): "
                          f"{exc}") from None
    if meta.get("format") != FORMAT or meta.get("n_features") != N_FEATURES \
            or meta.get("tokens") != TOKENS or tuple(meta.get("ngrams", ())) != NGRAMS:
        raise ConfigError(f"the model in {folder} was saved by another version: train it again")
    classes = tuple(meta["classes"])
    if coef.shape != ((1 if len(classes) == 2 else len(classes)), N_FEATURES):
        raise ConfigError(f"the model in {folder} is damaged (weights of the wrong shape)")
    return TextClassifier(classes, coef, intercept, idf)
