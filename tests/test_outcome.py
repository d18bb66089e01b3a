"""How a fetch result becomes a URL state: Nutch's rules, retries, Retry-After."""

from __future__ import annotations

from harvestman.model.config import CrawlConfig
from harvestman.model.records import FetchResult, LeasedUrl, RedirectHop, UrlState
from harvestman.policy.outcome import decide

NOW = 1_800_000_000.0
CFG = CrawlConfig(retries=2).politeness  # decide reads its section only
URL = "http://a.test/"


def leased(retries: int = 0) -> LeasedUrl:
    return LeasedUrl(URL, "a.test", 0, retries, NOW + 300)


def result(status: int = 200, **kw: object) -> FetchResult:
    return FetchResult(url=URL, final_url=str(kw.pop("final_url", URL)), status=status, **kw)  # type: ignore[arg-type]


def test_success_is_fetched_with_a_signature() -> None:
    d = decide(result(200, body=b"hello"), leased(), NOW, CFG)
    assert d.outcome.state == UrlState.FETCHED and d.final and d.outcome.signature and not d.reason


def test_redirect_followed_marks_the_requested_url_and_names_the_target() -> None:
    hops = (RedirectHop(URL, 301, "http://a.test/new"),)
    d = decide(result(200, final_url="http://a.test/new", redirects=hops), leased(), NOW, CFG)
    assert d.outcome.state == UrlState.REDIRECT_PERM and d.outcome.final_url == "http://a.test/new"
    hops = (RedirectHop(URL, 302, "http://a.test/new"),)
    d = decide(result(200, final_url="http://a.test/new", redirects=hops), leased(), NOW, CFG)
    assert d.outcome.state == UrlState.REDIRECT_TEMP


def test_redirect_not_followed_names_where_it_points_and_titles_pass_through() -> None:
    moved = (("Location", " /new?x=1 "),)
    d = decide(result(301, headers=moved), leased(), NOW, CFG)
    assert d.outcome.state == UrlState.REDIRECT_PERM and d.outcome.final_url == "http://a.test/new?x=1"
    refused = decide(result(302, headers=(("Location", "http://elsewhere.test/"),),
                            error_class="redirect_refused", error_message="out of scope"), leased(), NOW, CFG)
    assert refused.outcome.state == UrlState.REDIRECT_TEMP
    assert refused.outcome.final_url == "http://elsewhere.test/"
    assert decide(result(302), leased(), NOW, CFG).outcome.final_url == ""  # no Location: nowhere
    # Resolved as the fetcher resolves a hop (the URL Standard), not as urljoin would.
    evil = decide(result(301, headers=(("Location", "/\\evil.test/x"),)), leased(), NOW, CFG)
    assert evil.outcome.final_url == "http://evil.test/x"
    nowhere = decide(result(301, headers=(("Location", "mailto:a@b.test"),)), leased(), NOW, CFG)
    assert nowhere.outcome.final_url == ""
    assert decide(result(200), leased(), NOW, CFG, title="Hi").outcome.title == "Hi"


def test_not_found_is_gone_not_modified_is_kept() -> None:
    assert decide(result(404), leased(), NOW, CFG).outcome.state == UrlState.GONE
    assert decide(result(304), leased(), NOW, CFG).outcome.state == UrlState.NOT_MODIFIED


def test_transient_errors_retry_with_backoff_then_give_up() -> None:
    timeout = result(0, error_class="timeout", error_message="deadline")
    first = decide(timeout, leased(0), NOW, CFG)
    assert first.outcome.state == UrlState.UNFETCHED and not first.final and first.outcome.retried
    assert first.outcome.next_fetch_time > NOW
    last = decide(timeout, leased(2), NOW, CFG)
    assert last.outcome.state == UrlState.GONE and last.final and "3 attempts" in last.reason


def test_permanent_errors_end_at_once() -> None:
    d = decide(result(0, error_class="blocked_address", error_message="127.0.0.1"), leased(), NOW, CFG)
    assert d.outcome.state == UrlState.GONE and d.final and not d.host_failed


def test_429_pauses_the_host_for_retry_after() -> None:
    d = decide(result(429, headers=(("Retry-After", "120"),)), leased(), NOW, CFG)
    assert d.pause_host_until == NOW + 120
    assert d.outcome.state == UrlState.UNFETCHED and d.outcome.next_fetch_time >= NOW + 120
    huge = decide(result(503, headers=(("Retry-After", "1000000000"),)), leased(), NOW, CFG)
    assert huge.pause_host_until == NOW + CFG.retry_after_cap


def test_a_truncated_body_is_fetched_but_flagged() -> None:
    d = decide(result(200, body=b"x" * 10, truncated=True), leased(), NOW, CFG)
    assert d.outcome.state == UrlState.FETCHED and d.outcome.error_class == "truncated" and not d.reason


def test_only_host_level_failures_count_towards_the_breaker() -> None:
    # The host could not be reached or answered that it is failing: its breaker counts it.
    for host_level in (result(0, error_class="timeout"), result(0, error_class="connect"),
                       result(0, error_class="dns"), result(500), result(503), result(429)):
        assert decide(host_level, leased(), NOW, CFG).host_failed, host_level
    # The host answered, but this URL is broken: retried, yet no evidence the host is down.
    for url_level in (result(0, error_class="protocol", error_message="curl error 18: partial file"),
                      result(0, error_class="framing"), result(0, error_class="fetch_error"),
                      result(0, error_class="content"), result(404), result(200)):
        assert not decide(url_level, leased(), NOW, CFG).host_failed, url_level
    short = decide(result(0, error_class="protocol"), leased(), NOW, CFG)
    assert not short.final and short.outcome.state == UrlState.UNFETCHED  # still retried


def test_a_transient_failure_backs_off_on_its_url_not_its_host() -> None:
    for failure in (result(0, error_class="timeout"), result(0, error_class="protocol"), result(500)):
        d = decide(failure, leased(1), NOW, CFG)
        assert d.pause_host_until == 0.0 and d.outcome.next_fetch_time > NOW
    # A host that asks for rest (429/503 with Retry-After) gets it, the URL waits as long.
    d = decide(result(503, headers=(("Retry-After", "3600"),)), leased(), NOW, CFG)
    assert d.pause_host_until == NOW + 3600 and d.outcome.next_fetch_time >= NOW + 3600
