"""Classification (seed 004): categories learnt from examples, given to every page of a crawl, with
accuracy on held-out pages; the model saved and reused; bad category files refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from harvestman.index.pages import FEATURES_DIR, PAGES_FILE
from harvestman.policy.textmodel import train
from harvestman.store.modelfiles import load_classifier, save_classifier
from tests.support.crawlcheck import run_cli
from tests.support.featuresite import VOCABULARY, write_labelled_site
from tests.support.nginx import NginxServer, free_port

HOST = "127.62.0.1"
NET = "127.62.0.0/16"
TRAIN = 5  # pages of each category given as examples (p0..p4); the others are held out
MIN_ACCURACY = 0.85


def test_train_predict_save_load(tmp_path: Path) -> None:
    model = train({"fruit": ["apple pear plum", "pear apple cherry"],
                   "tool": ["hammer saw drill", "saw nail"]})
    probs = model.predict_proba("a ripe pear and an apple")
    assert set(probs) == {"fruit", "tool"} and abs(sum(probs.values()) - 1) < 1e-9
    assert probs["fruit"] > 0.5
    save_classifier(model, tmp_path / "m")
    again = load_classifier(tmp_path / "m")
    assert again.predict_proba("hammer and nails") == model.predict_proba("hammer and nails")
    three = train({"a": ["apple pear"], "b": ["hammer saw"], "c": ["river lake"]})
    assert three.best("the lake and the river")[0] == "c"


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str], str]:
    tmp = tmp_path_factory.mktemp("classify")
    root = tmp / "www"
    labels = write_labelled_site(root / HOST)
    out = tmp / "out"
    with NginxServer(root, [HOST], free_port(HOST)) as server:
        done = run_cli("crawl", server.url(HOST, "/"), "--out", str(out), "--allow-net", NET, "-q",
                       "--workers", "1")
        assert done.returncode == 0, done.stderr
        base = server.url(HOST, "/")
    return out, root / HOST, labels, base


def _categories_file(path: Path, site: Path, base: str) -> Path:
    tables = []
    for name in VOCABULARY:
        examples = [str(site / name / f"p[0-{TRAIN - 2}].html"), f"{base}{name}/p{TRAIN - 1}.html"]
        tables.append(f'[[category]]\nname = "{name}"\nexamples = {examples!r}\n'.replace("'", '"'))
    path.write_text("\n".join(tables), encoding="utf-8")
    return path


def test_held_out_pages_get_their_category(crawled: tuple[Path, Path, dict[str, str], str],
                                          tmp_path: Path) -> None:
    out, site, labels, base = crawled
    cats = _categories_file(tmp_path / "cats.toml", site, base)
    done = run_cli("classify", str(out), "--categories", str(cats))
    assert done.returncode == 0, done.stderr
    assert "cross-validated accuracy on the 20 examples:" in done.stdout
    rows = {row["url"]: row for row in pq.read_table(out / FEATURES_DIR / PAGES_FILE).to_pylist()}
    held_out = {base + path: category for path, category in labels.items()
                if int(path.rsplit("/p", 1)[1].split(".")[0]) >= TRAIN}
    right = sum(rows[url]["category"] == category for url, category in held_out.items())
    accuracy = right / len(held_out)
    print(f"held-out accuracy: {right}/{len(held_out)} = {accuracy:.3f}")
    assert accuracy >= MIN_ACCURACY
    assert all(0.25 <= rows[url]["category_probability"] <= 1 for url in held_out)

    # The saved model, applied again, gives every page the same category.
    before = {url: row["category"] for url, row in rows.items()}
    done = run_cli("classify", str(out), "--model", str(out / "classifier"))
    assert done.returncode == 0, done.stderr
    table = pq.read_table(out / FEATURES_DIR / PAGES_FILE).to_pylist()
    after = {row["url"]: row["category"] for row in table}
    assert after == before


def test_one_category_with_negative_examples(crawled: tuple[Path, Path, dict[str, str], str],
                                             tmp_path: Path) -> None:
    out, site, _labels, base = crawled
    cats = tmp_path / "course.toml"
    cats.write_text(f'[[category]]\nname = "course"\nexamples = ["{site}/course/p[0-4].html"]\n'
                    f'negative = ["{site}/research/p[0-4].html", "{site}/personal/p[0-4].html"]\n')
    done = run_cli("classify", str(out), "--categories", str(cats))
    assert done.returncode == 0, done.stderr
    rows = {row["url"]: row for row in pq.read_table(out / FEATURES_DIR / PAGES_FILE).to_pylist()}
    assert rows[f"{base}course/p9.html"]["category"] == "course"
    assert rows[f"{base}research/p9.html"]["category"] is None  # most like the negative examples


def _table(folder: Path) -> dict[str, dict[str, Any]]:
    return {row["url"]: row for row in pq.read_table(folder / FEATURES_DIR / PAGES_FILE).to_pylist()}


def _exported(folder: Path, target: Path) -> dict[str, dict[str, Any]]:
    done = run_cli("export", str(folder), "--what", "pages", "--format", "jsonl", "--output", str(target))
    assert done.returncode == 0, done.stderr
    return {row["url"]: row for row in map(json.loads, target.read_text().splitlines())}


def _features_keep(folder: Path, classified: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """`harvestman features`, run twice, leaves every row as classify wrote it, export included."""
    for _ in range(2):
        done = run_cli("features", str(folder))
        assert done.returncode == 0, done.stderr
        assert _table(folder) == classified
        assert _exported(folder, tmp_path / "pages.jsonl") == classified


def test_features_after_classify_keep_the_categories(crawled: tuple[Path, Path, dict[str, str], str],
                                                    tmp_path: Path) -> None:
    out, site, _labels, base = crawled
    folder = tmp_path / "crawl"
    shutil.copytree(out, folder)
    cats = _categories_file(tmp_path / "cats.toml", site, base)
    done = run_cli("classify", str(folder), "--categories", str(cats))
    assert done.returncode == 0, done.stderr
    classified = _table(folder)
    assert sum(bool(row["category"]) for row in classified.values()) > len(classified) // 2
    _features_keep(folder, classified, tmp_path)

    # classify -> features -> classify: the saved model gives the same rows again, and features after.
    done = run_cli("classify", str(folder), "--model", str(folder / "classifier"))
    assert done.returncode == 0, done.stderr
    assert _table(folder) == classified
    _features_keep(folder, classified, tmp_path)


def test_crawl_with_features_classify_crawl_on_then_features(
        crawled: tuple[Path, Path, dict[str, str], str], tmp_path: Path) -> None:
    _out, site, labels, _base = crawled
    folder = tmp_path / "crawl"
    cats = tmp_path / "cats.toml"  # files only: the first crawl stores too few pages to name URLs
    cats.write_text("\n".join(f'[[category]]\nname = "{name}"\nexamples = ["{site}/{name}/p[0-4].html"]\n'
                              for name in VOCABULARY), encoding="utf-8")
    with NginxServer(site.parent, [HOST], free_port(HOST)) as server:
        base = server.url(HOST, "/")
        crawl = ("crawl", base, "--out", str(folder), "--allow-net", NET, "-q", "--workers", "1",
                 "--features")
        done = run_cli(*crawl, "--max-pages", "10")
        assert done.returncode == 0, done.stderr
        done = run_cli("classify", str(folder), "--categories", str(cats))
        assert done.returncode == 0, done.stderr
        first = _table(folder)
        assert 0 < len(first) < len(labels) and any(row["category"] for row in first.values())
        # The crawl goes on: the pages it adds join the classified ones, which keep their categories.
        done = run_cli(*crawl, "--resume", "--max-pages", "100")
        assert done.returncode == 0, done.stderr
    exported = _exported(folder, tmp_path / "pages.jsonl")
    assert set(exported) == {base, *(base + path for path in labels)}
    assert all(exported[url] == row for url, row in first.items())
    assert all(row["category"] is None for url, row in exported.items() if url not in first)

    done = run_cli("classify", str(folder), "--categories", str(cats))
    assert done.returncode == 0, done.stderr
    classified = _table(folder)
    assert set(classified) == set(exported)
    assert sum(bool(row["category"]) for row in classified.values()) > len(classified) // 2
    _features_keep(folder, classified, tmp_path)


BAD_FILES = [
    ("[[category]\nname=", "is not valid TOML"),
    ('title = "x"\n', "no categories"),
    ('[[category]]\nexamples = ["a.html"]\n', "has no name"),
    ('[[category]]\nname = "a"\nexamples = "a.html"\n[[category]]\nname = "b"\nexamples = ["b"]\n',
     "must be a list"),
    ('[[category]]\nname = "a"\nexamples = ["x"]\n[[category]]\nname = "a"\nexamples = ["y"]\n',
     "defined twice"),
    ('[[category]]\nname = "a"\nexamples = ["x"]\n', "needs negative examples"),
    ('[[category]]\nname = "a"\nexamples = ["nothing-*.html"]\n[[category]]\nname = "b"\nexamples = ["b"]\n',
     "matches no file"),
    ('[[category]]\nname = "a"\nexamples = ["http://127.62.0.1/unknown"]\n'
     '[[category]]\nname = "b"\nexamples = ["http://127.62.0.1/other"]\n', "not a page of the crawl"),
    ('[[category]]\nname = "a"\nexamples = ["x"]\ncolour = "red"\n', "unknown key"),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES)
def test_bad_category_files_are_refused(crawled: tuple[Path, Path, dict[str, str], str], tmp_path: Path,
                                        text: str, message: str) -> None:
    out = crawled[0]
    cats = tmp_path / "bad.toml"
    cats.write_text(text, encoding="utf-8")
    done = run_cli("classify", str(out), "--categories", str(cats))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("harvestman: error:") and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    done = run_cli("classify", str(out), "--categories", str(tmp_path / "missing.toml"))
    assert done.returncode == 2 and "cannot read the categories file" in done.stderr
    done = run_cli("classify", str(out), "--model", str(tmp_path))
    assert done.returncode == 2 and "holds no classifier model" in done.stderr
