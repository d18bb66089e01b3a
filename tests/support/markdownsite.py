"""A small documentation site for the Markdown export, written for nginx: a Sphinx-shaped page (its
content marked `role=main`, a navigation bar, a sidebar, a footer, permalinks in the headings, code
in a `highlight-python` wrapper), a DocBook-shaped page with no content element (`navheader` and
`navfooter` around it) and a `<base href>`, and an index linking them."""

from __future__ import annotations

from pathlib import Path

CODE = 'def greet(name):\n    """Say hello."""\n\n    return f"hello {name}"\n'
SQL = "SELECT title, price\n  FROM books\n\n WHERE price < 10;\n"

GUIDE = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Guide to greeting</title>
<script>var tracking = "trackingcode";</script></head><body>
<div class="related" role="navigation"><h3>Navigation</h3><ul><li><a href="/">index</a></li>
<li><a href="/api/ref.html">next</a></li></ul></div>
<div class="document"><div class="body" role="main">
<h1>Guide to greeting<a class="headerlink" href="#guide" title="Permalink">¶</a></h1>
<p>This guide shows how to greet people politely. See the <a href="../api/ref.html">reference</a>
and the <a href="#usage">usage section</a>.</p>
<h2 id="install">Installing<a class="headerlink" href="#install">¶</a></h2>
<p>Install the package with your usual tools before greeting anyone.</p>
<ul><li>Download the archive.</li><li>Unpack it:<ul><li>on Linux with tar,</li>
<li>elsewhere with zip.</li></ul></li></ul>
<h2 id="usage">Usage<a class="headerlink" href="#usage">¶</a></h2>
<p>Call the function with a name:</p>
<div class="highlight-python notranslate"><div class="highlight"><pre>{CODE}</pre></div></div>
<h3 id="options">Options<a class="headerlink" href="#options">¶</a></h3>
<table class="docutils"><thead><tr><th>Option</th><th>Meaning</th></tr></thead>
<tbody><tr><td>loud</td><td>greet in capitals</td></tr><tr><td>quiet</td><td>greet in a whisper</td></tr>
</tbody></table>
<p>An image: <img src="img/wave.png" alt="a waving hand"></p>
</div></div>
<div class="sphinxsidebar" role="navigation"><h3>Quick search</h3><form><input name="q"></form>
<h3>This page</h3><p>Sidebar words nobody wants.</p></div>
<div class="footer">Copyright 2026 The Greeting Project.</div>
</body></html>
"""

REFERENCE = f"""<!doctype html><html><head><meta charset="utf-8"><title>Reference: books</title>
<base href="/api/v2/"></head><body>
<div class="navheader"><table><tr><th>Reference</th></tr><tr><td><a href="/">Prev</a></td>
<td><a href="/guide/greeting.html">Next</a></td></tr></table><hr></div>
<div class="sect1"><h2 class="title">Querying books</h2>
<p>The books table is queried with plain SQL; the <a href="tables.html">table list</a> names every
column.</p>
<pre class="programlisting">{SQL}</pre>
<div class="table"><table><thead><tr><th>Column</th><th>Type</th></tr></thead>
<tbody><tr><td>title</td><td>text</td></tr><tr><td>price</td><td>numeric</td></tr></tbody></table></div>
<h3>Limits</h3><p>A query returns at most ten thousand rows.</p></div>
<div class="navfooter"><hr><table><tr><td><a href="/">Home</a></td></tr></table></div>
</body></html>
"""

INDEX = """<!doctype html><html><head><title>Docs home</title></head><body>
<nav><a href="/">Home</a></nav><main><h1>Docs home</h1><p>Read the
<a href="/guide/greeting.html">guide</a> and the <a href="/api/ref.html">reference</a>.</p></main>
</body></html>
"""


def write_markdown_site(root: Path) -> dict[str, str]:
    """The site's pages under `root`; path -> HTML."""
    pages = {"index.html": INDEX, "guide/greeting.html": GUIDE, "api/ref.html": REFERENCE}
    for name, html in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(html, encoding="utf-8")
    return pages
