//! harvestman's compiled core, imported by the Python package as `harvestman._core` (see
//! harvestman.model.core, which chooses between it and the pure-Python path). The Python
//! implementation stays the reference: each entry point here returns what its Python counterpart
//! returns, or None for the inputs it leaves to Python.

mod charref;
mod digest;
mod entities;
pub mod parse;
pub mod warc;

use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};
use std::collections::HashMap;

/// The WARC records of one fetch, built and gzipped in one call: WarcWriter._build_python's bytes.
#[pyclass(frozen)]
struct WarcRecords {
    /// The Python writer's own gzip function (isal_zlib.compress or zlib.compress), so that each
    /// gzip member is byte for byte the one Python makes; no Rust crate beat ISA-L at its ratio
    /// (bench/gzip_choice.py, README: Benchmarks).
    compress: Py<PyAny>,
    /// Status code to reason phrase, as http.HTTPStatus has them.
    reasons: HashMap<i64, String>,
}

/// str of a Python object, None when it is not a str.
fn text<'py>(o: Bound<'py, PyAny>) -> Option<Bound<'py, PyString>> {
    o.cast_into::<PyString>().ok()
}

/// (name, value) header pairs of str.
type Pairs<'py> = Vec<(Bound<'py, PyString>, Bound<'py, PyString>)>;

/// Header pairs (name, value) of str, None when one is not.
fn pairs<'py>(o: &Bound<'py, PyAny>) -> PyResult<Option<Pairs<'py>>> {
    let mut out = Vec::new();
    for item in o.try_iter()? {
        let Ok(pair) = item?.cast_into::<PyTuple>() else {
            return Ok(None);
        };
        if pair.len() != 2 {
            return Ok(None);
        }
        let (Some(name), Some(value)) = (text(pair.get_item(0)?), text(pair.get_item(1)?)) else {
            return Ok(None);
        };
        out.push((name, value));
    }
    Ok(Some(out))
}

/// str() of an int field (an int of i64 range is formatted here, anything else by Python).
fn int_text(o: &Bound<'_, PyAny>) -> PyResult<String> {
    match o.extract::<i64>() {
        Ok(n) => Ok(n.to_string()),
        Err(_) => Ok(o.str()?.to_str()?.to_owned()),
    }
}

/// Borrow the str pairs as &str pairs; None when one is not valid UTF-8 (a lone surrogate).
fn borrowed<'a>(
    pairs: &'a [(Bound<'_, PyString>, Bound<'_, PyString>)],
) -> Option<Vec<(&'a str, &'a str)>> {
    pairs
        .iter()
        .map(|(n, v)| Some((n.to_str().ok()?, v.to_str().ok()?)))
        .collect()
}

macro_rules! or_leave {
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return Ok(None),
        }
    };
}

#[pymethods]
impl WarcRecords {
    #[new]
    fn new(compress: Py<PyAny>, reasons: &Bound<'_, PyDict>) -> PyResult<Self> {
        let reasons = reasons.extract::<HashMap<i64, String>>()?;
        Ok(WarcRecords { compress, reasons })
    }

    /// The gzipped records of one fetch (response, request, metadata), or None to leave it to Python.
    #[allow(clippy::too_many_arguments)]
    fn fetch<'py>(
        &self,
        py: Python<'py>,
        result: &Bound<'py, PyAny>,
        request_headers: &Bound<'py, PyAny>,
        outlinks: &Bound<'py, PyAny>,
        payload_digest: &str,
        level: i32,
        ids: (String, String, String),
        date: &str,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let mut links = Vec::new();
        for link in outlinks.try_iter()? {
            links.push(or_leave!(text(link?)));
        }
        let links: Vec<&str> = or_leave!(links.iter().map(|l| l.to_str().ok()).collect());
        self.build(
            py,
            result,
            request_headers,
            &links,
            payload_digest,
            level,
            ids,
            date,
        )
    }
}

impl WarcRecords {
    /// WarcRecords.fetch with the outlinks as text.
    #[allow(clippy::too_many_arguments)]
    fn build<'py>(
        &self,
        py: Python<'py>,
        result: &Bound<'py, PyAny>,
        request_headers: &Bound<'py, PyAny>,
        outlinks: &[&str],
        payload_digest: &str,
        level: i32,
        ids: (String, String, String),
        date: &str,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let get = |name: &Bound<'py, PyString>| result.getattr(name);
        if !get(intern!(py, "rendering"))?.is_none() {
            return Ok(None); // conversion and resource records: the Python writer's
        }
        let url = or_leave!(text(get(intern!(py, "url"))?));
        let final_url = or_leave!(text(get(intern!(py, "final_url"))?));
        let addr = or_leave!(text(get(intern!(py, "remote_addr"))?));
        let partial = or_leave!(text(get(intern!(py, "partial"))?));
        let status: i64 = get(intern!(py, "status"))?.extract()?;
        let body_obj = get(intern!(py, "body"))?;
        let body = or_leave!(body_obj.cast::<PyBytes>().ok()).as_bytes();
        let headers = or_leave!(pairs(&get(intern!(py, "headers"))?)?);
        let sent = or_leave!(pairs(request_headers)?);
        let timings = get(intern!(py, "timings"))?;
        let mut times = [0.0; 5];
        for (slot, name) in times
            .iter_mut()
            .zip(["dns", "connect", "tls", "first_byte", "total"])
        {
            *slot = timings.getattr(name)?.extract()?;
        }
        let mut hops = Vec::new();
        for hop in get(intern!(py, "redirects"))?.try_iter()? {
            let hop = hop?;
            hops.push((
                int_text(&hop.getattr(intern!(py, "status"))?)?,
                or_leave!(text(hop.getattr(intern!(py, "url"))?)),
                or_leave!(text(hop.getattr(intern!(py, "location"))?)),
            ));
        }
        let error_class = or_leave!(text(get(intern!(py, "error_class"))?));
        let error_message = or_leave!(text(get(intern!(py, "error_message"))?));

        let url_str = or_leave!(url.to_str().ok());
        let final_str = or_leave!(final_url.to_str().ok());
        let error_str = or_leave!(error_class.to_str().ok());
        let fetch = warc::Fetch {
            uri: if final_str.is_empty() {
                url_str
            } else {
                final_str
            },
            url: url_str,
            remote_addr: or_leave!(addr.to_str().ok()),
            status,
            reason: self.reasons.get(&status).map_or("", String::as_str),
            headers: or_leave!(borrowed(&headers)),
            body,
            truncated: get(intern!(py, "truncated"))?.is_truthy()?,
            partial: or_leave!(partial.to_str().ok()),
            payload_digest,
            request_headers: or_leave!(borrowed(&sent)),
            outlinks: outlinks.to_vec(),
            timings: times,
            wire_bytes: int_text(&get(intern!(py, "wire_bytes"))?)?,
            attempt: int_text(&get(intern!(py, "attempt"))?)?,
            redirects: or_leave!(hops
                .iter()
                .map(|(s, u, l)| Some((s.clone(), u.to_str().ok()?, l.to_str().ok()?)))
                .collect()),
            error: if error_str.is_empty() {
                None
            } else {
                Some((error_str, or_leave!(error_message.to_str().ok())))
            },
            ids: [&ids.0, &ids.1, &ids.2],
            date,
        };
        let records = or_leave!(warc::records(&fetch));
        let compress = self.compress.bind(py);
        let mut members = Vec::with_capacity(records.len());
        let mut total = 0;
        for record in &records {
            let raw = PyBytes::new_with(py, record.len(), |out| {
                record.write_to(out);
                Ok(())
            })?;
            let member = compress
                .call1((raw, level, 31))?
                .cast_into::<PyBytes>()
                .map_err(|_| PyTypeError::new_err("the compress function must return bytes"))?;
            total += member.as_bytes().len();
            members.push(member);
        }
        if let [one] = &members[..] {
            return Ok(Some(one.clone()));
        }
        let joined = PyBytes::new_with(py, total, |out| {
            let mut at = 0;
            for member in &members {
                let bytes = member.as_bytes();
                out[at..at + bytes.len()].copy_from_slice(bytes);
                at += bytes.len();
            }
            Ok(())
        })?;
        Ok(Some(joined))
    }
}

/// A page's parse (parse.rs): crawl/parse.py's ParsedPage fields, its links as the Python Link
/// records, for the pages the tokenizer answers as Lexbor's tree does.
#[pyclass(frozen)]
struct PageParser {
    /// The Link record type (a NamedTuple) and tuple.__new__, which builds one without the
    /// NamedTuple's Python-level __new__.
    link: Py<PyAny>,
    new_tuple: Py<PyAny>,
    /// The LinkKind members in parse::Kind's order.
    kinds: Vec<Py<PyAny>>,
}

#[pymethods]
impl PageParser {
    #[new]
    fn new(py: Python<'_>, link: Py<PyAny>, kinds: Vec<Py<PyAny>>) -> PyResult<Self> {
        let new_tuple = py.get_type::<PyTuple>().getattr("__new__")?.unbind();
        Ok(PageParser {
            link,
            new_tuple,
            kinds,
        })
    }

    /// (title, description, language, links, noindex, nofollow, base_url) of an HTML page, as
    /// parse_html(text, url, max_links=max_links, with_text=False, anchors=False) has them, or
    /// None to leave the page to Python.
    fn parse<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'py, PyString>,
        url: &Bound<'py, PyString>,
        max_links: usize,
    ) -> PyResult<Option<Parsed<'py>>> {
        let (Ok(html), Ok(url)) = (text.to_str(), url.to_str()) else {
            return Ok(None); // lone surrogates: Python replaces them
        };
        let Some(page) = parse::parse(html, url, max_links) else {
            return Ok(None);
        };
        Ok(Some(self.fields(py, page)?))
    }
}

/// PageParser.parse's answer: ParsedPage's fields in its order, the links as Link records.
type Parsed<'py> = (
    String,
    String,
    String,
    Bound<'py, PyTuple>,
    bool,
    bool,
    String,
);

impl PageParser {
    fn fields<'py>(&self, py: Python<'py>, page: parse::Page) -> PyResult<Parsed<'py>> {
        let (link, new_tuple) = (self.link.bind(py), self.new_tuple.bind(py));
        let empty = PyString::new(py, "");
        let mut links = Vec::with_capacity(page.links.len());
        for (url, kind, nofollow) in page.links {
            let fields = (url, self.kinds[kind as usize].bind(py), &empty, nofollow);
            links.push(new_tuple.call1((link, fields))?);
        }
        Ok((
            page.title,
            page.description,
            page.language,
            PyTuple::new(py, links)?,
            page.noindex,
            page.nofollow,
            page.base_url,
        ))
    }
}

/// The measured prototype of the next boundary (README: Benchmarks, issue 33), not on the crawl's
/// path: a fetched HTML page in one call, its signature, its parse and its WARC records, where the
/// crawl makes three calls with Python between. Its records' outlinks are the page's followed links
/// unscoped (scope stays in Python); bench/core_page.py measures it against the three calls.
#[pyclass(frozen)]
struct PagePath {
    warc: Py<WarcRecords>,
    parser: Py<PageParser>,
}

#[pymethods]
impl PagePath {
    #[new]
    fn new(warc: Py<WarcRecords>, parser: Py<PageParser>) -> Self {
        PagePath { warc, parser }
    }

    /// (signature, parse_html's fields, the gzipped records) of a fetched HTML page whose records
    /// list its followed links (not nofollow) as outlinks, or None where either core call would
    /// leave the page to Python.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn page<'py>(
        &self,
        py: Python<'py>,
        result: &Bound<'py, PyAny>,
        request_headers: &Bound<'py, PyAny>,
        max_links: usize,
        level: i32,
        ids: (String, String, String),
        date: &str,
    ) -> PyResult<Option<(String, Parsed<'py>, Bound<'py, PyBytes>)>> {
        let body_obj = result.getattr(intern!(py, "body"))?;
        let body = or_leave!(body_obj.cast::<PyBytes>().ok()).as_bytes();
        let text_obj = or_leave!(text(result.getattr(intern!(py, "text"))?));
        let url_obj = or_leave!(text(result.getattr(intern!(py, "final_url"))?));
        let (Ok(html), Ok(url)) = (text_obj.to_str(), url_obj.to_str()) else {
            return Ok(None);
        };
        let page = or_leave!(parse::parse(html, url, max_links));
        let followed = page.followed();
        let signature = if body.is_empty() {
            String::new()
        } else {
            digest::sha1_base32(&[body])
        };
        let warc = self.warc.get();
        let records = or_leave!(warc.build(
            py,
            result,
            request_headers,
            &followed,
            &signature,
            level,
            ids,
            date
        )?);
        Ok(Some((
            signature,
            self.parser.get().fields(py, page)?,
            records,
        )))
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    // A digest of the sources this build came from (build.rs): harvestman.model.core compares it
    // with the checkout's, so that an editable install never runs a core older than its source.
    m.add("SOURCE_DIGEST", env!("SOURCE_DIGEST"))?;
    m.add_class::<WarcRecords>()?;
    m.add_class::<PageParser>()?;
    m.add_class::<PagePath>()?;
    Ok(())
}
