"""Who may call the server: a Bearer token, or the session cookie the sign-in page sets (then every
state-changing request carries the CSRF cookie's value in X-CSRF-Token: double submit)."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from fastapi import HTTPException, Request

SESSION_COOKIE = "harvestman_session"
CSRF_COOKIE = "harvestman_csrf"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class Auth:
    """Checks requests against the server's token."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()
        # The cookie holds a value derived from the token, not the token: it proves a sign-in, and a
        # server restarted with the same token still accepts it.
        self.session_value = hmac.new(self._token, b"harvestman-session-v1", hashlib.sha256).hexdigest()

    def token_ok(self, given: str) -> bool:
        """Whether `given` is the token (compared in constant time)."""
        return hmac.compare_digest(given.encode(), self._token)

    def bearer_ok(self, request: Request) -> bool:
        """Whether the request carries `Authorization: Bearer TOKEN`."""
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and self.token_ok(value.strip())

    def session_ok(self, request: Request) -> bool:
        """Whether the request carries a valid session cookie."""
        return hmac.compare_digest(
            request.cookies.get(SESSION_COOKIE, "").encode(), self.session_value.encode()
        )

    def __call__(self, request: Request) -> None:
        """The API's dependency: 401 without credentials, 403 for a cookie-authenticated change
        without the CSRF header."""
        if self.bearer_ok(request):
            return
        if not self.session_ok(request):
            raise HTTPException(
                401, "sign in: send Authorization: Bearer TOKEN", {"WWW-Authenticate": "Bearer"}
            )
        if request.method not in SAFE_METHODS and not csrf_ok(request, request.headers.get(CSRF_HEADER, "")):
            raise HTTPException(
                403, f"missing or wrong {CSRF_HEADER} header (the {CSRF_COOKIE} cookie's value)"
            )


def csrf_ok(request: Request, given: str) -> bool:
    """Whether `given` equals the request's CSRF cookie (double submit)."""
    cookie = request.cookies.get(CSRF_COOKIE, "")
    return bool(cookie) and bool(given) and hmac.compare_digest(cookie.encode(), given.encode())


def new_csrf() -> str:
    """A fresh CSRF cookie value."""
    return secrets.token_urlsafe(24)
