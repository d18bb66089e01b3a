"""One HTTP exchange: the Transport seam (libcurl, in-memory), the redirect-following fetcher, decoding."""
