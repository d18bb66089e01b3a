"""pypdf against pdfminer.six on generated PDFs: title, URI links and (optionally) text, per document.

Run: .venv/bin/python bench/pdf_parsers.py   (needs `pip install pdfminer.six` for the comparison;
pypdf is a dependency). Prints milliseconds a document for each library and document size.
"""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.pdfgen import make_pdf

LINKS = [f"http://docs.test/page{i}.html" for i in range(10)]


def _doc(pages: int) -> bytes:
    lines = [f"Line {i}: the quick brown fox jumps over the lazy dog, again and again." for i in range(45)]
    return make_pdf([lines] * pages, title="A generated document", links=LINKS)


def with_pypdf(data: bytes, text: bool) -> tuple[str, int, int]:
    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(data))
    title = (reader.metadata.title if reader.metadata else "") or ""
    links = 0
    chars = 0
    for page in reader.pages:
        for annot in page.get("/Annots") or []:
            action = annot.get_object().get("/A")
            if action is not None and action.get("/URI"):
                links += 1
        if text:
            chars += len(page.extract_text())
    return title, links, chars


def with_pdfminer(data: bytes, text: bool) -> tuple[str, int, int]:
    from pdfminer.converter import TextConverter
    from pdfminer.layout import LAParams
    from pdfminer.pdfdocument import PDFDocument
    from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser
    from pdfminer.pdftypes import resolve1

    document = PDFDocument(PDFParser(io.BytesIO(data)))
    info = document.info[0] if document.info else {}
    raw = resolve1(info.get("Title", b""))
    title = raw.decode("latin-1") if isinstance(raw, bytes) else str(raw)
    links = 0
    out = io.StringIO()
    manager = PDFResourceManager()
    device = TextConverter(manager, out, laparams=LAParams()) if text else None
    interpreter = PDFPageInterpreter(manager, device) if device else None
    for page in PDFPage.create_pages(document):
        for annot in resolve1(page.annots) or []:
            action = resolve1(resolve1(annot).get("A"))
            if action and action.get("URI"):
                links += 1
        if interpreter is not None:
            interpreter.process_page(page)
    return title, links, len(out.getvalue())


def main() -> None:
    """Print ms a document for each library, document size and task."""
    for pages in (1, 10, 50):
        data = _doc(pages)
        for text in (False, True):
            for name, parse in (("pypdf", with_pypdf), ("pdfminer.six", with_pdfminer)):
                try:
                    parse(data, text)
                except ImportError:
                    print(f"{name}: not installed")
                    continue
                rounds = max(3, 60 // pages)
                start = time.perf_counter()
                for _ in range(rounds):
                    got = parse(data, text)
                ms = (time.perf_counter() - start) / rounds * 1000
                task = "title+links+text" if text else "title+links"
                print(f"{pages:3d} pages {len(data) // 1024:5d} KiB  {task:17s} {name:13s} {ms:8.2f} ms"
                      f"  ({got[1]} links, {got[2]} chars)")


if __name__ == "__main__":
    main()
