"""A focus file (`--focus FILE.toml`) read, its classifier trained, and the focus saved with the crawl.

    mode = "soft"          # hard | soft | rules
    blocks = true          # sub-document link scoring (soft, rules)
    tunnel = 2             # rules: off-topic pages a path may cross
    threshold = 0.5        # a page below it is off-topic
    paragraph_words = 30   # blocks: a paragraph of more words is a part of its own
    training = "DIR"       # rules: a previous crawl to learn the rules from (harvestman crawl ... --focus)
    [[topic]]
    name = "databases"
    positive = ["examples/db/*.html", "https://example.org/sql/"]   # files, globs or URLs
    negative = ["examples/other/*.html"]                            # the class "other"
    keywords = ["SQL", "transaction"]                               # optional
    target = true                                                   # false: a class rules may use

The focus is saved in DIR/focus/ (the model, as policy/textmodel.py saves it, and focus.json with
the spec, the rules and the focus file's digest): `--resume` and worker processes load it rather than
training again, so a crawl keeps one model from start to end.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvestman.crawl.parse import parse_html
from harvestman.model.config import FocusSettings
from harvestman.model.errors import ConfigError, StorageError
from harvestman.policy.focus import MODES, OTHER, Focus, FocusSpec, Rules, TopicSpec, fit_calibration
from harvestman.policy.textmodel import train
from harvestman.store.modelfiles import load_classifier, save_classifier

FOCUS_DIR = "focus"
FOCUS_JSON = "focus.json"
_KEYS = {"mode", "blocks", "tunnel", "threshold", "paragraph_words", "training", "topic"}
_TOPIC_KEYS = {"name", "positive", "negative", "keywords", "target"}
MAX_EXAMPLES = 5000  # files a focus file's globs may name, all topics together


@dataclass(frozen=True, slots=True)
class FocusFile:
    """A focus file as read: the spec, the example texts by class, a training crawl, its digest."""

    spec: FocusSpec
    examples: Mapping[str, list[str]]
    training: str
    digest: str


UrlFetcher = Callable[[list[str]], dict[str, str]]  # URLs -> their texts (HTML as served)


def _strings(value: Any, what: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{what} must be a string or a list of strings")
    return list(value)


def example_text(raw: str, name: str) -> str:
    """An example's text: an HTML page's visible text (and title), other files as they are."""
    head = raw[:2000].lower()
    if name.lower().endswith((".html", ".htm", ".xhtml")) or "<html" in head or "<body" in head:
        parsed = parse_html(raw, "http://example.invalid/", with_text=True, max_links=1)
        return f"{parsed.title} {parsed.text}"
    return raw


def _example_sources(entries: list[str], folder: Path) -> tuple[list[Path], list[str]]:
    """Files (globs expanded, relative to the focus file) and URLs of a list of examples."""
    files: list[Path] = []
    urls: list[str] = []
    for entry in entries:
        if entry.startswith(("http://", "https://")):
            urls.append(entry)
            continue
        pattern = entry if os.path.isabs(entry) else str(folder / entry)
        if glob.has_magic(pattern):
            found = sorted(glob.glob(pattern, recursive=True))
            if not found:
                raise ConfigError(f"focus example {entry!r} matches no file")
            files.extend(Path(name) for name in found if Path(name).is_file())
        else:
            path = Path(pattern)
            if not path.is_file():
                raise ConfigError(f"focus example {entry!r}: no such file ({path})")
            files.append(path)
    if len(files) > MAX_EXAMPLES:
        raise ConfigError(f"focus examples name {len(files)} files: at most {MAX_EXAMPLES}")
    return files, urls


def file_digest(raw: bytes, files: list[Path], urls: list[str]) -> str:
    """What identifies a focus file and its examples (their names, sizes and times; the URLs)."""
    digest = hashlib.sha256(raw)
    for file in sorted(set(files)):
        stat = file.stat()
        digest.update(f"\n{file.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    digest.update("\n".join(urls).encode())
    return digest.hexdigest()[:32]


def read_focus_file(path: Path, fetch_urls: UrlFetcher | None = None, *, known_digest: str = "") -> FocusFile:
    """Read and check a focus file and its examples; ConfigError says what is wrong with it.
    When its digest is `known_digest` (a saved focus came from it), the examples are not read."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read focus file {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"focus file {path} is not valid TOML: {exc}") from None
    unknown = set(data) - _KEYS
    if unknown:
        raise ConfigError(f"focus file {path}: unknown key(s) {', '.join(sorted(unknown))} "
                          f"(known: {', '.join(sorted(_KEYS))})")
    mode = data.get("mode", "soft")
    if mode not in MODES:
        raise ConfigError(f"focus file {path}: mode must be one of {', '.join(MODES)}, got {mode!r}")
    tables = data.get("topic")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(f"focus file {path} has no [[topic]] table: name at least one topic with "
                          "positive examples")
    folder = path.parent
    topics = []
    sources: dict[str, tuple[list[Path], list[str]]] = {}
    negatives: tuple[list[Path], list[str]] = ([], [])
    for index, table in enumerate(tables, 1):
        topic, positive, negative = _topic(table, index, path)
        topics.append(topic)
        sources[topic.name] = positive
        negatives[0].extend(negative[0])
        negatives[1].extend(negative[1])
    try:
        spec = FocusSpec(mode, bool(data.get("blocks", False)), data.get("tunnel", 2),
                         float(data.get("threshold", 0.5)), data.get("paragraph_words", 30), tuple(topics))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"focus file {path}: {exc}") from None
    except ConfigError as exc:
        raise ConfigError(f"focus file {path}: {exc}") from None
    if not isinstance(spec.tunnel, int) or not isinstance(spec.paragraph_words, int):
        raise ConfigError(f"focus file {path}: tunnel and paragraph_words must be whole numbers")
    training = data.get("training", "")
    if not isinstance(training, str):
        raise ConfigError(f"focus file {path}: training must be a crawl folder")
    if training and not os.path.isabs(training):
        training = str(folder / training)
    all_urls = [u for _, urls in sources.values() for u in urls] + negatives[1]
    digest = file_digest(raw, [f for files, _ in sources.values() for f in files] + negatives[0], all_urls)
    if known_digest == digest:  # the saved focus came from this very file: no need to read examples
        return FocusFile(spec, {}, training, digest)
    fetched: dict[str, str] = {}
    if all_urls:
        if fetch_urls is None:
            raise ConfigError(f"focus file {path} names example URLs: they need a fetcher")
        fetched = fetch_urls(all_urls)
    examples = _examples(path, topics, sources, negatives, fetched)
    return FocusFile(spec, examples, training, digest)


def _topic(table: dict[str, Any], index: int,
           path: Path) -> tuple[TopicSpec, tuple[list[Path], list[str]], tuple[list[Path], list[str]]]:
    """One [[topic]] table of a focus file: the topic, its positive and its negative example sources."""
    unknown = set(table) - _TOPIC_KEYS
    if unknown:
        raise ConfigError(f"focus file {path}, topic {index}: unknown key(s) {', '.join(sorted(unknown))}")
    name = table.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"focus file {path}, topic {index}: a topic needs a name")
    if "positive" not in table:
        raise ConfigError(f"focus file {path}, topic {name!r}: no positive examples")
    keywords = tuple(_strings(table.get("keywords", []), f"topic {name!r}: keywords"))
    target = table.get("target", True)
    if not isinstance(target, bool):
        raise ConfigError(f"focus file {path}, topic {name!r}: target must be true or false")
    folder = path.parent
    positive = _example_sources(_strings(table["positive"], f"topic {name!r}: positive"), folder)
    negative = _example_sources(_strings(table.get("negative", []), f"topic {name!r}: negative"), folder)
    return TopicSpec(name, target, keywords), positive, negative


def _examples(path: Path, topics: list[TopicSpec], sources: Mapping[str, tuple[list[Path], list[str]]],
              negatives: tuple[list[Path], list[str]], fetched: Mapping[str, str]) -> dict[str, list[str]]:
    """The example texts of each class (the topics', and "other" from the negatives)."""
    examples: dict[str, list[str]] = {}
    for topic in topics:
        files, urls = sources[topic.name]
        examples[topic.name] = _texts(files, urls, fetched)
        if topic.keywords:  # the keywords as one more example: words the topic's pages use
            examples[topic.name].append(" ".join(topic.keywords * 3))
        if not examples[topic.name]:
            raise ConfigError(f"focus file {path}, topic {topic.name!r}: its positive examples hold no text")
    if negatives[0] or negatives[1]:
        examples[OTHER] = _texts(*negatives, fetched)
    if len(examples) < 2:
        raise ConfigError(f"focus file {path}: a classifier needs two classes: give the topic negative "
                          "examples, or name a second topic")
    return examples


def _texts(files: list[Path], urls: list[str], fetched: Mapping[str, str]) -> list[str]:
    texts = []
    for file in files:
        try:
            raw = file.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ConfigError(f"cannot read focus example {file}: {exc.strerror or exc}") from None
        texts.append(example_text(raw, file.name))
    for url in urls:
        if url not in fetched:
            raise ConfigError(f"focus example {url} could not be fetched")
        texts.append(example_text(fetched[url], url))
    return [text for text in texts if text.strip()]


def train_focus(file: FocusFile, *, keep_off_topic: bool = False, rules: Rules | None = None) -> Focus:
    """The focus a focus file describes, its classifier trained on its examples (seconds)."""
    model = train(file.examples, balanced=True)
    calibration = fit_calibration(file.examples, file.spec.targets)
    return Focus(file.spec, model, rules, keep_off_topic, calibration)


def save_focus(focus: Focus, out_dir: Path, digest: str) -> None:
    """Keep the focus with the crawl, in DIR/focus/ (written whole, then renamed into place)."""
    folder = Path(out_dir) / FOCUS_DIR
    try:
        folder.mkdir(parents=True, exist_ok=True)
        save_classifier(focus.model, folder)
        meta = json.loads(focus.to_json())
        meta["digest"] = digest
        temporary = folder / f".{FOCUS_JSON}.{os.getpid()}"
        temporary.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        os.replace(temporary, folder / FOCUS_JSON)
    except OSError as exc:
        raise StorageError(f"cannot save the focus in {folder}: {exc.strerror or exc}") from None


def saved_focus(out_dir: Path) -> tuple[Focus, str] | None:
    """The focus saved with a crawl, and the digest of the focus file it came from; None if none."""
    folder = Path(out_dir) / FOCUS_DIR
    try:
        meta = json.loads((folder / FOCUS_JSON).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"the focus saved in {folder} cannot be read ({exc}): remove it to train again") \
            from None
    try:
        spec = FocusSpec.from_json(meta["spec"])
        rules = Rules.from_json(meta["rules"]) if meta.get("rules") else None
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"the focus saved in {folder} is damaged ({exc}): remove it to train again") \
            from None
    model = load_classifier(folder)
    a, b = meta.get("calibration") or (1.0, 0.0)
    focus = Focus(spec, model, rules, bool(meta.get("keep_off_topic", False)), (float(a), float(b)))
    return focus, str(meta.get("digest", ""))


def focus_for(settings: FocusSettings, out_dir: Path, *, resume: bool = False,
              fetch_urls: UrlFetcher | None = None) -> Focus | None:
    """The crawl's focus: none without a focus file; on `--resume`, or when the saved one came from
    the same focus file (worker processes, a second run), the one saved in `out_dir`; else trained
    now and saved there."""
    if not settings.focus_file:
        return None
    saved = saved_focus(Path(out_dir))
    if saved is not None and resume:
        saved[0].keep_off_topic = settings.keep_off_topic
        return saved[0]
    file = read_focus_file(Path(settings.focus_file), fetch_urls, known_digest=saved[1] if saved else "")
    if saved is not None and saved[1] == file.digest:
        saved[0].keep_off_topic = settings.keep_off_topic
        return saved[0]
    focus = train_focus(file, keep_off_topic=settings.keep_off_topic)
    save_focus(focus, Path(out_dir), file.digest)
    return focus
