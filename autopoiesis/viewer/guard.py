"""What keeps the viewer the user's own: a token on every request, a Host header check,
headers that keep the page to itself, and no write without `--write`.

* **The token.** `serve` makes a random token and prints the URL that carries it
  (`/?token=...`). A request with the right token in its query gets it as a cookie
  (HttpOnly, SameSite=Strict, named for the port: two viewers on one host keep their own)
  and is sent on to the same URL without it, so the token does not stay in the address bar
  or the history; every later request shows the cookie. Without either: 403.
* **The Host header** must name the address the server listens on (or localhost), so a
  page of another site whose DNS name is rebound to 127.0.0.1 cannot read the viewer
  (`HostCheck`, on Starlette's TrustedHostMiddleware; an explicit `--host` adds its name;
  `--allow-remote` adds the machine's own names, and on 0.0.0.0 the address each request
  came in on).
* **The headers**: a Content-Security-Policy that allows only the viewer's own script and
  style files (no inline script, so even an escaping mistake could not run one), no
  framing, no referrer (a link out never carries the URL), no MIME sniffing.
* **Writes**: a POST needs `--write`, the token in its form and an Origin of the viewer.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Iterable
from urllib.parse import urlencode

from starlette.datastructures import URL, Headers, QueryParams
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_PARAM = "token"
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


def new_token() -> str:
    return secrets.token_urlsafe(24)


def cookie_name(port: int) -> str:
    return f"autopoiesis_viewer_{port}"


def is_loopback(host: str) -> bool:
    """Whether HOST (an address or `localhost`) is this machine's loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


EVERY_ADDRESS = ("0.0.0.0", "::", "[::]")


def machine_names() -> list[str]:
    """This machine's own names (its host name, and its fully qualified one)."""
    import socket

    names = []
    for name in (socket.gethostname(), socket.getfqdn()):
        if name and name.lower() not in names:
            names.append(name.lower())
    return names


def outward_address(ipv6: bool = False) -> str | None:
    """The address this machine reaches the network from (the default route's), or None
    without one: a UDP socket's connect sends nothing."""
    import socket

    family, target = (socket.AF_INET6, "2001:db8::1") if ipv6 else (socket.AF_INET, "192.0.2.1")
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect((target, 9))
            address = str(probe.getsockname()[0])
    except OSError:
        return None
    return None if is_loopback(address) or address in EVERY_ADDRESS else address


def allowed_hosts(bind: str, extra: Iterable[str] = ()) -> list[str]:
    """The Host header names a request may carry: the loopback names, the bound address
    and EXTRA (a name the user gave for a non-loopback address); bound to an address
    other than loopback (`--allow-remote`), this machine's own names and outward
    addresses as well (`HostCheck` adds the address each request came in on)."""
    names = ["127.0.0.1", "localhost", "::1", "[::1]"]
    own: list[str] = []
    if bind and not is_loopback(bind):
        own = machine_names()
        for ipv6 in (False, True):
            address = outward_address(ipv6)
            if address:
                own.append(f"[{address}]" if ipv6 else address)
    for name in (bind, *extra, *own):
        if name and name not in EVERY_ADDRESS and name not in names:
            names.append(name)
    return names


class HostCheck(TrustedHostMiddleware):
    """Starlette's Host check (a page whose DNS name is rebound to this machine cannot
    read the viewer), which on a server bound to every address (0.0.0.0, ::) also takes
    the address the request came in on: the machine's own, on whichever interface. An
    address, unlike a name, cannot be rebound."""

    def __init__(self, app: ASGIApp, *, allowed_hosts: list[str], every_address: bool):
        super().__init__(app, allowed_hosts=allowed_hosts, www_redirect=False)
        self.every_address = every_address

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.every_address and scope["type"] in ("http", "websocket"):
            server = scope.get("server")
            host = _host_of(Headers(scope=scope).get("host") or "")
            if server and host and host == str(server[0]).lower():
                await self.app(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


def _host_of(header: str) -> str:
    """The host of a Host header, without its port or an IPv6 address's brackets."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if header.count(":") == 1 else header


class TokenGuard:
    """ASGI middleware: the token check, the security headers, the write switch."""

    def __init__(self, app: ASGIApp, *, token: str, port: int, write: bool):
        self.app = app
        self.token = token
        self.cookie = cookie_name(port)
        self.write = write

    def _valid(self, value: str | None) -> bool:
        return token_matches(value, self.token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        query = QueryParams(scope.get("query_string", b"").decode("latin-1"))
        headers = Headers(scope=scope)
        cookies = _cookies(headers.get("cookie", ""))
        response: Response | None = None
        if self._valid(query.get(TOKEN_PARAM)):
            rest = [(k, v) for k, v in query.multi_items() if k != TOKEN_PARAM]
            url = URL(scope=scope).replace(query=urlencode(rest))
            response = RedirectResponse(url.path + (f"?{url.query}" if url.query else ""), 303)
            response.set_cookie(self.cookie, self.token, httponly=True, samesite="strict")
        elif not self._valid(cookies.get(self.cookie)):
            response = PlainTextResponse(
                "403: this viewer needs its token. Open the URL `autopoiesis serve` printed "
                "(it ends in ?token=...).",
                403,
            )
        elif scope["method"] not in ("GET", "HEAD"):
            response = self._refuse_write(headers)
        if response is not None:
            await _with_headers(response)(scope, receive, send)
            return
        await self.app(scope, receive, _adding_headers(send))

    def _refuse_write(self, headers: Headers) -> Response | None:
        if not self.write:
            return PlainTextResponse(
                "403: the viewer is read-only; start it with `autopoiesis serve --write` to "
                "allow this.",
                403,
            )
        origin = headers.get("origin")
        host = headers.get("host", "")
        if origin is not None and origin not in (f"http://{host}", f"https://{host}"):
            return PlainTextResponse("403: a write from another origin is refused.", 403)
        return None  # the form's own token is checked by the action (token_matches)


def token_matches(given: object, token: str) -> bool:
    """Whether GIVEN (a query's, a cookie's or a form's value, from anyone) is TOKEN, in
    constant time. Compared as UTF-8 bytes: `compare_digest` raises on a str that is not
    ASCII, and a request holding one was a 500 before any check."""
    return (
        isinstance(given, str)
        and bool(given)
        and hmac.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode("utf-8"))
    )


def _cookies(header: str) -> dict[str, str]:
    out = {}
    for part in header.split(";"):
        name, eq, value = part.strip().partition("=")
        if eq:
            out[name] = value
    return out


def _with_headers(response: Response) -> Response:
    for k, v in SECURITY_HEADERS.items():
        response.headers.setdefault(k, v)
    return response


def _adding_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            present = {k.lower() for k, _ in message.get("headers", [])}
            extra = [
                (k.encode(), v.encode())
                for k, v in SECURITY_HEADERS.items()
                if k.encode() not in present
            ]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return wrapped
