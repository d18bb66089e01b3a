/* harvestman's optional native core: the WARC records of one fetch in one call.
 *
 * warc_fetch() builds what harvestman.store.warc.WarcWriter._build() builds for a fetch (response,
 * request and metadata records, each one gzip member) and returns the same bytes, or None for the
 * rare fetches it leaves to the Python writer (a rendered page, a URI that is not plain printable
 * ASCII http(s), a header outside Latin-1, a record over the one-shot size, a failed encode). The
 * gzip is the Python writer's own compressor (isal_zlib.compress or zlib.compress, given once to
 * configure()), so the members are byte for byte the ones Python makes; SHA-1 is OpenSSL's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define ABI 1
#define ONE_SHOT_MAX (1024 * 1024) /* store/warc.py's _ONE_SHOT_MAX */
#define GZIP_WBITS (15 + 16)

/* -- a growable byte buffer ------------------------------------------------------------------ */

typedef struct {
    char *p;
    Py_ssize_t n, cap;
} buf;

static int grow(buf *b, Py_ssize_t add) {
    if (b->n + add <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + add) cap *= 2;
    char *p = PyMem_Realloc(b->p, cap);
    if (!p) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static int put(buf *b, const char *s, Py_ssize_t n) {
    if (grow(b, n) < 0) return -1;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

static int puts_(buf *b, const char *s) { return put(b, s, (Py_ssize_t)strlen(s)); }

static int fmt(buf *b, const char *format, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(tmp, sizeof tmp, format, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof tmp) {
        PyErr_SetString(PyExc_ValueError, "field too long");
        return -1;
    }
    return put(b, tmp, n);
}

static void freebuf(buf *b) {
    PyMem_Free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* Results of the text writers: 0 written, -1 a Python error, -2 leave the fetch to Python. */
#define FALLBACK (-2)

/* A str as UTF-8 with CR and LF as spaces (_clean); UTF-8 continuation bytes are never < 0x80. */
static int put_clean_utf8(buf *b, PyObject *s) {
    if (!PyUnicode_Check(s)) return FALLBACK;
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (!u) {
        PyErr_Clear();
        return FALLBACK;
    }
    if (grow(b, n) < 0) return -1;
    char *out = b->p + b->n;
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = u[i];
        out[i] = (c == '\r' || c == '\n') ? ' ' : c;
    }
    b->n += n;
    return 0;
}

/* A str as Latin-1 with CR and LF as spaces; FALLBACK when a character is above U+00FF. */
static int put_clean_latin1(buf *b, PyObject *s) {
    if (!PyUnicode_Check(s)) return FALLBACK;
    if (PyUnicode_KIND(s) != PyUnicode_1BYTE_KIND) return FALLBACK;
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    const Py_UCS1 *u = PyUnicode_1BYTE_DATA(s);
    if (grow(b, n) < 0) return -1;
    char *out = b->p + b->n;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS1 c = u[i];
        out[i] = (c == '\r' || c == '\n') ? ' ' : (char)c;
    }
    b->n += n;
    return 0;
}

static int ascii_ieq(PyObject *s, const char *lower) {
    if (!PyUnicode_Check(s) || PyUnicode_KIND(s) != PyUnicode_1BYTE_KIND) return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (n != (Py_ssize_t)strlen(lower)) return 0;
    const Py_UCS1 *u = PyUnicode_1BYTE_DATA(s);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS1 c = u[i];
        if (c >= 'A' && c <= 'Z') c = (Py_UCS1)(c + 32);
        if (c != (Py_UCS1)lower[i]) return 0;
    }
    return 1;
}

/* str(obj) appended as UTF-8 (ints and the like, as an f-string formats them). */
static int put_str(buf *b, PyObject *o) {
    if (PyLong_CheckExact(o)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (!overflow && !(v == -1 && PyErr_Occurred())) return fmt(b, "%lld", v);
        PyErr_Clear();
    }
    PyObject *s = PyObject_Str(o);
    if (!s) return -1;
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    int rc = u ? put(b, u, n) : -1;
    Py_DECREF(s);
    return rc;
}

/* -- digests and ids -------------------------------------------------------------------------- */

static const char B32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/* "sha1:" and the Base32 of a 20-byte digest: fetch.content.sha1_base32's form (37 characters). */
static void b32_digest(const unsigned char d[20], char out[38]) {
    memcpy(out, "sha1:", 5);
    int bit = 0;
    for (int i = 0; i < 32; i++, bit += 5) {
        int byte = bit >> 3, off = bit & 7;
        unsigned v = ((unsigned)d[byte] << 8) | (byte + 1 < 20 ? d[byte + 1] : 0);
        out[5 + i] = B32[(v >> (11 - off)) & 31];
    }
    out[37] = 0;
}

static void sha1_two(const char *a, Py_ssize_t na, const char *c, Py_ssize_t nc, char out[38]) {
    SHA_CTX ctx;
    unsigned char d[20];
    SHA1_Init(&ctx);
    if (na) SHA1_Update(&ctx, a, (size_t)na);
    if (nc) SHA1_Update(&ctx, c, (size_t)nc);
    SHA1_Final(d, &ctx);
    b32_digest(d, out);
}

/* Record ids need be unique, not secret (as store/warc.py's _record_ids): xoshiro256** seeded from
 * getrandom(), seeded again in a forked child. */
static uint64_t rng_s[4];
static pid_t rng_pid = -1;

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(void) {
    uint64_t result = rotl(rng_s[1] * 5, 7) * 9, t = rng_s[1] << 17;
    rng_s[2] ^= rng_s[0];
    rng_s[3] ^= rng_s[1];
    rng_s[1] ^= rng_s[2];
    rng_s[0] ^= rng_s[3];
    rng_s[2] ^= t;
    rng_s[3] = rotl(rng_s[3], 45);
    return result;
}

static int rng_ready(void) {
    pid_t pid = getpid();
    if (pid == rng_pid) return 0;
    if (getrandom(rng_s, sizeof rng_s, 0) != (ssize_t)sizeof rng_s) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    rng_pid = pid;
    return 0;
}

/* "<urn:uuid:...>" (47 characters), a random version 4 UUID. */
static void record_id(char out[48]) {
    unsigned char raw[16];
    uint64_t a = rng_next(), c = rng_next();
    memcpy(raw, &a, 8);
    memcpy(raw + 8, &c, 8);
    raw[6] = (raw[6] & 0x0F) | 0x40;
    raw[8] = (raw[8] & 0x3F) | 0x80;
    static const char hex[] = "0123456789abcdef";
    char *o = out;
    memcpy(o, "<urn:uuid:", 10);
    o += 10;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) *o++ = '-';
        *o++ = hex[raw[i] >> 4];
        *o++ = hex[raw[i] & 15];
    }
    *o++ = '>';
    *o = 0;
}

/* -- configuration ---------------------------------------------------------------------------- */

static PyObject *compress_fn;   /* the writer's _deflate.compress */
static PyObject *reasons;       /* {status: phrase} as http.HTTPStatus has them */

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *fn, *table;
    if (!PyArg_ParseTuple(args, "OO!", &fn, &PyDict_Type, &table)) return NULL;
    Py_INCREF(fn);
    Py_XSETREF(compress_fn, fn);
    Py_INCREF(table);
    Py_XSETREF(reasons, table);
    Py_RETURN_NONE;
}

/* -- records ---------------------------------------------------------------------------------- */

/* "WARC/1.1", the fields, Content-Length, the block (two pieces) and the end, gzipped in one call. */
static PyObject *record(const buf *fields, const char *a, Py_ssize_t na, const char *c, Py_ssize_t nc,
                        PyObject *level) {
    char cl[64];
    int ncl = snprintf(cl, sizeof cl, "Content-Length: %zd\r\n\r\n", na + nc);
    Py_ssize_t total = 10 + fields->n + ncl + na + nc + 4;
    PyObject *raw = PyBytes_FromStringAndSize(NULL, total);
    if (!raw) return NULL;
    char *o = PyBytes_AS_STRING(raw);
    memcpy(o, "WARC/1.1\r\n", 10);
    o += 10;
    memcpy(o, fields->p, fields->n);
    o += fields->n;
    memcpy(o, cl, ncl);
    o += ncl;
    if (na) memcpy(o, a, na);
    o += na;
    if (nc) memcpy(o, c, nc);
    o += nc;
    memcpy(o, "\r\n\r\n", 4);
    PyObject *wbits = PyLong_FromLong(GZIP_WBITS);
    if (!wbits) {
        Py_DECREF(raw);
        return NULL;
    }
    PyObject *argv[3] = {raw, level, wbits};
    PyObject *out = PyObject_Vectorcall(compress_fn, argv, 3, NULL);
    Py_DECREF(raw);
    Py_DECREF(wbits);
    return out;
}

static int get_double(PyObject *o, const char *name, double *out) {
    PyObject *v = PyObject_GetAttrString(o, name);
    if (!v) return -1;
    *out = PyFloat_AsDouble(v);
    Py_DECREF(v);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

#define TRY(x)                  \
    do {                        \
        int rc_ = (x);          \
        if (rc_ < 0) {          \
            rc = rc_;           \
            goto done;          \
        }                       \
    } while (0)

/* The fields every record of the fetch shares after its type and id (see WarcWriter._build). */
static int common_fields(buf *b, double ts, PyObject *uri, PyObject *addr) {
    if (ts == 0.0) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        ts = (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
    }
    long long second = (long long)ts;
    time_t t = (time_t)second;
    struct tm tm;
    char date[64];
    if (!gmtime_r(&t, &tm) || !strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm)) return FALLBACK;
    long long micro = (long long)((ts - (double)second) * 1000000.0);
    if (fmt(b, "WARC-Date: %s.%06lldZ\r\nWARC-Target-URI: ", date, micro) < 0) return -1;
    /* _uri_field: the URI is printable ASCII here, so a space is all there is to encode. */
    Py_ssize_t n = PyUnicode_GET_LENGTH(uri);
    const Py_UCS1 *u = PyUnicode_1BYTE_DATA(uri);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (u[i] == ' ') {
            if (put(b, "%20", 3) < 0) return -1;
        } else if (put(b, (const char *)u + i, 1) < 0) {
            return -1;
        }
    }
    if (put(b, "\r\n", 2) < 0) return -1;
    if (PyObject_IsTrue(addr)) {
        if (puts_(b, "WARC-IP-Address: ") < 0) return -1;
        int rc = put_clean_utf8(b, addr);
        if (rc < 0) return rc;
        if (put(b, "\r\n", 2) < 0) return -1;
    }
    return 0;
}

/* Plain printable ASCII starting http:// or https:// (what authority_span takes, minus non-ASCII). */
static int plain_http(PyObject *uri) {
    if (!PyUnicode_Check(uri) || !PyUnicode_IS_ASCII(uri)) return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(uri);
    const char *u = (const char *)PyUnicode_1BYTE_DATA(uri);
    for (Py_ssize_t i = 0; i < n; i++)
        if (u[i] < 0x20 || u[i] == 0x7f) return 0;
    return (n >= 7 && memcmp(u, "http://", 7) == 0) || (n >= 8 && memcmp(u, "https://", 8) == 0);
}

static PyObject *attr(PyObject *o, const char *name) { return PyObject_GetAttrString(o, name); }

static PyObject *warc_fetch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "warc_fetch(result, request_headers, outlinks, payload_digest, level, ids)");
        return NULL;
    }
    if (!compress_fn || !reasons) {
        PyErr_SetString(PyExc_RuntimeError, "configure() first");
        return NULL;
    }
    PyObject *result = args[0], *req_headers = args[1], *outlinks = args[2], *given_digest = args[3];
    PyObject *level = args[4], *ids = args[5];
    PyObject *out = NULL;
    int rc = 0;
    buf common = {0}, fields = {0}, head = {0}, meta = {0};
    PyObject *uri = NULL, *url = NULL, *rendering = NULL, *addr = NULL, *status_o = NULL, *body = NULL,
             *headers = NULL, *truncated = NULL, *partial = NULL, *timings = NULL, *wire = NULL,
             *attempt = NULL, *redirects = NULL, *error_class = NULL, *error_message = NULL,
             *rec[3] = {NULL, NULL, NULL}, *links = NULL, *req = NULL;
    int nrec = 0;
    char id_buf[3][48];
    const char *id[3];

    if (!(rendering = attr(result, "rendering"))) goto error;
    if (rendering != Py_None) goto fallback;
    if (!(url = attr(result, "url")) || !(uri = attr(result, "final_url"))) goto error;
    if (!PyObject_IsTrue(uri)) Py_SETREF(uri, Py_NewRef(url));
    if (!plain_http(uri)) goto fallback;
    if (ids == Py_None) {
        if (rng_ready() < 0) goto error;
        for (int i = 0; i < 3; i++) {
            record_id(id_buf[i]);
            id[i] = id_buf[i];
        }
    } else {
        if (!PyTuple_Check(ids) || PyTuple_GET_SIZE(ids) != 3) {
            PyErr_SetString(PyExc_TypeError, "ids: a tuple of 3 str");
            goto error;
        }
        for (int i = 0; i < 3; i++)
            if (!(id[i] = PyUnicode_AsUTF8(PyTuple_GET_ITEM(ids, i)))) goto error;
    }
    const char *response_id = id[0], *request_id = id[1], *metadata_id = id[2];

    double started;
    if (get_double(result, "started_at", &started) < 0) goto error;
    if (!(addr = attr(result, "remote_addr"))) goto error;
    TRY(common_fields(&common, started, uri, addr));

    if (!(status_o = attr(result, "status"))) goto error;
    long status = PyLong_AsLong(status_o);
    if (status == -1 && PyErr_Occurred()) goto error;
    if (status) {
        if (!(body = attr(result, "body")) || !(headers = attr(result, "headers"))) goto error;
        if (!PyBytes_CheckExact(body)) goto fallback;
        /* The HTTP head: status line, the header lines (framing ones renamed), Content-Length. */
        PyObject *reason = PyDict_GetItemWithError(reasons, status_o);
        if (!reason && PyErr_Occurred()) goto error;
        TRY(fmt(&head, "HTTP/1.1 %ld", status));
        if (reason && PyObject_IsTrue(reason)) {
            TRY(put(&head, " ", 1));
            TRY(put_clean_latin1(&head, reason));
        }
        TRY(put(&head, "\r\n", 2));
        PyObject *hs = PySequence_Fast(headers, "headers");
        if (!hs) goto error;
        Py_ssize_t nh = PySequence_Fast_GET_SIZE(hs);
        for (Py_ssize_t i = 0; i < nh && rc == 0; i++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(hs, i);
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
                rc = FALLBACK;
                break;
            }
            PyObject *name = PyTuple_GET_ITEM(pair, 0), *value = PyTuple_GET_ITEM(pair, 1);
            if (ascii_ieq(name, "content-encoding") || ascii_ieq(name, "transfer-encoding") ||
                ascii_ieq(name, "content-length"))
                rc = puts_(&head, "X-Harvestman-Original-");
            if (rc == 0) rc = put_clean_latin1(&head, name);
            if (rc == 0) rc = put(&head, ": ", 2);
            if (rc == 0) rc = put_clean_latin1(&head, value);
            if (rc == 0) rc = put(&head, "\r\n", 2);
        }
        Py_DECREF(hs);
        if (rc < 0) goto done;
        Py_ssize_t nbody = PyBytes_GET_SIZE(body);
        TRY(fmt(&head, "Content-Length: %zd\r\n\r\n", nbody));
        if (head.n + nbody > ONE_SHOT_MAX) goto fallback;
        const char *b = PyBytes_AS_STRING(body);

        if (!(truncated = attr(result, "truncated")) || !(partial = attr(result, "partial"))) goto error;
        TRY(puts_(&fields, "WARC-Type: response\r\nWARC-Record-ID: "));
        TRY(puts_(&fields, response_id));
        TRY(put(&fields, "\r\n", 2));
        TRY(put(&fields, common.p, common.n));
        int trunc = PyObject_IsTrue(truncated);
        if (trunc < 0) goto error;
        if (trunc) {
            TRY(puts_(&fields, "WARC-Truncated: length\r\n"));
        } else if (PyObject_IsTrue(partial)) {
            if (!PyUnicode_Check(partial)) goto fallback;
            Py_ssize_t colon = PyUnicode_FindChar(partial, ':', 0, PyUnicode_GET_LENGTH(partial), 1);
            if (colon == -2) goto error;
            PyObject *kind = colon < 0 ? Py_NewRef(partial) : PyUnicode_Substring(partial, 0, colon);
            if (!kind) goto error;
            rc = puts_(&fields, "WARC-Truncated: stop-");
            if (rc == 0) rc = put_clean_utf8(&fields, kind);
            Py_DECREF(kind);
            if (rc < 0) goto done;
            TRY(puts_(&fields, "\r\nWARC-Stop-Condition: "));
            TRY(put_clean_utf8(&fields, partial));
            TRY(put(&fields, "\r\n", 2));
        }
        TRY(puts_(&fields, "Content-Type: application/http; msgtype=response\r\nWARC-Payload-Digest: "));
        char digest[38];
        if (PyObject_IsTrue(given_digest)) {
            Py_ssize_t nd;
            const char *d = PyUnicode_AsUTF8AndSize(given_digest, &nd);
            if (!d) goto error;
            TRY(put(&fields, d, nd));
        } else {
            sha1_two(b, nbody, NULL, 0, digest);
            TRY(put(&fields, digest, 37));
        }
        sha1_two(head.p, head.n, b, nbody, digest);
        TRY(fmt(&fields, "\r\nWARC-Block-Digest: %s\r\n", digest));
        if (!(rec[nrec++] = record(&fields, head.p, head.n, b, nbody, level))) goto error;
        TRY(fmt(&common, "WARC-Concurrent-To: %s\r\n", response_id));
    }

    /* The request: GET, the origin-form target, Host unless a header gives it, the headers sent. */
    {
        Py_ssize_t n = PyUnicode_GET_LENGTH(uri);
        const char *u = (const char *)PyUnicode_1BYTE_DATA(uri);
        Py_ssize_t start = (u[4] == 's' ? 8 : 7), end = n;
        for (Py_ssize_t i = start; i < n; i++)
            if (u[i] == '/' || u[i] == '?' || u[i] == '#') {
                end = i;
                break;
            }
        Py_ssize_t stop = n; /* the fragment dropped */
        for (Py_ssize_t i = end; i < n; i++)
            if (u[i] == '#') {
                stop = i;
                break;
            }
        Py_ssize_t q = stop;
        for (Py_ssize_t i = end; i < stop; i++)
            if (u[i] == '?') {
                q = i;
                break;
            }
        head.n = 0;
        TRY(puts_(&head, "GET "));
        Py_ssize_t path_len = q - end;
        if (path_len == 0) TRY(put(&head, "/", 1));
        for (Py_ssize_t i = end; i < stop; i++) {
            if (i == q && q + 1 == stop) break; /* an empty query is dropped, its '?' with it */
            if (u[i] == ' ')
                TRY(put(&head, "%20", 3));
            else
                TRY(put(&head, u + i, 1));
        }
        TRY(puts_(&head, " HTTP/1.1\r\n"));
        if (!(req = PySequence_Fast(req_headers, "request headers"))) goto error;
        Py_ssize_t nr = PySequence_Fast_GET_SIZE(req);
        int has_host = 0;
        for (Py_ssize_t i = 0; i < nr; i++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(req, i);
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) goto fallback;
            if (ascii_ieq(PyTuple_GET_ITEM(pair, 0), "host")) has_host = 1;
        }
        if (!has_host) {
            Py_ssize_t at = start; /* never the URL's user:password part */
            for (Py_ssize_t i = start; i < end; i++)
                if (u[i] == '@') at = i + 1;
            TRY(puts_(&head, "Host: "));
            TRY(put(&head, u + at, end - at));
            TRY(put(&head, "\r\n", 2));
        }
        for (Py_ssize_t i = 0; i < nr; i++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(req, i);
            TRY(put_clean_latin1(&head, PyTuple_GET_ITEM(pair, 0)));
            TRY(put(&head, ": ", 2));
            TRY(put_clean_latin1(&head, PyTuple_GET_ITEM(pair, 1)));
            TRY(put(&head, "\r\n", 2));
        }
        TRY(put(&head, "\r\n", 2));
        char digest[38];
        sha1_two(head.p, head.n, NULL, 0, digest);
        fields.n = 0;
        TRY(fmt(&fields, "WARC-Type: request\r\nWARC-Record-ID: %s\r\n", request_id));
        TRY(put(&fields, common.p, common.n));
        TRY(puts_(&fields, "Content-Type: application/http; msgtype=request\r\n"
                           "WARC-Payload-Digest: sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ\r\n"));
        TRY(fmt(&fields, "WARC-Block-Digest: %s\r\n", digest));
        if (!(rec[nrec++] = record(&fields, head.p, head.n, NULL, 0, level))) goto error;
    }

    /* The metadata: outlinks, the requested URL, timings, sizes, redirects, the error. */
    {
        if (!(links = PySequence_Fast(outlinks, "outlinks"))) goto error;
        Py_ssize_t nl = PySequence_Fast_GET_SIZE(links);
        for (Py_ssize_t i = 0; i < nl; i++) {
            TRY(puts_(&meta, "outlink: "));
            TRY(put_clean_utf8(&meta, PySequence_Fast_GET_ITEM(links, i)));
            TRY(put(&meta, "\r\n", 2));
        }
        TRY(puts_(&meta, "requestedURL: "));
        TRY(put_clean_utf8(&meta, url));
        double dns, connect, tls, first, total;
        if (!(timings = attr(result, "timings"))) goto error;
        if (get_double(timings, "dns", &dns) < 0 || get_double(timings, "connect", &connect) < 0 ||
            get_double(timings, "tls", &tls) < 0 || get_double(timings, "first_byte", &first) < 0 ||
            get_double(timings, "total", &total) < 0)
            goto error;
        double ms = nearbyint(total * 1000); /* round(): halves to even, as the FPU's default mode */
        if (!isfinite(ms)) goto fallback;
        TRY(fmt(&meta, "\r\nfetchTimeMs: %.0f\r\n", ms == 0 ? 0.0 : ms));
        TRY(fmt(&meta, "timings: dns=%.6f connect=%.6f tls=%.6f firstByte=%.6f total=%.6f\r\n", dns,
                connect, tls, first, total));
        if (!(wire = attr(result, "wire_bytes")) || !(attempt = attr(result, "attempt"))) goto error;
        TRY(puts_(&meta, "wireBytes: "));
        TRY(put_str(&meta, wire));
        TRY(puts_(&meta, "\r\nattempt: "));
        TRY(put_str(&meta, attempt));
        TRY(put(&meta, "\r\n", 2));
        if (!(redirects = attr(result, "redirects"))) goto error;
        PyObject *hops = PySequence_Fast(redirects, "redirects");
        if (!hops) goto error;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(hops) && rc == 0; i++) {
            PyObject *h = PySequence_Fast_GET_ITEM(hops, i);
            PyObject *hs = attr(h, "status"), *hu = attr(h, "url"), *hl = attr(h, "location");
            if (!hs || !hu || !hl) rc = -1;
            if (rc == 0) rc = puts_(&meta, "redirect: ");
            if (rc == 0) rc = put_str(&meta, hs);
            if (rc == 0) rc = put(&meta, " ", 1);
            if (rc == 0) rc = put_clean_utf8(&meta, hu);
            if (rc == 0) rc = put(&meta, " -> ", 4);
            if (rc == 0) rc = put_clean_utf8(&meta, hl);
            if (rc == 0) rc = put(&meta, "\r\n", 2);
            Py_XDECREF(hs);
            Py_XDECREF(hu);
            Py_XDECREF(hl);
        }
        Py_DECREF(hops);
        if (rc < 0) goto done;
        if (!(error_class = attr(result, "error_class"))) goto error;
        if (PyObject_IsTrue(error_class)) {
            if (!(error_message = attr(result, "error_message"))) goto error;
            TRY(puts_(&meta, "error: "));
            TRY(put_clean_utf8(&meta, error_class));
            TRY(put(&meta, ": ", 2));
            TRY(put_clean_utf8(&meta, error_message));
            TRY(put(&meta, "\r\n", 2));
        }
        if (meta.n > ONE_SHOT_MAX) goto fallback;
        char digest[38];
        sha1_two(meta.p, meta.n, NULL, 0, digest);
        fields.n = 0;
        TRY(fmt(&fields, "WARC-Type: metadata\r\nWARC-Record-ID: %s\r\n", metadata_id));
        TRY(put(&fields, common.p, common.n));
        TRY(fmt(&fields,
                "Content-Type: application/warc-fields\r\nWARC-Payload-Digest: %s\r\n"
                "WARC-Block-Digest: %s\r\n",
                digest, digest));
        if (!(rec[nrec++] = record(&fields, meta.p, meta.n, NULL, 0, level))) goto error;
    }

    {
        Py_ssize_t total = 0;
        for (int i = 0; i < nrec; i++) {
            if (!PyBytes_Check(rec[i])) {
                PyErr_SetString(PyExc_TypeError, "compress() must return bytes");
                goto error;
            }
            total += PyBytes_GET_SIZE(rec[i]);
        }
        if (!(out = PyBytes_FromStringAndSize(NULL, total))) goto error;
        char *o = PyBytes_AS_STRING(out);
        for (int i = 0; i < nrec; i++) {
            memcpy(o, PyBytes_AS_STRING(rec[i]), PyBytes_GET_SIZE(rec[i]));
            o += PyBytes_GET_SIZE(rec[i]);
        }
    }
    goto done;

fallback:
    rc = FALLBACK;
    goto done;
error:
    rc = -1;
done:
    if (rc == FALLBACK) {
        PyErr_Clear();
        Py_XDECREF(out);
        out = Py_NewRef(Py_None);
    } else if (rc < 0 || PyErr_Occurred()) {
        Py_CLEAR(out);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "warc_fetch failed");
    }
    freebuf(&common);
    freebuf(&fields);
    freebuf(&head);
    freebuf(&meta);
    for (int i = 0; i < 3; i++) Py_XDECREF(rec[i]);
    Py_XDECREF(uri);
    Py_XDECREF(url);
    Py_XDECREF(rendering);
    Py_XDECREF(addr);
    Py_XDECREF(status_o);
    Py_XDECREF(body);
    Py_XDECREF(headers);
    Py_XDECREF(truncated);
    Py_XDECREF(partial);
    Py_XDECREF(timings);
    Py_XDECREF(wire);
    Py_XDECREF(attempt);
    Py_XDECREF(redirects);
    Py_XDECREF(error_class);
    Py_XDECREF(error_message);
    Py_XDECREF(links);
    Py_XDECREF(req);
    return out;
}

static PyObject *sha1_base32(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    char digest[38];
    sha1_two(view.buf, view.len, NULL, 0, digest);
    PyBuffer_Release(&view);
    return PyUnicode_FromStringAndSize(digest, 37);
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(compress, reasons): the gzip function (data, level, wbits) and {status: phrase}."},
    {"warc_fetch", (PyCFunction)(void (*)(void))warc_fetch, METH_FASTCALL,
     "warc_fetch(result, request_headers, outlinks, payload_digest, level, ids) -> bytes | None"},
    {"sha1_base32", sha1_base32, METH_O, "sha1_base32(data) -> 'sha1:' + Base32 SHA-1"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "ABI", ABI) < 0) Py_CLEAR(m);
    return m;
}
