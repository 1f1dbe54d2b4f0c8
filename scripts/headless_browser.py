"""A stand-in for a person at a browser, for sign-ins in tests and conformance runs.

`BROWSER="python scripts/headless_browser.py %s"` makes Python's `webbrowser` (and so
`mcp-tasks`) hand it the authorization URL. It then does what a person would: it loads the
page; if the authorization server shows the local sign-in form (`local.oauth_server`), it
submits it as `$HEADLESS_USER` (default `alice`); it follows the redirects until one reaches a
loopback address (the client's redirect URI), and loads that one too. Loopback only: it
refuses to contact any other host.
"""

from __future__ import annotations

import ipaddress
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from html.parser import HTMLParser

MAX_STEPS = 10


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect, urllib.request.ProxyHandler({}))


class _FormReader(HTMLParser):
    """The first form's action and fields (the submit button that says `allow` included)."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form" and self.action is None:
            self.action = values.get("action", "")
        elif tag == "input" and values.get("name"):
            self.fields[values["name"]] = values.get("value", "")
        elif tag == "button" and values.get("value") == "allow":
            self.fields[values.get("name", "decision")] = "allow"


def _loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _open(url: str, data: bytes | None = None) -> tuple[int, str, str]:
    """(status, Location header, body) without following redirects."""
    if not _loopback(url):
        raise SystemExit(f"headless browser: refusing to leave loopback ({url})")
    request = urllib.request.Request(url, data=data)  # noqa: S310 - loopback http checked above
    try:
        with _OPENER.open(request, timeout=30) as response:
            return response.status, "", response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        location = error.headers.get("location") or ""
        return (
            error.code,
            urllib.parse.urljoin(url, location),
            error.read().decode(errors="replace"),
        )


def sign_in(url: str, user: str = "alice") -> None:
    data: bytes | None = None
    for _ in range(MAX_STEPS):
        status, location, body = _open(url, data)
        data = None
        if 300 <= status < 400 and location:
            url = location
            continue
        form = _FormReader()
        form.feed(body)
        if status == 200 and form.action is not None and "username" in form.fields:
            form.fields["username"] = user
            url = urllib.parse.urljoin(url, form.action)
            data = urllib.parse.urlencode(form.fields).encode()
            continue
        if status >= 400:
            raise SystemExit(f"headless browser: {url} answered {status}: {body[:300]}")
        return  # a page that is neither a form nor a redirect: the callback's own page
    raise SystemExit("headless browser: too many steps")


if __name__ == "__main__":
    sign_in(sys.argv[1], os.environ.get("HEADLESS_USER", "alice"))
