"""A text classifier learnt from examples: categories of pages (seed 004), and focused crawling's scorer.

It lives in policy/ (pure computation, no I/O: store/modelfiles.py saves and loads it) so that the
crawl's focus scorer (policy/focus.py) can use it without importing index/, which sits above crawl/;
index/categories.py uses it for the `classify` command.

    model = train({"course": [text, ...], "research": [text, ...]})
    model.predict_proba(text)  # {"course": 0.91, "research": 0.09}
    save_classifier(model, folder); load_classifier(folder)  # store/modelfiles.py

Hashed word features (unigrams and bigrams, no vocabulary to keep: scikit-learn's HashingVectorizer),
weighted by sublinear TF-IDF, and a multinomial logistic regression: trained in well under a second
on hundreds of pages, probabilities that sum to one. Saved as numbers (an .npz and a JSON file), not
as a pickle: loading a model runs no code, and does not depend on the scikit-learn version that
trained it (prediction is a sparse dot product here, with numpy).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harvestman.model.errors import ConfigError

N_FEATURES = 1 << 18
NGRAMS = (1, 2)
TOKENS = r"(?u)\b[^\W\d_][^\W\d_]+\b"  # words of two letters or more


def _vectorizer() -> Any:
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(n_features=N_FEATURES, ngram_range=NGRAMS, token_pattern=TOKENS,
                             alternate_sign=False, norm=None, lowercase=True)


@dataclass(frozen=True)
class TextClassifier:
    """A trained model: its classes and the weights of its linear scores."""

    classes: tuple[str, ...]
    coef: Any  # numpy (1 or len(classes), N_FEATURES): one row for two classes, as scikit-learn keeps it
    intercept: Any  # numpy (rows,)
    idf: Any  # numpy (N_FEATURES,)

    def _matrix(self, texts: Sequence[str]) -> Any:
        import numpy as np
        from sklearn.preprocessing import normalize

        counts = _vectorizer().transform(texts)
        counts.data = 1.0 + np.log(counts.data)  # sublinear TF, as TfidfTransformer did in training
        return normalize(counts.multiply(self.idf).tocsr())

    def predict_many(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """Each text's probability of each class."""
        import numpy as np

        if not texts:
            return []
        scores = np.asarray(self._matrix(texts) @ self.coef.T) + self.intercept
        if len(self.classes) == 2:
            second = 1.0 / (1.0 + np.exp(-scores[:, 0]))
            probs = np.stack([1.0 - second, second], axis=1)
        else:
            scores -= scores.max(axis=1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=1, keepdims=True)
        return [dict(zip(self.classes, map(float, row), strict=True)) for row in probs]

    def predict_proba(self, text: str) -> dict[str, float]:
        """The text's probability of each class."""
        return self.predict_many([text])[0]

    def best(self, text: str) -> tuple[str, float]:
        """The most probable class of the text, and its probability."""
        probs = self.predict_proba(text)
        name = max(probs, key=probs.__getitem__)
        return name, probs[name]


def train(examples: Mapping[str, Sequence[str]], *, balanced: bool = False,
          c: float = 10.0) -> TextClassifier:
    """A classifier of the classes in `examples` (class -> texts); ConfigError for fewer than two
    classes or a class without examples. `balanced` weighs each class alike, however many examples
    it has (focused crawling: a few positive examples against many negative ones); `c` is the inverse
    of the regularization (larger: sharper probabilities, closer fit to few examples)."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.linear_model import LogisticRegression

    if len(examples) < 2:
        raise ConfigError("a classifier needs at least two classes (or negative examples)")
    empty = [name for name, texts in examples.items() if not texts]
    if empty:
        raise ConfigError(f"no examples of {', '.join(map(repr, empty))}")
    classes = tuple(sorted(examples))
    texts = [text for name in classes for text in examples[name]]
    labels = [name for name in classes for _ in examples[name]]
    tfidf = TfidfTransformer(sublinear_tf=True)
    matrix = tfidf.fit_transform(_vectorizer().transform(texts))
    # Fit on the hashed columns the examples use: a column no example has gets a weight of 0 at the
    # optimum anyway (the L2 penalty alone acts on it), and the solver's vectors shrink from 2^18
    # weights a class to the few thousand words of the examples (seconds -> a fraction of one).
    used = np.unique(matrix.indices)
    model = LogisticRegression(C=c, max_iter=1000, class_weight="balanced" if balanced else None)
    model.fit(matrix[:, used], labels)
    assert tuple(model.classes_) == classes  # scikit-learn sorts them too
    coef = np.zeros((model.coef_.shape[0], N_FEATURES))
    coef[:, used] = model.coef_
    return TextClassifier(classes, coef, np.asarray(model.intercept_), np.asarray(tfidf.idf_))


def cross_validated_accuracy(examples: Mapping[str, Sequence[str]], folds: int = 5) -> float | None:
    """The share of examples a model trained on the other folds classifies right (stratified
    k-fold); None when a class has fewer examples than two folds need."""
    from sklearn.model_selection import StratifiedKFold

    smallest = min((len(texts) for texts in examples.values()), default=0)
    folds = min(folds, smallest)
    if len(examples) < 2 or folds < 2:
        return None
    texts = [text for name in sorted(examples) for text in examples[name]]
    labels = [name for name in sorted(examples) for _ in examples[name]]
    right = 0
    for train_at, test_at in StratifiedKFold(folds, shuffle=True, random_state=0).split(texts, labels):
        by_class: dict[str, list[str]] = {}
        for i in train_at:
            by_class.setdefault(labels[i], []).append(texts[i])
        model = train(by_class)
        for i, probs in zip(test_at, model.predict_many([texts[i] for i in test_at]), strict=True):
            right += max(probs, key=probs.__getitem__) == labels[i]
    return right / len(texts)
