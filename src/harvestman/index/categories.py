"""`harvestman classify`: categories defined by examples in a TOML file, learnt, and given to every page.

    [[category]]
    name = "course"
    examples = ["examples/course/*.html", "https://www.example.edu/cs101/"]
    negative = ["examples/other/*.html"]      # optional: pages that are none of the categories

Examples are globs of HTML files (relative to the TOML file) or URLs of pages the crawl stored. Negative
examples of every category together make one more class, OTHER: a page most like them gets no
category. The model is saved in DIR/classifier (store/modelfiles.py) for reuse (`--model`).
"""

from __future__ import annotations

import glob
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harvestman.index.features import extract_features
from harvestman.index.pages import (
    features_from_warc,
    html_text,
    pages_path,
    read_pages,
    stored_files,
    write_pages,
)
from harvestman.model.errors import ConfigError
from harvestman.model.records import PageFeatures
from harvestman.policy.textmodel import TextClassifier, cross_validated_accuracy, train
from harvestman.store.modelfiles import load_classifier, save_classifier

OTHER = "other"  # the class of the negative examples
MODEL_DIR = "classifier"
_KEYS = frozenset({"name", "examples", "negative"})


@dataclass(frozen=True, slots=True)
class Category:
    """One category of a categories file: its name and where its examples are."""

    name: str
    examples: tuple[str, ...]
    negative: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Classified:
    """What `classify_crawl` did: the pages with their categories, where they and the model went."""

    pages: tuple[PageFeatures, ...]
    path: Path
    model: TextClassifier
    model_dir: Path
    examples: int = 0
    cv_accuracy: float | None = None  # cross-validated on the examples, when trained here


def classifier_text(page: PageFeatures) -> str:
    """What a page is classified by: its URL's words, title, description, headings and text."""
    words = page.url.replace("/", " ").replace("_", " ").replace("-", " ").replace(".", " ")
    headings = " ".join(text for _, text in page.headings)
    return "\n".join((words, page.title, page.title, page.description, headings, page.text))


def _strings(path: Path, index: int, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise ConfigError(f"{path}: category {index + 1}: {key} must be a list of globs or URLs (strings)")
    return tuple(item.strip() for item in value)


def read_categories(path: Path) -> tuple[Category, ...]:
    """The categories a TOML file defines; ConfigError, saying what is wrong, for a bad file."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the categories file {path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    tables = data.get("category")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(f"{path}: no categories: write [[category]] tables with name and examples")
    unknown = sorted(set(data) - {"category"})
    if unknown:
        raise ConfigError(f"{path}: unknown table(s) {', '.join(unknown)}: only [[category]] is read")
    categories: list[Category] = []
    for index, table in enumerate(tables):
        extra = sorted(set(table) - _KEYS)
        if extra:
            raise ConfigError(f"{path}: category {index + 1}: unknown key(s) {', '.join(extra)} "
                              f"(name, examples, negative)")
        name = table.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{path}: category {index + 1} has no name")
        name = name.strip()
        if name == OTHER:
            raise ConfigError(f"{path}: {OTHER!r} is the class of negative examples: name it otherwise")
        if any(c.name == name for c in categories):
            raise ConfigError(f"{path}: category {name!r} is defined twice")
        examples = _strings(path, index, "examples", table.get("examples"))
        if not examples:
            raise ConfigError(f"{path}: category {name!r} has no examples")
        negative = _strings(path, index, "negative", table.get("negative", []))
        categories.append(Category(name, examples, negative))
    if len(categories) < 2 and not any(c.negative for c in categories):
        raise ConfigError(f"{path}: one category needs negative examples (or define two categories)")
    return tuple(categories)


def _is_url(example: str) -> bool:
    return example.startswith(("http://", "https://"))


def example_texts(patterns: Sequence[str], base: Path, crawled: dict[str, PageFeatures],
                  what: str) -> list[str]:
    """The texts of the examples `patterns` name: HTML files (globs relative to `base`) and URLs of the
    crawl; ConfigError for a glob that matches no file or a URL the crawl did not store."""
    texts: list[str] = []
    for pattern in patterns:
        if _is_url(pattern):
            known = crawled.get(pattern)
            if known is None:
                raise ConfigError(f"{what}: {pattern} is not a page of the crawl (no features stored "
                                  "for it)")
            texts.append(classifier_text(known))
            continue
        full = pattern if Path(pattern).is_absolute() else str(base / pattern)
        files = sorted(p for p in glob.glob(full, recursive=True) if Path(p).is_file())
        if not files:
            raise ConfigError(f"{what}: {pattern!r} matches no file (looked for {full})")
        for file in files:
            try:
                body = Path(file).read_bytes()
            except OSError as exc:
                raise ConfigError(f"{what}: cannot read {file}: {exc.strerror or exc}") from None
            page = extract_features(html_text(body, ""), Path(file).resolve().as_uri())
            texts.append(classifier_text(page))
    return texts


def training_set(categories: Sequence[Category], base: Path,
                 crawled: dict[str, PageFeatures]) -> dict[str, list[str]]:
    """Class -> example texts: each category's, and OTHER for all the negative examples."""
    examples = {c.name: example_texts(c.examples, base, crawled, f"category {c.name!r}") for c in categories}
    negative = [text for c in categories
                for text in example_texts(c.negative, base, crawled, f"category {c.name!r} (negative)")]
    if negative:
        examples[OTHER] = negative
    return examples


def classify_crawl(folder: Path, *, categories: Path | None = None, model: Path | None = None) -> Classified:
    """Classify every page of the crawl in `folder` (features computed from its WARC files first when
    none are stored), by a model trained on `categories` (saved in DIR/classifier) or loaded from
    `model`; the categories go into DIR/features/pages.parquet."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a crawl folder")
    if (categories is None) == (model is None):
        raise ConfigError("give either a categories file or a saved model")
    defined = read_categories(categories) if categories is not None else ()  # a bad file fails first
    if not stored_files(folder):
        features_from_warc(folder)
    pages = read_pages(folder)
    count, accuracy = 0, None
    if categories is not None:
        examples = training_set(defined, Path(categories).resolve().parent, {p.url: p for p in pages})
        classifier = train(examples)
        count = sum(map(len, examples.values()))
        accuracy = cross_validated_accuracy(examples)
        model_dir = folder / MODEL_DIR
        save_classifier(classifier, model_dir)
    else:
        assert model is not None
        model_dir = Path(model)
        classifier = load_classifier(model_dir)
    labelled = []
    for page, probs in zip(pages, classifier.predict_many([classifier_text(p) for p in pages]), strict=True):
        name = max(probs, key=probs.__getitem__)
        category = "" if name == OTHER else name
        labelled.append(replace(page, category=category, category_probability=probs[name]))
    path = pages_path(folder)
    write_pages(labelled, path)
    return Classified(tuple(labelled), path, classifier, model_dir, count, accuracy)
