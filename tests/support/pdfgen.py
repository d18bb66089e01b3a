"""Small, valid PDF files made by hand for tests and benchmarks: pages of text, link annotations and a
document-info title, with a correct cross-reference table (no PDF library needed to write them)."""

from __future__ import annotations

from collections.abc import Sequence


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: Sequence[Sequence[str]], *, title: str = "", links: Sequence[str] = ()) -> bytes:
    """A PDF whose page i shows the lines `pages[i]` (Helvetica) and, on the first page, one URI link
    annotation for each of `links`; `title` goes in the document information dictionary."""
    objects: list[bytes] = []  # object i+1

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below, once the page tree's number is known
    tree = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for number, lines in enumerate(pages):
        ops = ["BT", "/F1 11 Tf", "14 TL", "72 760 Td"]
        for line in lines:
            ops.append(f"({_escape(line)}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1", "replace")
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        annots = b""
        if number == 0 and links:
            refs = []
            for i, url in enumerate(links):
                y = 700 - 20 * i
                refs.append(add(
                    b"<< /Type /Annot /Subtype /Link /Rect [72 %d 300 %d] /Border [0 0 0] "
                    b"/A << /S /URI /URI (%s) >> >>" % (y, y + 14, _escape(url).encode("latin-1"))))
            annots = b" /Annots [" + b" ".join(b"%d 0 R" % r for r in refs) + b"]"
        kids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                        b"/Resources << /Font << /F1 %d 0 R >> >>%s >>" % (tree, content, font, annots)))
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % tree
    objects[tree - 1] = (b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids)
                         + b"] /Count %d >>" % len(kids))
    shown = _escape(title).encode("latin-1", "replace")
    info = add(b"<< /Title (%s) /Producer (harvestman tests) >>" % shown)
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += (b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n"
            % (len(objects) + 1, catalog, info, xref))
    return bytes(out)
