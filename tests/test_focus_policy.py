"""Focused crawling's pure parts: the block splitter (seed 004), rules and tunneling, link scores,
score packing, the harvest curve and its PNG."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvestman.batch.harvest import harvest_curve, plot_png, rate_at
from harvestman.crawl.parse import parse_html
from harvestman.model.errors import ConfigError
from harvestman.model.records import CrawledPage, FetchResult
from harvestman.policy.blocks import split_blocks
from harvestman.policy.focus import OTHER, Focus, FocusSpec, Rules, TopicSpec, pack, unpack
from harvestman.policy.textmodel import train

BASE = "http://site.test/dir/page.html"
LONG = " ".join(["word"] * 40)


def test_blocks_follow_the_seed_s_algorithm() -> None:
    html = f"""<html><body><h1>Title</h1> intro <a href="/top">top</a>
    <ul><li><a href="a1">A1</a></li><li><a href="a2#frag">A2</a>
    <ul><li><a href="a3">nested</a></li></ul></li></ul>
    <p>short paragraph <a href="/short">s</a></p>
    <p>{LONG} <a href="/long">long</a></p>
    <table><tr><td>cell text <a href="/cell">c</a></td>
    <td><ol><li><a href="/in-table">t</a></li></ol></td></tr></table>
    <dl><dt>term</dt><dd><a href="/dd">d</a></dd></dl><menu><li><a href="/menu">m</a></li></menu>
    <dir><li><a href="/dir">x</a></li></dir><script>var no = "<a href='/script'>";</script>
    </body></html>"""
    blocks = split_blocks(html, BASE, paragraph_words=30)
    kinds = [(b.kind, sorted(b.links)) for b in blocks]
    site = "http://site.test"
    assert ("list", [f"{site}/dir/a1", f"{site}/dir/a2", f"{site}/dir/a3"]) in kinds  # a list is one part
    assert ("paragraph", [f"{site}/long"]) in kinds  # over the word threshold
    assert ("list", [f"{site}/in-table"]) in kinds  # lists inside a table: parts of their own
    assert ("table", [f"{site}/cell"]) in kinds  # the rest of the table: one part
    assert ("list", [f"{site}/dd"]) in kinds and ("list", [f"{site}/menu"]) in kinds
    assert ("list", [f"{site}/dir"]) in kinds
    rest = blocks[-1]
    assert rest.kind == "page" and sorted(rest.links) == [f"{site}/short", f"{site}/top"]
    assert "intro" in rest.text and "short paragraph" in rest.text and "var no" not in rest.text


def test_blocks_resolve_against_base_href_and_survive_deep_nesting() -> None:
    html = '<html><head><base href="http://other.test/x/"></head><body><ul><li><a href="y">y</a></ul></body>'
    assert split_blocks(html, BASE)[0].links == ["http://other.test/x/y"]
    deep = "<div>" * 3000 + '<a href="/deep">deep</a>' + "</div>" * 3000
    assert any("http://site.test/deep" in b.links for b in split_blocks(f"<body>{deep}</body>", BASE))


def test_rules_learn_and_reach_through_off_topic_classes() -> None:
    # hubs lead to docs, docs lead to target; home leads to hubs only.
    pairs = [("home", "hub")] * 10 + [("hub", "docs")] * 10 + [("docs", "t")] * 10 + [("t", "t")] * 10
    rules = Rules.learn(pairs, ["home", "hub", "docs", "t"], smoothing=0.01)
    assert rules.odds["hub"]["docs"] > 0.99 and rules.links == 40
    no_tunnel = rules.reach(["t"], 0)
    assert no_tunnel["docs"] > 0.99 and no_tunnel["hub"] < 0.01
    one = rules.reach(["t"], 1)
    assert one["hub"] > 0.98 and one["home"] < 0.02
    two = rules.reach(["t"], 2)
    assert two["home"] > 0.97  # two off-topic pages crossed
    assert Rules.from_json(rules.to_json()) == rules
    assert rules.describe(["t"])[0].startswith("docs -> t") or rules.describe(["t"])[0].startswith("t -> t")


def test_rules_learnt_along_paths_value_hubs_that_open_target_sites() -> None:
    # home -> hub -> hub2 -> a target site's front page (t0) -> its pages (t1, t2); home -> misc -> misc2.
    # Per link, a hub linking to one target page among five others is worth little; along the
    # paths, the target pages behind it count, and a hub two steps away counts at half the weight.
    graph = {"home": ["hub", "misc"], "hub": ["hub2", "o1", "o2", "o3", "o4"], "hub2": ["t0", "o5"],
             "t0": ["t1", "t2"], "t1": ["t2"], "misc": ["misc2", "o1"], "misc2": ["o2"]}
    classes = {"home": "o", "hub": "h", "hub2": "h", "misc": "o", "misc2": "o", "t0": "t", "t1": "t",
               "t2": "t", **{f"o{i}": "o" for i in range(1, 6)}}
    names = ["h", "o", "t"]
    rules = Rules.learn_paths(graph, classes, names, ["t"], tunnel=2)
    reach = rules.reach(["t"], 2)
    assert reach["t"] == 1.0 and reach["h"] > 0.5 > reach["o"] > 0.0  # home reaches t0 in 3 links
    assert Rules.learn_paths(graph, classes, names, ["t"], tunnel=0).reach(["t"], 0)["o"] == 0.0
    assert Rules.from_json(rules.to_json()) == rules
    per_link = Rules.learn([(classes[a], classes[b]) for a, bs in graph.items() for b in bs], names)
    assert per_link.reach(["t"], 2)["h"] < 0.3  # the per-link rules see one target link in seven


@given(st.floats(0.0, 1.0), st.integers(0, 99))
def test_pack_keeps_the_streak_and_the_score_to_four_places(score: float, streak: int) -> None:
    base, back = unpack(pack(score, streak))
    assert back == streak and abs(base - min(score, 0.9999)) < 1.01e-4


def test_pack_orders_by_score_first() -> None:
    assert pack(0.5, 0) > pack(0.4999, 0) > pack(0.4998, 0)
    assert pack(0.5, 0) > pack(0.5, 5)  # equal scores: nearer the topic first
    assert unpack(1.0) == (1.0, 0)  # a seed's score


def _model() -> Focus:
    examples = {"db": ["database table query index transaction sql"] * 3,
                OTHER: ["garden flower seed soil water plant"] * 3}
    spec = FocusSpec("soft", True, 2, 0.5, 3, (TopicSpec("db"),))
    return Focus(spec, train(examples, balanced=True))


def _page(html: str, depth: int = 1) -> CrawledPage:
    result = FetchResult(BASE, BASE, status=200, content_type="text/html", text=html, body=html.encode())
    return CrawledPage(result, parse_html(html, BASE), depth)


def test_soft_blocks_give_each_link_its_part_s_score_and_frames_the_inherited_one() -> None:
    focus = _model()
    html = ("<body><p>garden flower seed soil water plant garden flower</p>"
            "<ul><li><a href='/db'>database table query index transaction</a></li></ul>"
            "<ul><li><a href='/garden'>garden flower seed soil</a></li></ul>"
            "<frameset><frame src='/framed'></frameset></body>")
    page = _page(html)
    wanted = {"http://site.test/db", "http://site.test/garden", "http://site.test/framed"}
    follow = {link.url: (link.url, "site.test") for link in page.parsed.links}  # type: ignore[union-attr]
    verdict, scores = focus.assess(page, 0.77, wanted, follow)
    assert verdict.topic == "db" and not verdict.on_topic and verdict.follow and verdict.keep
    assert scores["http://site.test/db"] > 0.5 > scores["http://site.test/garden"]
    assert scores.get("http://site.test/framed", 0.77) == 0.77  # the grandparent's score
    # Without blocks, every link has the page's score.
    whole = Focus(FocusSpec("soft", False, 2, 0.5, 3, (TopicSpec("db"),)), focus.model)
    _, flat = whole.assess(page, 0.77, wanted, follow)
    assert flat["http://site.test/db"] == flat["http://site.test/garden"] == pytest.approx(verdict.relevance)


def test_hard_and_rules_decide_what_is_followed_and_kept() -> None:
    focus = _model()
    off = _page("<body><p>garden flower seed soil</p><a href='/x'>x</a></body>")
    follow = {"http://site.test/x": ("http://site.test/x", "site.test")}
    hard = Focus(FocusSpec("hard", False, 2, 0.5, 3, (TopicSpec("db"),)), focus.model)
    verdict, scores = hard.assess(off, 1.0, {"http://site.test/x"}, follow)
    assert not verdict.follow and not verdict.keep and scores == {}
    hard.keep_off_topic = True
    assert hard.assess(off, 1.0, set(), follow)[0].keep
    seed = _page("<body><p>garden flower seed soil</p><a href='/x'>x</a></body>", depth=0)
    assert hard.assess(seed, 1.0, set(), follow)[0].follow  # a seed's links are followed
    rules = Focus(FocusSpec("rules", False, 1, 0.5, 3, (TopicSpec("db"),)), focus.model)
    first, scores = rules.assess(off, 1.0, {"http://site.test/x"}, follow)  # found from a seed
    assert first.follow and first.streak == 1 and unpack(scores["http://site.test/x"])[1] == 1
    second, _ = rules.assess(off, scores["http://site.test/x"], {"http://site.test/x"}, follow)
    assert second.streak == 2 and not second.follow  # tunnel 1: a second off-topic page in a row ends it


def test_focus_spec_refuses_bad_values() -> None:
    with pytest.raises(ConfigError, match="mode"):
        FocusSpec("fuzzy", topics=(TopicSpec("a"),))
    with pytest.raises(ConfigError, match="target"):
        FocusSpec("soft", topics=(TopicSpec("a", target=False),))
    with pytest.raises(ConfigError, match="threshold"):
        FocusSpec("soft", threshold=2.0, topics=(TopicSpec("a"),))
    with pytest.raises(ConfigError, match="distinct"):
        FocusSpec("soft", topics=(TopicSpec("a"), TopicSpec("a")))


def test_harvest_curve_and_png() -> None:
    curve = harvest_curve([True, False, True, True])
    assert [(p.fetched, p.relevant) for p in curve] == [(1, 1), (2, 1), (3, 2), (4, 3)]
    assert rate_at(curve, 2) == 0.5 and rate_at(curve, 100) == 0.75 and rate_at([], 5) == 0.0
    png = plot_png([[p.harvest_rate for p in curve]], width=50, height=40)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and b"IEND" in png
    start = png.index(b"IDAT") + 4
    length = int.from_bytes(png[start - 8:start - 4], "big")
    assert len(zlib.decompress(png[start:start + length])) == 40 * (1 + 50 * 3)
