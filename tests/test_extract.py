"""harvestman extract on a crawled site: nginx serves pages with JSON-LD (Person, Product, Article,
an @graph, a broken block), microdata, RDFa and OpenGraph; the CLI crawls them and writes one table
per type; field rules (CSS, XPath, per category) write fields tables; bad rules files are one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from harvestman.index.fieldrules import parse_rules
from harvestman.model.errors import ConfigError
from tests.support.crawlcheck import run_cli
from tests.support.structsite import crawl_site, write_features

HOST = "127.1.16.1"

RULES = """
[[rule]]
field = "room"
css = "span.room"

[[rule]]
category = "personal"
field = "email"
css = "a[href^='mailto:']"
attr = "href"
pattern = "mailto:([^?]+)"

[[rule]]
category = "personal"
field = "heading"
xpath = "//h1"

[[rule]]
category = "personal"
field = "paragraphs"
xpath = "//p/text()"
all = true

[[rule]]
category = "event"
field = "email"
xpath = "substring-after(//a[starts-with(@href, 'mailto:')]/@href, 'mailto:')"
"""


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return crawl_site(tmp_path_factory.mktemp("extract"), HOST)


def _rows(out: Path, table: str) -> list[dict[str, Any]]:
    return pq.read_table(out / "tables" / f"{table}.parquet").to_pylist()


def test_structured_data_tables(crawl: tuple[Path, str]) -> None:
    out, base = crawl
    done = run_cli("extract", str(out))
    assert done.returncode == 0, done.stderr
    assert "from 7 pages (1 unreadable blocks)" in done.stdout
    names = {p.stem for p in (out / "tables").glob("*.parquet")}
    assert names == {"person", "product", "article", "organization", "newsmediaorganization", "event",
                     "og_website", "og_profile", "og_product"}

    people = {r["name"]: r for r in _rows(out, "person")}
    ada, bob = people["Ada Lovelace"], people["Bob Builder"]
    assert ada["url"] == base + "/ada.html" and ada["syntax"] == "json-ld"
    assert ada["jobTitle"] == "Analyst" and ada["item_url"] == "https://example.org/ada"
    assert json.loads(ada["address"]) == {"@type": "PostalAddress", "addressLocality": "London"}
    assert json.loads(ada["sameAs"]) == ["a", "b"]
    assert bob["syntax"] == "microdata" and bob["jobTitle"] == "Engineer" and bob["item_url"] is None
    assert list(pq.read_schema(out / "tables" / "person.parquet").names[:4]) == ["url", "syntax", "item",
                                                                                   "item_id"]

    products = {r["name"]: r for r in _rows(out, "product")}
    assert products["Widget"]["syntax"] == "microdata" and products["Widget"]["sku"] == "W-1"
    assert json.loads(products["Widget"]["offers"]) == {"@type": "Offer", "price": "9.99",
                                                        "priceCurrency": "EUR"}
    # The broken block costs only itself: the good one beside it is read.
    assert products["Gadget"]["url"] == base + "/broken.html"
    assert json.loads(products["Gadget"]["offers"]) == {"@type": "Offer", "price": 5}

    [article] = _rows(out, "article")
    assert (article["headline"], article["datePublished"], article["item_id"]) == \
        ("Compilers today", "2024-05-01", "#a1")
    # A member of @graph with two types is a row of each type's table.
    assert [r["name"] for r in _rows(out, "organization")] == ["Daily Bits"]
    assert [r["name"] for r in _rows(out, "newsmediaorganization")] == ["Daily Bits"]

    [event] = _rows(out, "event")
    assert event["syntax"] == "rdfa" and event["name"] == "Compiler Days"
    assert json.loads(event["location"]) == {"@type": "Place", "name": "Hall A"}

    [profile] = _rows(out, "og_profile")
    assert profile["title"] == "Ada Lovelace" and profile["profile_first_name"] == "Ada"
    [product] = _rows(out, "og_product")
    assert json.loads(product["image"]) == ["/w1.png", "/w2.png"]
    [home] = _rows(out, "og_website")  # no og:type: the protocol's default
    assert home["url"] == base + "/" and home["title"] == "Home page"


def test_field_rules_per_category(crawl: tuple[Path, str], tmp_path: Path) -> None:
    out, base = crawl
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    missing = run_cli("extract", str(out), "--rules", str(rules))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "pages.parquet" in missing.stderr and "personal" in missing.stderr

    write_features(out, base, {"/ada.html": "personal", "/bob.html": "personal", "/event.html": "event"})
    try:
        done = run_cli("extract", str(out), "--rules", str(rules))
        assert done.returncode == 0, done.stderr
        every = {r["url"]: r["room"] for r in _rows(out, "fields")}
        assert len(every) == 7 and every[base + "/ada.html"] == "Room 101"
        assert every[base + "/bob.html"] == "Room 7" and every[base + "/news.html"] is None
        personal = {r["url"]: r for r in _rows(out, "fields_personal")}
        assert set(personal) == {base + "/ada.html", base + "/bob.html"}
        ada, bob = personal[base + "/ada.html"], personal[base + "/bob.html"]
        assert (ada["email"], ada["heading"]) == ("ada@example.org", "Ada Lovelace")
        assert json.loads(ada["paragraphs"]) == ["Research on analytical engines and compilers.", "Mail:"]
        assert bob["email"] is None and bob["heading"] is None
        assert _rows(out, "fields_event") == [
            {"url": base + "/event.html", "email": "events@example.org?subject=hi"}]
        assert {r["name"] for r in _rows(out, "person")} == {"Ada Lovelace", "Bob Builder"}
        # Without rules, the next extract leaves no stale fields tables behind.
        assert run_cli("extract", str(out)).returncode == 0
        assert not list((out / "tables").glob("fields*.parquet"))
    finally:
        (out / "features" / "pages.parquet").unlink()


@pytest.mark.parametrize(("text", "message"), [
    ("[[rule]]\nfield = 'x'\ncss = 'a'\ncss2 = 'b'\n", "unknown key 'css2'"),
    ("[[rule]]\nfield = 'x'\n", "give one of css or xpath"),
    ("[[rule]]\nfield = 'x'\ncss = 'a'\nxpath = '//a'\n", "give one of css or xpath"),
    ("[[rule]]\nfield = 'x'\ncss = 'a[[['\n", "bad CSS selector"),
    ("[[rule]]\nfield = 'x'\nxpath = '//a[@'\n", "bad XPath"),
    ("[[rule]]\nfield = 'x'\ncss = 'a'\npattern = '(('\n", "bad pattern"),
    ("[[rule]]\nfield = 'url'\ncss = 'a'\n", "field must be a name"),
    ("[[rule]]\nfield = 'a b'\ncss = 'a'\n", "field must be a name"),
    ("[[rule]]\nfield = 'x'\ncss = 'a'\nall = 'yes'\n", "all must be true or false"),
    ("[[rule]]\nfield = 'x'\ncss = 'a'\n[[rule]]\nfield = 'X'\nxpath = '//a'\n", "given twice"),
    ("[rules]\nfield = 'x'\n", "unknown table 'rules'"),
    ("", "no rules"),
    ("[[rule]\n", "not valid TOML"),
])
def test_bad_rules_are_clear_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse_rules(text, "r.toml")


def test_bad_rules_file_on_the_command_line(crawl: tuple[Path, str], tmp_path: Path) -> None:
    out, _ = crawl
    bad = tmp_path / "bad.toml"
    bad.write_text("[[rule]]\nfield = 'x'\ncss = 'a[[['\n", encoding="utf-8")
    for args, message in (((str(out), "--rules", str(bad)), "rule 1: bad CSS selector"),
                          ((str(out), "--rules", str(tmp_path / "none.toml")), "cannot read rules file"),
                          ((str(tmp_path / "nowhere"),), "holds no crawl")):
        done = run_cli("extract", *args)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
