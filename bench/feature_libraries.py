"""Which libraries index/features.py uses, measured: boilerplate removal, sentence splitting, language.

Boilerplate: on Python's own HTML documentation (Debian's python3.11-doc, /usr/share/doc/python3.11/html,
Sphinx pages with a navigation bar, a sidebar and a footer), each extractor's text is compared with
the page's main content (`div.body`), word by word: precision (how much of what it kept is content)
and recall (how much of the content it kept), and its CPU time a page.
Sentences: a handful of hard cases (abbreviations, decimals, quotes) and the time a page's text takes.
Language: short paragraphs in 8 languages, accuracy and time.

    .venv/bin/python bench/feature_libraries.py [--pages 120]

Needs trafilatura, justext, resiliparse, pysbd, blingfire, syntok, py3langid, lingua-language-detector
(pip install them; only the chosen ones are harvestman's dependencies).
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

DOCS = Path("/usr/share/doc/python3.11/html")
_WORD = re.compile(r"\w+")


def _words(text: str) -> Counter[str]:
    return Counter(w.lower() for w in _WORD.findall(text))


def _overlap(found: str, truth: str) -> tuple[float, float]:
    got, want = _words(found), _words(truth)
    common = sum((got & want).values())
    return common / max(1, sum(got.values())), common / max(1, sum(want.values()))


def _selectolax_only(html: str) -> str:
    tree = LexborHTMLParser(html)
    tree.strip_tags(["script", "style", "noscript", "template", "nav", "header", "footer", "aside"])
    body = tree.body
    return body.text(separator=" ") if body is not None else ""


def _trafilatura(html: str) -> str:
    import trafilatura

    return trafilatura.extract(html, include_comments=False, include_tables=True) or ""


def _justext(html: str) -> str:
    import justext

    paragraphs = justext.justext(html.encode("utf-8"), justext.get_stoplist("English"))
    return "\n".join(p.text for p in paragraphs if not p.is_boilerplate)


def _resiliparse(html: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text

    return str(extract_plain_text(html, main_content=True))


def boilerplate(pages: int) -> None:
    files = sorted(DOCS.rglob("*.html"))[:pages]
    docs = []
    for path in files:
        html = path.read_text(encoding="utf-8", errors="replace")
        main = LexborHTMLParser(html).css_first("div.body")
        if main is not None:
            docs.append((html, main.text(separator=" ")))
    print(f"boilerplate removal on {len(docs)} pages of {DOCS} (truth: div.body)")
    extractors: dict[str, Callable[[str], str]] = {
        "selectolax (body, no nav/header/footer/aside)": _selectolax_only,
        "resiliparse main_content": _resiliparse,
        "trafilatura": _trafilatura,
        "jusText (English stoplist)": _justext,
    }
    for name, extract in extractors.items():
        extract(docs[0][0])  # imports and caches out of the timing
        precision = recall = 0.0
        start = time.process_time()
        texts = [extract(html) for html, _ in docs]
        cpu = time.process_time() - start
        for text, (_, truth) in zip(texts, docs, strict=True):
            p, r = _overlap(text, truth)
            precision += p
            recall += r
        n = len(docs)
        print(f"  {name:48} precision {precision / n:.3f}  recall {recall / n:.3f}  "
              f"{cpu / n * 1e6:8.0f} µs/page")


HARD = [  # (text, sentences)
    ("Dr. Smith arrived at 3.15 p.m. on Monday. He left early.", 2),
    ("The price rose 2.5% in the U.S. last year. Analysts, e.g. Jones, were surprised.", 2),
    ("She said \"Stop!\" and walked out. Nobody followed her.", 2),
    ("Version 3.11.2 fixes bugs (see sec. 4). Upgrade now! Is it safe? Yes.", 4),
    ("Prof. Müller lehrt in Berlin. Die Vorlesung beginnt um 10 Uhr.", 2),
    ("He works at Example Inc. in London. It is a small firm.", 2),
]


def sentences(pages: int) -> None:
    import blingfire
    import pysbd
    import syntok.segmenter as segmenter

    def _syntok(text: str) -> list[str]:
        return ["".join(t.spacing + t.value for t in s).strip()
                for para in segmenter.process(text) for s in para]

    seg = pysbd.Segmenter(language="en", clean=False)
    splitters: dict[str, Callable[[str], list[str]]] = {
        "pysbd": seg.segment,
        "blingfire": lambda t: blingfire.text_to_sentences(t).split("\n") if t.strip() else [],
        "syntok": _syntok,
        "regex on [.!?] + space": lambda t: re.split(r"(?<=[.!?])\s+", t),
    }
    files = sorted(DOCS.rglob("*.html"))[:pages]
    texts = []
    for path in files:
        main = LexborHTMLParser(path.read_text(encoding="utf-8", errors="replace")).css_first("div.body")
        if main is not None:
            texts.append(" ".join(main.text(separator=" ").split())[:20_000])
    print(f"sentence splitting: {len(HARD)} hard cases; time on {len(texts)} page texts (≤20k chars)")
    for name, split in splitters.items():
        right = sum(len([s for s in split(text) if s.strip()]) == want for text, want in HARD)
        start = time.process_time()
        for text in texts:
            split(text)
        cpu = time.process_time() - start
        print(f"  {name:24} {right}/{len(HARD)} right  {cpu / len(texts) * 1e6:9.0f} µs/page")


LANGUAGES = {
    "en": "The committee will meet next week to discuss the budget for the new library building.",
    "de": "Der Ausschuss trifft sich nächste Woche, um den Haushalt für das neue Gebäude zu beraten.",
    "fr": "Le comité se réunira la semaine prochaine pour discuter du budget de la nouvelle bibliothèque.",
    "es": "El comité se reunirá la próxima semana para discutir el presupuesto del nuevo edificio.",
    "it": "Il comitato si riunirà la prossima settimana per discutere il bilancio della nuova biblioteca.",
    "nl": "De commissie komt volgende week bijeen om de begroting voor het nieuwe gebouw te bespreken.",
    "pt": "O comitê se reunirá na próxima semana para discutir o orçamento do novo edifício da biblioteca.",
    "tr": "Komite, yeni kütüphane binasının bütçesini görüşmek üzere gelecek hafta toplanacak.",
}
SHORT = {"en": "Opening hours of the library", "de": "Öffnungszeiten der Bibliothek",
         "fr": "Horaires d'ouverture de la bibliothèque", "es": "Horario de la biblioteca",
         "it": "Orari di apertura della biblioteca", "nl": "Openingstijden van de bibliotheek",
         "pt": "Horário de funcionamento da biblioteca", "tr": "Kütüphanenin açılış saatleri"}


def languages() -> None:
    import py3langid

    start = time.process_time()
    from lingua import LanguageDetectorBuilder

    detector = LanguageDetectorBuilder.from_all_languages().build()
    lingua_load = time.process_time() - start

    def _lingua(text: str) -> str:
        found = detector.detect_language_of(text)
        return found.iso_code_639_1.name.lower() if found is not None else ""

    def _langid(text: str) -> str:
        return str(py3langid.classify(text)[0])

    print(f"language: {len(LANGUAGES)} sentences and {len(SHORT)} short titles "
          f"(lingua's model load: {lingua_load:.2f} s CPU)")
    for name, detect in {"py3langid": _langid, "lingua (all languages)": _lingua}.items():
        detect("warm up")
        long_right = sum(detect(t) == code for code, t in LANGUAGES.items())
        short_right = sum(detect(t) == code for code, t in SHORT.items())
        start = time.process_time()
        for _ in range(20):
            for text in LANGUAGES.values():
                detect(text * 20)  # a page-sized text
        cpu = (time.process_time() - start) / (20 * len(LANGUAGES))
        print(f"  {name:24} sentences {long_right}/{len(LANGUAGES)}  short {short_right}/{len(SHORT)}  "
              f"{cpu * 1e6:8.0f} µs per 2 KB text")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=120)
    args = parser.parse_args()
    if not DOCS.is_dir():
        raise SystemExit(f"{DOCS} is missing: apt-get install python3.11-doc")
    boilerplate(args.pages)
    sentences(args.pages)
    languages()


if __name__ == "__main__":
    main()
