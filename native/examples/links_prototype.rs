//! A prototype of the next boundary (README, Benchmarks): a page's links in Rust, lol_html's
//! streaming tokenizer for the elements crawl/parse.py reads links from, ada-url (the WHATWG parser
//! the Python side uses too) to resolve them against the page's URL or its <base href>.
//!
//!     cargo run --release --example links_prototype --features links-prototype -- MANIFEST OUT [RUNS]
//!
//! MANIFEST: lines of `URL<TAB>FILE`. Writes OUT: for each page, `URL<TAB>link<TAB>link...` (http(s)
//! links, fragment dropped, in document order) and prints the CPU µs a page (best of RUNS).

use lol_html::{element, HtmlRewriter, Settings};
use std::cell::RefCell;
use std::io::Write;

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

fn thread_cpu_seconds() -> f64 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: a valid pointer to a timespec-shaped struct; CLOCK_THREAD_CPUTIME_ID is 3 on Linux.
    unsafe { clock_gettime(3, &mut ts) };
    ts.sec as f64 + ts.nsec as f64 * 1e-9
}

/// `href` resolved against `base` when the result is http(s), its fragment dropped.
fn resolve(href: &str, base: &str) -> Option<String> {
    let href = href.trim_matches(|c: char| c <= ' ');
    if href.is_empty() {
        return None;
    }
    let mut url = ada_url::Url::parse(href, Some(base)).ok()?;
    if !matches!(url.protocol(), "http:" | "https:") {
        return None;
    }
    url.set_hash(None);
    Some(url.href().to_owned())
}

fn links(page_url: &str, html: &[u8]) -> Vec<String> {
    let base = RefCell::new(page_url.to_owned());
    let found = RefCell::new(Vec::new());
    let take = |href: Option<String>| {
        if let Some(url) = href.and_then(|h| resolve(&h, &base.borrow())) {
            found.borrow_mut().push(url);
        }
    };
    let settings = Settings::new()
        .append_element_content_handler(element!("base[href]", |el| {
            if let Some(url) = el.get_attribute("href").and_then(|h| resolve(&h, page_url)) {
                *base.borrow_mut() = url;
            }
            Ok(())
        }))
        .append_element_content_handler(element!("a[href], area[href], link[href]", |el| {
            take(el.get_attribute("href"));
            Ok(())
        }))
        .append_element_content_handler(element!("frame[src], iframe[src]", |el| {
            take(el.get_attribute("src"));
            Ok(())
        }));
    let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
    rewriter.write(html).expect("in memory");
    rewriter.end().expect("in memory");
    found.into_inner()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let manifest = args
        .next()
        .expect("usage: links_prototype MANIFEST OUT [RUNS]");
    let out = args
        .next()
        .expect("usage: links_prototype MANIFEST OUT [RUNS]");
    let runs: usize = args
        .next()
        .map_or(7, |r| r.parse().expect("RUNS: a number"));
    let pages: Vec<(String, Vec<u8>)> = std::fs::read_to_string(manifest)
        .expect("a readable manifest")
        .lines()
        .map(|line| {
            let (url, file) = line.split_once('\t').expect("URL<TAB>FILE");
            (
                url.to_owned(),
                std::fs::read(file).expect("a readable page"),
            )
        })
        .collect();
    let mut best = f64::MAX;
    let mut all = Vec::new();
    for _ in 0..runs {
        let started = thread_cpu_seconds();
        all = pages.iter().map(|(url, html)| links(url, html)).collect();
        best = best.min(thread_cpu_seconds() - started);
    }
    let mut file = std::io::BufWriter::new(std::fs::File::create(out).expect("a writable file"));
    for ((url, _), found) in pages.iter().zip(&all) {
        writeln!(file, "{url}\t{}", found.join("\t")).expect("written");
    }
    println!(
        "lol_html + ada-url: {:.1} µs a page",
        best * 1e6 / pages.len() as f64
    );
}
