"""HTTP targets on the standard library: building a declared request, and sending it.

Arguments are checked as the request is built, before any credential is read or attached, and
refused with -32602 naming the argument:

- a `{name}` placeholder of the URL is one path segment: percent-encoded, and never empty,
  `.` or `..`, nor holding `/` or `\\`, as written or once any number of percent-decodings
  made (an upstream or a proxy that decodes and normalises the path would otherwise take the
  call, and its credential, off the declared route);
- a header argument is a value HTTP can carry: Latin-1 without control characters (CR and LF
  would add headers, NUL reaches the upstream, anything past Latin-1 cannot be encoded).

`authorise` then adds the declared auth. A secret (API key, bearer token) is used without the
whitespace around it (`create-secret --secret-string file://token.txt` keeps the file's last
newline); one HTTP still cannot carry is a `TargetUnavailable` naming the secret's ARN, never a
header value in an exception's message (`http.client` quotes the whole header in its own).
Whatever the upstream answers (a 2xx body as much as an error page) has the credentials the
request carried replaced by `[redacted]` (`redact`) before it becomes a result: an upstream
that echoes its request would otherwise hand the credential to the client.

No HTTP client is a runtime dependency (the Lambda package stays lean): `urllib.request` sends,
with the target's timeout and redirects not followed (a redirect is an answer, as any 3xx).
Only a request that got no answer raises (`TargetUnavailable`: refused, unreachable, timed
out), naming the host.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any, Final

from mcp_tasks_aws.protocol.errors import InvalidParams
from mcp_tasks_aws.protocol.jsonrpc import MAX_RESULT_BYTES
from mcp_tasks_aws.targets.models import HttpTarget
from mcp_tasks_aws.targets.ports import HttpAnswer, HttpRequest, TargetCalls
from mcp_tasks_aws.targets.templates import render
from mcp_tasks_aws.tasks.exceptions import TargetUnavailable

_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})
MAX_BODY_BYTES: Final = MAX_RESULT_BYTES
"""The most of a 2xx body read: a longer one could not make a result (a task's or an inline
one: `tools.result_cap.capped`), so the rest is never read, nor held in memory."""
ERROR_BODY_BYTES: Final = 64 * 1024
"""The most of any other body read: its start is all an error result shows."""
_DECODINGS: Final = 4
"""Percent-decodings a path parameter is checked through (a value still encoded after that
many is refused: no upstream decodes so often, and no honest identifier needs it)."""
SEGMENT_RULE: Final = (
    "a path parameter is one path segment: not empty, '.' or '..', and without '/' or '\\' "
    "(percent-encoded or not)"
)


def build_request(
    tool: str, target: HttpTarget, arguments: Mapping[str, Any], extra: Mapping[str, Any]
) -> HttpRequest:
    """The request a call makes (auth not applied yet): URL placeholders percent-encoded,
    query parameters, header arguments, and the JSON body. InvalidParams (naming the argument)
    for a path parameter or header argument the module docstring refuses."""
    used: set[str] = set()

    def refuse(name: str, problem: str) -> InvalidParams:
        return InvalidParams(f"Invalid arguments for tool {tool}: {name}: {problem}")

    def placeholder(name: str) -> str:
        used.add(name)
        value = arguments.get(name, "")
        text = value if isinstance(value, str) else json.dumps(value)
        if not is_one_segment(text):
            raise refuse(name, SEGMENT_RULE)
        return urllib.parse.quote(text, safe="")

    url = target.url
    for name in target.placeholders:
        url = url.replace("{" + name + "}", placeholder(name))
    query = []
    for name in target.query:
        used.add(name)
        if name in arguments and arguments[name] is not None:
            value = arguments[name]
            values = value if isinstance(value, list) else [value]
            query += [(name, _query_text(item)) for item in values]
    if query:
        url += ("&" if "?" in url else "?") + urllib.parse.urlencode(query)
    headers = {"accept": "application/json", **{k.lower(): v for k, v in target.headers.items()}}
    for header, name in target.header_arguments.items():
        used.add(name)
        if name in arguments and arguments[name] is not None:
            text = _query_text(arguments[name])
            problem = header_value_problem(text)
            if problem is not None:
                raise refuse(name, f"cannot be sent in the {header} header: it {problem}")
            headers[header.lower()] = text
    body: bytes | None = None
    if target.body is not None:
        document = render(target.body, {**arguments, **extra, "arguments": dict(arguments)})
        body = json.dumps(document).encode()
    elif target.body_argument is not None:
        if target.body_argument in arguments:
            body = json.dumps(arguments[target.body_argument]).encode()
    elif target.method in _WITH_BODY:
        rest = {k: v for k, v in arguments.items() if k not in used}
        body = json.dumps(rest).encode()
    if body is not None:
        headers["content-type"] = "application/json"
    return HttpRequest(target.method, url, headers, body, target.timeout_seconds)


def is_one_segment(text: str) -> bool:
    """Whether `text` stays one path segment however often an upstream percent-decodes it."""
    for _ in range(_DECODINGS + 1):
        if text in ("", ".", "..") or "/" in text or "\\" in text:
            return False
        decoded = urllib.parse.unquote(text)
        if decoded == text:
            return True
        text = decoded
    return False


def header_value_problem(value: str) -> str | None:
    """Why HTTP cannot carry `value` as a header field value (None: it can). Latin-1 (what
    `http.client` encodes) without control characters other than tab (RFC 9110 field-value)."""
    for char in value:
        code = ord(char)
        if code > 0xFF:
            return "holds a character outside Latin-1"
        if (code < 0x20 and char != "\t") or code == 0x7F:
            return "holds a control character such as CR, LF or NUL"
    return None


def authorise(
    calls: TargetCalls, target: HttpTarget, request: HttpRequest
) -> tuple[HttpRequest, tuple[str, ...]]:
    """`request` with the target's auth applied, and the credentials it now carries (what must
    never come back in a result or a log: `redact`)."""
    auth = target.auth
    if auth.type in ("apiKey", "bearer"):
        assert auth.secret_arn is not None  # checked at load
        secret = usable_secret(auth.secret_arn, calls.secret(auth.secret_arn))
        if auth.type == "apiKey":
            header, value = (auth.header or "x-api-key").lower(), secret
        else:
            header, value = "authorization", f"Bearer {secret}"
        return request._replace(headers={**request.headers, header: value}), (secret,)
    if auth.type == "sigv4":
        signed = calls.sign(request, auth.service or "execute-api", auth.region or _region(request))
        carried = tuple(
            value
            for name, value in signed.headers.items()
            if name.lower() in ("authorization", "x-amz-security-token")
        )
        return signed, carried
    return request, ()


REDACTED: Final = "[redacted]"


def redact(answer: HttpAnswer, credentials: tuple[str, ...]) -> HttpAnswer:
    """`answer` with every credential in its body replaced by `[redacted]`: as sent, as a
    JSON string writes it (quotes and backslashes escaped, non-ASCII as `\\u`) and
    percent-encoded, in UTF-8 and in Latin-1 (what a header value is)."""
    body = answer.body
    forms: set[bytes] = set()
    for credential in credentials:
        for text in (
            credential,
            json.dumps(credential)[1:-1],
            json.dumps(credential, ensure_ascii=False)[1:-1],
            urllib.parse.quote(credential, safe=""),
        ):
            forms.add(text.encode("utf-8"))
            forms.add(text.encode("latin-1", "replace"))
    for form in sorted(
        forms, key=len, reverse=True
    ):  # longest first: no form is cut by a shorter one
        if form:
            body = body.replace(form, REDACTED.encode())
    return answer._replace(body=body)


def usable_secret(secret_arn: str, value: str) -> str:
    """A secret's value as a header carries it: stripped of surrounding whitespace, else
    TargetUnavailable naming the secret (its value goes nowhere, not even the message)."""
    stripped = value.strip()
    problem = "is empty" if not stripped else header_value_problem(stripped)
    if problem is not None:
        raise TargetUnavailable(
            f"Secret {secret_arn}",
            "Unusable",
            f"its value cannot be sent in an HTTP header: it {problem}",
        )
    return stripped


def _region(request: HttpRequest) -> str:
    """The region in an AWS endpoint's host name (`abc.execute-api.eu-west-1.amazonaws.com`)."""
    host = urllib.parse.urlsplit(request.url).hostname or ""
    found = re.search(r"\.([a-z]{2}(?:-[a-z]+)+-\d)\.", host)
    return found.group(1) if found else "us-east-1"


def _query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value)


def _read(response: Any, limit: int) -> tuple[bytes, bool]:
    """At most `limit` bytes of the body, and whether there was more (one byte past the limit
    is asked for to know, never the rest)."""
    body = response.read(limit + 1)
    return body[:limit], len(body) > limit


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _opener() -> Callable[..., Any]:
    return urllib.request.build_opener(_NoRedirects).open


def send(request: HttpRequest) -> HttpAnswer:
    """Send `request`; every status is an answer. TargetUnavailable when none came.

    A 2xx body is read up to MAX_BODY_BYTES, any other up to ERROR_BODY_BYTES, and no further:
    the connection is closed on the rest (`HttpAnswer.truncated` says there was more)."""
    host = urllib.parse.urlsplit(request.url).netloc
    prepared = urllib.request.Request(  # noqa: S310 - declared http(s) URLs only
        request.url, data=request.body, headers=request.headers, method=request.method
    )
    try:
        with _opener()(prepared, timeout=request.timeout_s) as response:
            body, truncated = _read(response, MAX_BODY_BYTES)
            return HttpAnswer(response.status, dict(response.headers.items()), body, truncated)
    except urllib.error.HTTPError as exc:  # a status outside 2xx is an answer
        with exc:
            body, truncated = _read(exc, ERROR_BODY_BYTES)
            return HttpAnswer(exc.code, dict(exc.headers.items()), body, truncated)
    except TimeoutError:
        raise TargetUnavailable(f"HTTP target {host}", "Timeout", "no answer in time") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        code = type(reason).__name__ if isinstance(reason, BaseException) else "URLError"
        raise TargetUnavailable(f"HTTP target {host}", code) from None
    except OSError as exc:
        raise TargetUnavailable(f"HTTP target {host}", type(exc).__name__) from None
    except ValueError as exc:
        # `http.client` quotes a header it refuses (a credential among them) in its message:
        # only the exception's name goes on. The arguments and secrets were checked before.
        raise TargetUnavailable(f"HTTP target {host}", type(exc).__name__) from None
