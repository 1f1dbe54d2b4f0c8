"""A local stand-in for the example's inventory API (inventory.openapi.yaml): a WSGI app the
embedded stack serves on 127.0.0.1 in place of every http target's host."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from typing import Any

_ITEMS: dict[str, dict[str, Any]] = {
    "1": {"id": "1", "name": "widget", "quantity": 12, "note": None},
    "2": {"id": "2", "name": "gadget", "quantity": 0, "note": "back in May"},
}
_LOCK = threading.Lock()
Start = Callable[[str, list[tuple[str, str]]], Any]


def _answer(start: Start, status: str, body: Any) -> Iterable[bytes]:
    data = json.dumps(body).encode()
    start(status, [("content-type", "application/json"), ("content-length", str(len(data)))])
    return [data]


def app(environ: dict[str, Any], start: Start) -> Iterable[bytes]:
    method = environ["REQUEST_METHOD"]
    path = environ.get("PATH_INFO", "").removeprefix("/v1")
    if path == "/items" and method == "GET":
        query = dict(
            part.split("=", 1) for part in environ.get("QUERY_STRING", "").split("&") if "=" in part
        )
        limit = int(query.get("limit", "20"))
        with _LOCK:
            return _answer(start, "200 OK", {"items": list(_ITEMS.values())[:limit]})
    if path == "/items" and method == "POST":
        length = int(environ.get("CONTENT_LENGTH") or 0)
        new = json.loads(environ["wsgi.input"].read(length) or b"{}")
        if not isinstance(new.get("name"), str):
            return _answer(start, "400 Bad Request", {"message": "name is required"})
        with _LOCK:
            item = {"id": str(len(_ITEMS) + 1), "note": None, **new}
            _ITEMS[item["id"]] = item
        return _answer(start, "201 Created", item)
    if path.startswith("/items/") and method == "GET":
        with _LOCK:
            item = _ITEMS.get(path.removeprefix("/items/"))
        if item is None:
            return _answer(start, "404 Not Found", {"message": "no such item"})
        return _answer(start, "200 OK", item)
    return _answer(start, "404 Not Found", {"message": f"no route {method} {path}"})
