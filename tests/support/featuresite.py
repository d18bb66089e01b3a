"""Sites for page features and classification, written for nginx: pages with navigation boilerplate
(nav, sidebar, footer, scripts), in several languages, with headings and long text; and a labelled
site of course, department, personal and research pages with distinct vocabularies (seed 004)."""

from __future__ import annotations

import random
from pathlib import Path

NAV = ('<nav class="menu"><h2>Site menu</h2><a href="/">Home</a> <a href="/en.html">News</a> '
       '<a href="/de.html">Contact us</a></nav>')
FOOTER = '<footer><p>Copyright 2026 Example University. All rights reserved.</p></footer>'
SCRIPT = '<script>var tracker = "trackingcode";</script><style>.menu{color:red}</style>'

EN_PARAGRAPHS = (
    "The library opens at 9 a.m. on weekdays. Students may borrow up to ten books at a time.",
    "Dr. Smith leads the reading group. It meets every Tuesday in room 4.2 of the east wing.",
    "Late returns cost a small fee. The fee is waived for the first week of each term.",
)
DE_PARAGRAPHS = (
    "Die Bibliothek ist an Werktagen ab neun Uhr geöffnet. Studierende dürfen bis zu zehn Bücher "
    "gleichzeitig ausleihen.",
    "Die Lesegruppe trifft sich jeden Dienstag im Ostflügel. Neue Mitglieder sind immer willkommen.",
)
FR_PARAGRAPHS = (
    "La bibliothèque est ouverte tous les jours de la semaine à partir de neuf heures. Les étudiants "
    "peuvent emprunter jusqu'à dix livres à la fois.",
    "Le groupe de lecture se réunit chaque mardi dans l'aile ouest du bâtiment. Les nouveaux membres "
    "sont les bienvenus.",
)


def page(title: str, lang: str, paragraphs: tuple[str, ...], *, description: str = "",
         headings: tuple[str, ...] = ()) -> str:
    """A page with a nav, a sidebar, a footer and a script around its main content."""
    meta = f'<meta name="description" content="{description}">' if description else ""
    if headings:
        sections = "".join(f"<h2>{heading}</h2><p>{text}</p>"
                           for heading, text in zip(headings, paragraphs, strict=False))
    else:
        sections = "".join(f"<p>{text}</p>" for text in paragraphs)
    sidebar = '<aside role="complementary"><h3>Related</h3><a href="/fr.html">Elsewhere</a></aside>'
    return (f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8"><title>{title}</title>{meta}'
            f"{SCRIPT}</head><body>{NAV}<main><article><h1>{title}</h1>{sections}</article></main>"
            f"{sidebar}{FOOTER}</body></html>\n")


def write_language_site(root: Path) -> dict[str, str]:
    """index, en, de and fr pages under `root`; path -> HTML."""
    pages = {
        "en.html": page("Library opening hours", "en", EN_PARAGRAPHS, description="When the library opens",
                        headings=("Opening hours", "Reading group", "Fees")),
        "de.html": page("Öffnungszeiten der Bibliothek", "de", DE_PARAGRAPHS,
                        headings=("Öffnungszeiten", "Lesegruppe")),
        "fr.html": page("Horaires de la bibliothèque", "fr", FR_PARAGRAPHS),
    }
    links = "".join(f'<li><a href="/{name}">{name}</a></li>' for name in pages)
    pages["index.html"] = (f"<!doctype html><html><head><title>Home</title></head><body>{NAV}"
                           f"<ul>{links}</ul></body></html>\n")
    for name, html in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(html, encoding="utf-8")
    return pages


VOCABULARY = {
    "course": "syllabus lecture homework assignment exam midterm grading tutorial semester credits "
              "prerequisites textbook lab quiz enrollment instructor office hours schedule readings "
              "project deadline solutions",
    "department": "faculty department chair admissions undergraduate graduate programs staff "
                  "directory seminar series colloquium news events building campus degree "
                  "curriculum dean office contact openings",
    "personal": "my hobbies family photos blog resume vacation cat dog hiking cooking music "
                "favorite books friends travel wedding garden weekend coffee guitar",
    "research": "publications experiments dataset algorithm results grant funding collaborators "
                "laboratory hypothesis analysis paper conference journal simulation model "
                "findings methodology theorem proof evaluation",
}
COMMON = ("the", "of", "and", "to", "in", "for", "is", "on", "with", "this", "that", "are", "at", "by",
          "from", "we", "our", "page", "about", "more", "have", "will", "can", "all", "new", "see",
          "also", "here", "information")


def _text(rng: random.Random, words: list[str], sentences: int) -> str:
    out = []
    for _ in range(sentences):
        chosen = [rng.choice(words) if rng.random() < 0.35 else rng.choice(COMMON)
                  for _ in range(rng.randint(10, 18))]
        out.append(" ".join(chosen).capitalize() + ".")
    return " ".join(out)


def write_labelled_site(root: Path, per_category: int = 12, seed: int = 7) -> dict[str, str]:
    """`per_category` pages of each category under root/<category>/p<i>.html, all linked from the
    front page, with the same navigation and footer; path -> category."""
    rng = random.Random(seed)
    labels: dict[str, str] = {}
    for category, vocabulary in VOCABULARY.items():
        words = vocabulary.split()
        for i in range(per_category):
            path = f"{category}/p{i}.html"
            paragraphs = tuple(_text(rng, words, rng.randint(3, 6)) for _ in range(3))
            title = " ".join(rng.choice(words) for _ in range(3)).title()
            html = page(title, "en", paragraphs, headings=tuple(rng.choice(words).title() for _ in range(3)))
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(html, encoding="utf-8")
            labels[path] = category
    links = "".join(f'<li><a href="/{path}">{path}</a></li>' for path in labels)
    (root / "index.html").write_text(f"<!doctype html><html><head><title>Home</title></head><body>{NAV}"
                                     f"<ul>{links}</ul>{FOOTER}</body></html>\n", encoding="utf-8")
    return labels
