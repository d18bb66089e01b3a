"""A page's links survive the links table's text form, whatever their anchors hold."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harvestman.model.records import Link, LinkKind
from harvestman.store.linkcodec import decode_links, encode_links

URLS = st.from_regex(r"https?://[a-z0-9.]{1,20}(:[0-9]{2,5})?/[^\t\n\r]{0,40}", fullmatch=True)
LINKS = st.builds(Link, URLS, st.sampled_from(list(LinkKind)), st.text(max_size=30), st.booleans())


@given(st.lists(LINKS, max_size=20))
def test_links_round_trip(links: list[Link]) -> None:
    back = list(decode_links(encode_links(links)))
    want = [(link.url, link.anchor.replace("\t", " ").replace("\n", " ").replace("\r", " "), link.kind,
             link.nofollow) for link in links]
    assert back == want


def test_a_plain_link_is_its_url_alone() -> None:
    links = [Link("http://a.test/x"), Link("http://a.test/y", LinkKind.CANONICAL),
             Link("http://b.test/", anchor="B")]
    assert encode_links(links) == "http://a.test/x\nhttp://a.test/y\tcanonical\t0\t\nhttp://b.test/\ta\t0\tB"
    assert list(decode_links("")) == []
