//! The WARC records of one fetch, byte for byte what harvestman.store.warc.WarcWriter._build_python
//! writes before its gzip: response (when there was one), request and metadata records.
//!
//! Everything here is plain Rust on borrowed text; `None` means "leave this fetch to the Python
//! writer" (a header outside Latin-1, a URI that is not plain printable http(s) ASCII, a record
//! over the one-shot gzip size), never an error.

use crate::digest::sha1_base32;

/// store/warc.py's _ONE_SHOT_MAX: records up to this size are gzipped in one call.
pub const ONE_SHOT_MAX: usize = 1024 * 1024;
const EMPTY_SHA1: &str = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ";
const FRAMING_HEADERS: [&str; 3] = ["content-encoding", "transfer-encoding", "content-length"];

/// One fetch, as the Python FetchResult and WarcWriter.write's arguments give it.
pub struct Fetch<'a> {
    /// The final URL (or the requested one when there is none).
    pub uri: &'a str,
    pub url: &'a str,
    pub remote_addr: &'a str,
    /// 0 when no response came.
    pub status: i64,
    /// The status's phrase, "" when it has none.
    pub reason: &'a str,
    pub headers: Vec<(&'a str, &'a str)>,
    pub body: &'a [u8],
    pub truncated: bool,
    /// The stop condition of a partial fetch ("kind:detail"), "" for a whole one.
    pub partial: &'a str,
    /// The body's digest when the caller has it, else "".
    pub payload_digest: &'a str,
    pub request_headers: Vec<(&'a str, &'a str)>,
    pub outlinks: Vec<&'a str>,
    /// dns, connect, tls, first byte, total: seconds.
    pub timings: [f64; 5],
    pub wire_bytes: String,
    pub attempt: String,
    /// (status, url, location) of each hop.
    pub redirects: Vec<(String, &'a str, &'a str)>,
    pub error: Option<(&'a str, &'a str)>,
    /// Record ids of the response, request and metadata records.
    pub ids: [&'a str; 3],
    /// The WARC-Date of every record of the fetch.
    pub date: &'a str,
}

/// A record before its gzip: the WARC head, then the block (an HTTP head and a body).
pub struct Record<'a> {
    pub head: Vec<u8>,
    pub block_head: Vec<u8>,
    pub body: &'a [u8],
}

impl Record<'_> {
    pub const END: &'static [u8] = b"\r\n\r\n";

    pub fn len(&self) -> usize {
        self.head.len() + self.block_head.len() + self.body.len() + Self::END.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// The record's bytes in `out`, which is `self.len()` long.
    pub fn write_to(&self, out: &mut [u8]) {
        let mut at = 0;
        for piece in [&self.head[..], &self.block_head, self.body, Self::END] {
            out[at..at + piece.len()].copy_from_slice(piece);
            at += piece.len();
        }
    }
}

fn record<'a>(fields: &str, block_head: Vec<u8>, body: &'a [u8]) -> Option<Record<'a>> {
    let length = block_head.len() + body.len();
    if length > ONE_SHOT_MAX {
        return None; // the Python writer streams it through its compressor: other gzip bytes
    }
    let head = format!("WARC/1.1\r\n{fields}Content-Length: {length}\r\n\r\n").into_bytes();
    Some(Record {
        head,
        block_head,
        body,
    })
}

/// `text` with CR and LF as spaces (store/warc.py's _clean), as UTF-8.
fn clean_utf8(text: &str, out: &mut String) {
    out.extend(
        text.chars()
            .map(|c| if c == '\r' || c == '\n' { ' ' } else { c }),
    );
}

/// `text` with CR and LF as spaces, as Latin-1; None when a character is above U+00FF.
fn clean_latin1(text: &str, out: &mut Vec<u8>) -> Option<()> {
    for c in text.chars() {
        let code = u8::try_from(u32::from(c)).ok()?;
        out.push(if code == b'\r' || code == b'\n' {
            b' '
        } else {
            code
        });
    }
    Some(())
}

/// Plain printable ASCII starting http:// or https://: where the Python writer's URI handling
/// (_uri_field, _split_target, _request_target) comes down to encoding spaces.
fn plain_http(uri: &str) -> bool {
    uri.bytes().all(|b| (0x20..0x7f).contains(&b))
        && (uri.starts_with("http://") || uri.starts_with("https://"))
}

/// The fetch's records, or None to leave the fetch to the Python writer.
pub fn records<'a>(f: &Fetch<'a>) -> Option<Vec<Record<'a>>> {
    if !plain_http(f.uri) {
        return None;
    }
    let [response_id, request_id, metadata_id] = f.ids;
    let mut common = format!(
        "WARC-Date: {}\r\nWARC-Target-URI: {}\r\n",
        f.date,
        f.uri.replace(' ', "%20")
    );
    if !f.remote_addr.is_empty() {
        common.push_str("WARC-IP-Address: ");
        clean_utf8(f.remote_addr, &mut common);
        common.push_str("\r\n");
    }
    let mut out = Vec::with_capacity(3);
    if f.status != 0 {
        out.push(response(f, response_id, &common)?);
        common.push_str(&format!("WARC-Concurrent-To: {response_id}\r\n"));
    }
    out.push(request(f, request_id, &common)?);
    out.push(metadata(f, metadata_id, &common)?);
    Some(out)
}

fn response<'a>(f: &Fetch<'a>, id: &str, common: &str) -> Option<Record<'a>> {
    let mut head = Vec::with_capacity(512);
    head.extend_from_slice(format!("HTTP/1.1 {}", f.status).as_bytes());
    if !f.reason.is_empty() {
        head.push(b' ');
        clean_latin1(f.reason, &mut head)?;
    }
    head.extend_from_slice(b"\r\n");
    for &(name, value) in &f.headers {
        // The stored body is content-decoded and whole: the wire's framing headers are renamed.
        if FRAMING_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            head.extend_from_slice(b"X-Harvestman-Original-");
        }
        clean_latin1(name, &mut head)?;
        head.extend_from_slice(b": ");
        clean_latin1(value, &mut head)?;
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(format!("Content-Length: {}\r\n\r\n", f.body.len()).as_bytes());
    let mut fields = format!("WARC-Type: response\r\nWARC-Record-ID: {id}\r\n{common}");
    if f.truncated {
        fields.push_str("WARC-Truncated: length\r\n");
    } else if !f.partial.is_empty() {
        // store/warc.py's _stopped: the kind as a WARC 1.1 future-reason token, the whole condition beside.
        let kind = f.partial.split(':').next().unwrap_or_default();
        fields.push_str("WARC-Truncated: stop-");
        clean_utf8(kind, &mut fields);
        fields.push_str("\r\nWARC-Stop-Condition: ");
        clean_utf8(f.partial, &mut fields);
        fields.push_str("\r\n");
    }
    let payload = if f.payload_digest.is_empty() {
        sha1_base32(&[f.body])
    } else {
        f.payload_digest.to_owned()
    };
    let block = sha1_base32(&[&head, f.body]);
    fields.push_str(&format!(
        "Content-Type: application/http; msgtype=response\r\n\
         WARC-Payload-Digest: {payload}\r\nWARC-Block-Digest: {block}\r\n"
    ));
    record(&fields, head, f.body)
}

/// The authority and the origin-form path with its query (fragment dropped, an empty query too)
/// of a plain_http URI, as store/warc.py's _split_target gives them.
fn split_target(uri: &str) -> (&str, String) {
    let start = if uri.starts_with("https://") { 8 } else { 7 };
    let end = uri[start..]
        .find(['/', '?', '#'])
        .map_or(uri.len(), |i| start + i);
    let rest = uri[end..].split('#').next().unwrap_or_default();
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut target = if path.is_empty() {
        "/".to_owned()
    } else {
        path.to_owned()
    };
    if !query.is_empty() {
        target.push('?');
        target.push_str(query);
    }
    (&uri[start..end], target)
}

fn request<'a>(f: &Fetch<'a>, id: &str, common: &str) -> Option<Record<'a>> {
    let (netloc, target) = split_target(f.uri);
    let mut head = format!("GET {} HTTP/1.1\r\n", target.replace(' ', "%20")).into_bytes();
    if !f
        .request_headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        // What the client sent: never the URL's user:password part.
        let host = netloc.rsplit_once('@').map_or(netloc, |(_, host)| host);
        head.extend_from_slice(format!("Host: {host}\r\n").as_bytes());
    }
    for &(name, value) in &f.request_headers {
        clean_latin1(name, &mut head)?;
        head.extend_from_slice(b": ");
        clean_latin1(value, &mut head)?;
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    let block = sha1_base32(&[&head]);
    let fields = format!(
        "WARC-Type: request\r\nWARC-Record-ID: {id}\r\n{common}\
         Content-Type: application/http; msgtype=request\r\n\
         WARC-Payload-Digest: {EMPTY_SHA1}\r\nWARC-Block-Digest: {block}\r\n"
    );
    record(&fields, head, &[])
}

fn metadata<'a>(f: &Fetch<'a>, id: &str, common: &str) -> Option<Record<'a>> {
    let mut meta = String::with_capacity(64 * f.outlinks.len() + 256);
    for link in &f.outlinks {
        meta.push_str("outlink: ");
        clean_utf8(link, &mut meta);
        meta.push_str("\r\n");
    }
    meta.push_str("requestedURL: ");
    clean_utf8(f.url, &mut meta);
    let [dns, connect, tls, first_byte, total] = f.timings;
    // Python's round(): halves to even; an integer, so -0.0 prints as 0.
    let ms = (total * 1000.0).round_ties_even();
    if !ms.is_finite() || ms.abs() >= 9e15 {
        return None;
    }
    meta.push_str(&format!(
        "\r\nfetchTimeMs: {}\r\ntimings: dns={dns:.6} connect={connect:.6} tls={tls:.6} \
         firstByte={first_byte:.6} total={total:.6}\r\nwireBytes: {}\r\nattempt: {}\r\n",
        ms as i64, f.wire_bytes, f.attempt
    ));
    for (status, url, location) in &f.redirects {
        meta.push_str(&format!("redirect: {status} "));
        clean_utf8(url, &mut meta);
        meta.push_str(" -> ");
        clean_utf8(location, &mut meta);
        meta.push_str("\r\n");
    }
    if let Some((class, message)) = f.error {
        meta.push_str("error: ");
        clean_utf8(class, &mut meta);
        meta.push_str(": ");
        clean_utf8(message, &mut meta);
        meta.push_str("\r\n");
    }
    let digest = sha1_base32(&[meta.as_bytes()]);
    let fields = format!(
        "WARC-Type: metadata\r\nWARC-Record-ID: {id}\r\n{common}\
         Content-Type: application/warc-fields\r\n\
         WARC-Payload-Digest: {digest}\r\nWARC-Block-Digest: {digest}\r\n"
    );
    record(&fields, meta.into_bytes(), &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetch<'a>(uri: &'a str, body: &'a [u8]) -> Fetch<'a> {
        Fetch {
            uri,
            url: uri,
            remote_addr: "127.0.0.1",
            status: 200,
            reason: "OK",
            headers: vec![("Content-Length", "3"), ("Server", "x")],
            body,
            truncated: false,
            partial: "",
            payload_digest: "",
            request_headers: vec![("User-Agent", "t")],
            outlinks: vec!["http://a.test/x"],
            timings: [0.0, 0.0, 0.0, 0.0, 0.0025],
            wire_bytes: "10".into(),
            attempt: "1".into(),
            redirects: vec![],
            error: None,
            ids: ["<r>", "<q>", "<m>"],
            date: "2023-11-14T22:13:20.123456Z",
        }
    }

    fn text(r: &Record) -> String {
        let mut out = vec![0; r.len()];
        r.write_to(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn three_records_in_order() {
        let recs = records(&fetch("http://a.test/p q?x=1#f", b"abc")).unwrap();
        let [resp, req, meta] = [text(&recs[0]), text(&recs[1]), text(&recs[2])];
        assert!(resp.starts_with("WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <r>\r\n"));
        assert!(resp.contains("WARC-Target-URI: http://a.test/p%20q?x=1#f\r\n"));
        assert!(
            resp.contains("\r\n\r\nHTTP/1.1 200 OK\r\nX-Harvestman-Original-Content-Length: 3\r\n")
        );
        assert!(resp.ends_with("Content-Length: 3\r\n\r\nabc\r\n\r\n"));
        assert!(req.contains("WARC-Concurrent-To: <r>\r\n"));
        assert!(req
            .contains("\r\n\r\nGET /p%20q?x=1 HTTP/1.1\r\nHost: a.test\r\nUser-Agent: t\r\n\r\n"));
        assert!(meta.contains("outlink: http://a.test/x\r\nrequestedURL: "));
        assert!(meta.contains("fetchTimeMs: 2\r\n")); // 2.5 rounds to even
    }

    #[test]
    fn targets_as_python_splits_them() {
        assert_eq!(split_target("http://a.test"), ("a.test", "/".to_owned()));
        assert_eq!(
            split_target("http://a.test?q#f"),
            ("a.test", "/?q".to_owned())
        );
        assert_eq!(
            split_target("https://u:p@a.test:8443/d?#f"),
            ("u:p@a.test:8443", "/d".to_owned())
        );
    }

    #[test]
    fn left_to_python() {
        assert!(records(&fetch("ftp://a.test/", b"")).is_none());
        assert!(records(&fetch("http://a.test/\u{fc}", b"")).is_none());
        let mut wide = fetch("http://a.test/", b"");
        wide.headers = vec![("X", "\u{65e5}")];
        assert!(records(&wide).is_none());
        let big = vec![b'x'; ONE_SHOT_MAX];
        assert!(records(&fetch("http://a.test/", &big)).is_none());
    }
}
