"""Focused crawling (seed 004): a page's relevance to the crawl's topics, and what its links are worth.

Modes:
- hard: a page whose relevance is below `threshold` is off-topic: its links are not followed (and it
  is stored only with keep_off_topic). The crawl's ordering is left as configured (bfs by default).
- soft: every link inherits its page's relevance as its score; the frontier leases the best first.
- rules: pages fall into classes (the classifier's: the topics, the non-target topics, "other");
  rules learnt from a training crawl say what a page of each class is worth as a way to target
  pages within `tunnel` + 1 links through off-topic pages (the target pages along its paths,
  discounted by distance: Rules.learn_paths), and a link's score is its page's class's worth.
  Without a training crawl, a prior chained per link. A path may cross at most `tunnel` off-topic
  pages in a row: a page further from the topic has its links dropped.
- blocks (with soft or rules): each part of the page (policy/blocks.py) is classified, and a link
  gets its part's score. Links in frames get the score their frameset page inherited (the seed's
  "grandparent's score": a frameset has no text of its own to judge).

Rules mode carries a path's off-topic streak in its links' scores (`pack`): the frontier keeps it
with the URL, so that it survives `--resume` and worker processes, and it barely changes the order.
Pure computation (the classifier's dot products, a parse for blocks): no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harvestman.model.errors import ConfigError
from harvestman.model.records import CrawledPage, LinkKind
from harvestman.policy.blocks import PARAGRAPH_WORDS, link_key, split_blocks
from harvestman.policy.textmodel import TextClassifier

MODES = ("hard", "soft", "rules")
OTHER = "other"  # the class of the negative examples
MAX_TUNNEL = 50
MAX_TEXT = 100_000  # characters of a page's (or part's) text classified
FRAMES = frozenset({LinkKind.FRAME, LinkKind.IFRAME})
PATH_STARTS = 500  # rules learnt along paths: pages of each class whose paths are followed
PATH_PAGES = 2000  # and pages seen from each, at most (the learning stays in seconds on large crawls)
SHARPEN = 4  # rules: class probabilities raised to at least this power (renormalized) before weighing reaches


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """One `[[topic]]` of a focus file: a class of pages, a target of the crawl unless `target` is false."""

    name: str
    target: bool = True
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FocusSpec:
    """What a focus file asks for (its examples aside: they train the model)."""

    mode: str = "soft"
    blocks: bool = False
    tunnel: int = 2
    threshold: float = 0.5
    paragraph_words: int = PARAGRAPH_WORDS
    topics: tuple[TopicSpec, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"focus mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not 0 <= self.tunnel <= MAX_TUNNEL:
            raise ConfigError(f"focus tunnel must be between 0 and {MAX_TUNNEL}, got {self.tunnel!r}")
        if not 0.0 <= self.threshold <= 1.0:
            raise ConfigError(f"focus threshold must be between 0 and 1, got {self.threshold!r}")
        if self.paragraph_words < 0:
            raise ConfigError(f"focus paragraph_words must be >= 0, got {self.paragraph_words!r}")
        if not self.targets:
            raise ConfigError("a focus needs at least one [[topic]] that is a target")
        names = [topic.name for topic in self.topics]
        if len(set(names)) != len(names) or OTHER in names:
            raise ConfigError(f"focus topics need distinct names, none of them {OTHER!r}")

    @property
    def targets(self) -> tuple[str, ...]:
        """The names of the topics the crawl is after."""
        return tuple(topic.name for topic in self.topics if topic.target)

    def to_json(self) -> dict[str, Any]:
        """The spec as a JSON object (saved with the crawl's model)."""
        return {"mode": self.mode, "blocks": self.blocks, "tunnel": self.tunnel, "threshold": self.threshold,
                "paragraph_words": self.paragraph_words,
                "topics": [{"name": t.name, "target": t.target, "keywords": list(t.keywords)}
                           for t in self.topics]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FocusSpec:
        """The spec `to_json` wrote."""
        topics = tuple(TopicSpec(t["name"], bool(t["target"]), tuple(t["keywords"])) for t in data["topics"])
        return cls(data["mode"], bool(data["blocks"]), int(data["tunnel"]), float(data["threshold"]),
                   int(data["paragraph_words"]), topics)


def pack(score: float, streak: int) -> float:
    """A rules-mode link score carrying its path's off-topic streak in digits that barely order.

    The score keeps 4 decimals; the streak (0..99) takes the next three, larger for a shorter streak
    (so that, of two equal scores, the link nearer the topic goes first)."""
    base = math.floor(min(max(score, 0.0), 0.9999) * 1e4) / 1e4
    return base + (100 - min(max(streak, 0), 99)) * 1e-7


def unpack(score: float) -> tuple[float, int]:
    """The (score, streak) `pack` made; a score it did not make (a seed's 1.0) has streak 0."""
    scaled = score * 1e4
    whole = math.floor(scaled + 1e-6)
    mark = round((scaled - whole) * 1e3)
    if mark <= 0 or mark > 100:
        return score, 0
    return whole / 1e4, 100 - mark


@dataclass(frozen=True, slots=True)
class Rules:
    """How likely a page of one class leads to a page of another: `odds[a][b]`. Per link (`learn`,
    the seed's rules: the share of A's links that go to a B page, a distribution over B) or per
    path (`learn_paths`: the worth of an A page as a way to B pages, the chains counted already)."""

    classes: tuple[str, ...]
    odds: Mapping[str, Mapping[str, float]]
    links: int = 0  # the links they were learnt from (0: a prior, no training crawl)
    paths: bool = False

    @classmethod
    def learn(cls, transitions: Iterable[tuple[str, str]], classes: Collection[str],
              smoothing: float = 0.5) -> Rules:
        """Rules from (class of a page, class of a page it links to) pairs, Laplace-smoothed."""
        names = tuple(sorted(classes))
        counts = {a: dict.fromkeys(names, 0.0) for a in names}
        seen = 0
        for a, b in transitions:
            if a in counts and b in counts[a]:
                counts[a][b] += 1
                seen += 1
        odds = {}
        for a in names:
            total = sum(counts[a].values()) + smoothing * len(names)
            odds[a] = {b: (counts[a][b] + smoothing) / total for b in names}
        return cls(names, odds, seen)

    @classmethod
    def learn_paths(cls, graph: Mapping[str, Collection[str]], page_classes: Mapping[str, str],
                    classes: Collection[str], targets: Collection[str], tunnel: int,
                    discount: float = 0.5) -> Rules:
        """Rules from a training crawl's link graph as paths (a crawler's future reward, as in
        Rennie and McCallum's reinforcement-learning spider): a page's worth is the number of target
        pages within `tunnel` + 1 links of it through off-topic pages, each weighed by `discount` to
        the power of its distance less one; a class's worth, the mean of its pages', scaled so that
        the best class has 1. odds[a][t]: the worth of class a towards target t.

        Per link, a page that lists sites of every topic (a hub of release notes) looks no better a
        way to the target than any page, its links going mostly to other topics, and chains of such
        odds fade at each step; counted along the paths the crawl would take, the target sites it
        opens (and the pages behind their front pages) count for it."""
        names = tuple(sorted(classes))
        wanted = {t for t in targets if t in names}
        worth: dict[str, dict[str, float]] = {a: dict.fromkeys(names, 0.0) for a in names}
        count = dict.fromkeys(names, 0)
        links = 0
        for start, own in page_classes.items():
            # A large training crawl: its first PATH_STARTS pages of each class are sample enough.
            if own not in count or count[own] >= PATH_STARTS:
                continue
            count[own] += 1
            found: dict[str, float] = {}
            seen = {start}
            frontier = [start]
            for distance in range(tunnel + 1):
                weight = discount ** distance
                step = []
                for page in frontier:
                    if len(seen) > PATH_PAGES:  # a dense graph: the nearest pages are what counts
                        break
                    for target in graph.get(page, ()):
                        links += distance == 0
                        if target in seen or target not in page_classes:
                            continue
                        seen.add(target)
                        kind = page_classes[target]
                        if kind in wanted:  # a target page ends the path: its worth is its own
                            found[kind] = found.get(kind, 0.0) + weight
                        else:
                            step.append(target)
                frontier = step
            for kind, value in found.items():
                worth[own][kind] += value
        means = {a: {t: worth[a][t] / count[a] if count[a] else 0.0 for t in names} for a in names}
        top = max((sum(means[a][t] for t in wanted) for a in names), default=0.0) or 1.0
        odds = {a: {t: means[a][t] / top for t in names} for a in names}
        return cls(names, odds, links, paths=True)

    @classmethod
    def prior(cls, classes: Collection[str], targets: Collection[str]) -> Rules:
        """Rules before any training crawl: topical locality (a page links mostly to its own class)."""
        names = tuple(sorted(classes))
        own = 0.6
        odds = {a: {b: own if a == b else (1 - own) / max(1, len(names) - 1) for b in names} for a in names}
        return cls(names, odds, 0)

    def reach(self, targets: Collection[str], tunnel: int) -> dict[str, float]:
        """For each class, the likelihood of its likeliest chain of rules to a target within `tunnel`
        + 1 links through off-topic classes: A -> T, or A -> B -> T (the product of the rules' odds),
        and so on. The likeliest chain, not the sum over chains: summed, every class reaches a target
        by some path after a few links, and the classes that lead there (hubs) no longer stand out."""
        wanted = set(targets)
        direct = {a: sum(p for b, p in self.odds[a].items() if b in wanted) for a in self.classes}
        if self.paths:  # learnt along the paths: the chains are in the odds already
            return {a: min(1.0, value) for a, value in direct.items()}
        reach = dict(direct)
        for _ in range(tunnel):
            reach = {a: max([direct[a]] + [p * reach[b] for b, p in self.odds[a].items() if b not in wanted])
                     for a in self.classes}
        return reach

    def to_json(self) -> dict[str, Any]:
        """The rules as a JSON object."""
        return {"classes": list(self.classes), "odds": {a: dict(row) for a, row in self.odds.items()},
                "links": self.links, "paths": self.paths}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Rules:
        """The rules `to_json` wrote."""
        return cls(tuple(data["classes"]), {a: dict(row) for a, row in data["odds"].items()},
                   int(data.get("links", 0)), bool(data.get("paths", False)))

    def describe(self, targets: Collection[str]) -> list[str]:
        """The rules as lines, such as "class A -> target T: p" (the strongest first)."""
        lines = [(p, f"{a} -> {b}: {p:.3f}") for a in self.classes for b, p in self.odds[a].items()
                 if b in targets]
        return [line for _, line in sorted(lines, reverse=True)]


@dataclass(frozen=True, slots=True)
class PageFocus:
    """What focus made of one page."""

    topic: str  # the most likely target topic
    relevance: float  # its probability
    page_class: str  # the most likely class of all (rules' class)
    on_topic: bool  # relevance >= threshold
    follow: bool  # whether its links are followed
    keep: bool  # whether the page is stored
    streak: int  # off-topic pages in a row up to this one (0 when on topic)


@dataclass
class Focus:
    """A focus at work: the trained model, its rules, and how pages and links are judged."""

    spec: FocusSpec
    model: TextClassifier
    rules: Rules | None = None
    keep_off_topic: bool = False
    # Relevance = sigmoid(a * logit(p) + b) of the model's probability p of a target: a model trained
    # on a few dozen examples ranks pages well but its probabilities hug the class priors, and the
    # threshold is meant as a probability (fit_calibration; (1, 0) leaves p as it is).
    calibration: tuple[float, float] = (1.0, 0.0)
    _reach: dict[str, float] = field(default_factory=dict, init=False)
    _targets: tuple[str, ...] = field(default=(), init=False)

    def __post_init__(self) -> None:
        self._targets = tuple(t for t in self.spec.targets if t in self.model.classes)
        if not self._targets:
            raise ConfigError("the focus model knows none of the focus's target topics: train it again")
        if self.spec.mode == "rules":
            rules = self.rules or Rules.prior(self.model.classes, self._targets)
            self.rules = rules
            self._reach = rules.reach(self._targets, self.spec.tunnel)

    @property
    def ordered(self) -> bool:
        """Whether links are leased best score first (soft, rules) rather than by the crawl's ordering."""
        return self.spec.mode != "hard"

    @property
    def reads_blocks(self) -> bool:
        """Whether a page's parts (policy/blocks.py) are classified too, not the page alone."""
        return self.spec.blocks and self.spec.mode != "hard"

    def judge(self, probs: Mapping[str, float]) -> tuple[str, float, str]:
        """(best target topic, its probability, most likely class) of a class distribution."""
        topic = max(self._targets, key=lambda name: probs.get(name, 0.0))
        page_class = max(probs, key=probs.__getitem__) if probs else OTHER
        return topic, calibrated(probs.get(topic, 0.0), self.calibration), page_class

    def _worth(self, probs: Mapping[str, float]) -> float:
        """A link's score from the class distribution of the page (or part) it is in: soft, the best
        target's probability; rules, the reach of the page's classes weighed by their sharpened
        probabilities (near the most likely class's, as the seed's crawler classifies a page: a model
        of few examples spreads its probabilities too evenly for a plain expectation over classes to
        tell hubs from the rest)."""
        if self.spec.mode == "rules":
            # The calibration's slope is the model's temperature: a model of few examples whose
            # probabilities hug the priors (a slope of 10, say) spreads them over every class alike.
            power = max(SHARPEN, self.calibration[0])
            sharp = {name: math.pow(p, power) for name, p in probs.items()}
            total = sum(sharp.values()) or 1.0
            return sum(q * self._reach.get(name, 0.0) for name, q in sharp.items()) / total
        return max(probs.get(name, 0.0) for name in self._targets)

    def assess(self, page: CrawledPage, inherited: float, wanted: Collection[str],
               follow: Mapping[str, tuple[str, str] | None]) -> tuple[PageFocus, dict[str, float]]:
        """Judge a fetched page (found by a link scored `inherited`) and score its links to the URLs
        in `wanted` (normalized, as `follow` maps the page's links: scope.followed_links)."""
        parsed = page.parsed
        texts = [(parsed.text if parsed else "")[:MAX_TEXT]]
        blocks = []
        if self.reads_blocks and page.result.text:
            blocks = split_blocks(page.result.text, page.result.final_url or page.result.url,
                                  paragraph_words=self.spec.paragraph_words, tree=page.tree)
            texts.extend(block.text[:MAX_TEXT] for block in blocks)
        probs = self.model.predict_many(texts)
        topic, relevance, page_class = self.judge(probs[0])
        on_topic = relevance >= self.spec.threshold
        base, parent_streak = unpack(inherited) if self.spec.mode == "rules" else (inherited, 0)
        # A seed starts the path where the crawl was told to start: it counts as on the topic.
        streak = 0 if on_topic or page.depth == 0 else parent_streak + 1
        mode = self.spec.mode
        if mode == "hard":  # a seed's links are followed: the crawl starts where it was told to
            follows, keep = on_topic or page.depth == 0, on_topic or self.keep_off_topic
        elif mode == "rules":
            follows, keep = on_topic or streak <= self.spec.tunnel, True
        else:
            follows, keep = True, True
        verdict = PageFocus(topic, relevance, page_class, on_topic, follows, keep, streak)
        scores: dict[str, float] = {}
        if not follows or parsed is None:
            return verdict, scores
        # A seed is where the crawl was told the topic is: its links come first (its score, 1).
        seed = page.depth == 0
        page_worth = 1.0 if seed else self._worth(probs[0])
        part_worth: dict[str, float] = {}
        enough = max(1, self.spec.paragraph_words)
        for block, block_probs in () if seed else zip(blocks, probs[1:], strict=True):
            # A part's score is the mean of its own and its page's: a part's few words (a list of
            # titles) may say little, and the page says what the part is among. A part of fewer
            # words than a long paragraph leans further towards the page's score.
            weight = min(1.0, len(block.text.split()) / enough)
            worth = (weight * self._worth(block_probs) + (2 - weight) * page_worth) / 2
            for key in block.links:
                if worth > part_worth.get(key, -1.0):
                    part_worth[key] = worth
        for link in parsed.links:
            target = None if link.nofollow else follow.get(link.url)
            if target is None or target[0] not in wanted:
                continue
            # A frame's link takes what its frameset inherited: the frameset's own (empty) text says nothing.
            score = base if link.kind in FRAMES else part_worth.get(link_key(link.url), page_worth)
            if mode == "rules":
                score = pack(score, streak)
            if target[0] not in scores or score > scores[target[0]]:
                scores[target[0]] = score
        return verdict, scores

    def to_json(self) -> str:
        """The focus (spec and rules; the model is saved apart) as JSON text."""
        return json.dumps({"spec": self.spec.to_json(), "keep_off_topic": self.keep_off_topic,
                           "rules": self.rules.to_json() if self.rules else None,
                           "calibration": list(self.calibration)}, indent=1) + "\n"


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def calibrated(p: float, calibration: tuple[float, float]) -> float:
    """A model's probability mapped by a calibration (a, b): sigmoid(a * logit(p) + b)."""
    a, b = calibration
    if (a, b) == (1.0, 0.0):
        return p
    z = a * _logit(p) + b
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


def fit_calibration(examples: Mapping[str, Sequence[str]], targets: Collection[str], folds: int = 4,
                    *, c: float = 10.0) -> tuple[float, float]:
    """Platt scaling of the best target probability, fit on the examples by cross-validation (each
    example scored by a model trained on the other folds); (1, 0) when too few examples."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    from harvestman.policy.textmodel import train

    names = sorted(examples)
    texts = [text for name in names for text in examples[name]]
    labels = [name for name in names for _ in examples[name]]
    folds = min(folds, min(len(examples[name]) for name in names))
    wanted = [name for name in names if name in targets]
    if folds < 2 or not wanted or len(wanted) == len(names):
        return 1.0, 0.0
    scores: list[float] = []
    truth: list[int] = []
    for train_at, test_at in StratifiedKFold(folds, shuffle=True, random_state=0).split(texts, labels):
        by_class: dict[str, list[str]] = {}
        for i in train_at:
            by_class.setdefault(labels[i], []).append(texts[i])
        model = train(by_class, balanced=True, c=c)
        for i, probs in zip(test_at, model.predict_many([texts[i] for i in test_at]), strict=True):
            scores.append(_logit(max(probs.get(name, 0.0) for name in wanted)))
            truth.append(int(labels[i] in targets))
    platt = LogisticRegression(C=1e4, class_weight="balanced").fit([[z] for z in scores], truth)
    a, b = float(platt.coef_[0][0]), float(platt.intercept_[0])
    return (a, b) if a > 0 else (1.0, 0.0)
