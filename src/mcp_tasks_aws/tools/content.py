"""Content blocks for tool results and prompt messages: text, image, audio, links, resources.

A tool returns one of these helpers, or a list mixing them with plain strings, and the server
turns it into the `content` of a CallToolResult; a prompt returns them as message content::

    return [Text("Here is the chart:"), Image(path="chart.png")]
    return Image(data=png_bytes, mime_type="image/png")

Invariants:
- a block is valid when built: unknown or mismatched MIME types, missing data and data over
  :data:`MAX_BINARY_BYTES` raise :class:`ContentError` right where the tool made the block;
- binary data is carried as standard Base64, encoded once, when the block is built;
- one result or prompt carries at most :data:`MAX_BINARY_BYTES` of binary data in all (the
  whole answer must fit one Lambda response; :func:`check_binary_budget` enforces it).
"""

from __future__ import annotations

import base64
import mimetypes
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

MAX_BINARY_BYTES = 4 * 1024 * 1024
"""Raw bytes of binary content in one result (4 MiB). A Lambda function answers at most
6 MB, and Base64 adds a third (4 MiB become 5.6 MB), which leaves room for the rest of the
answer. Task results above ~350 KB go to S3 on their way, but come back through the same
6 MB response of `tasks/get`, so the limit is the same inline and in a task."""

IMAGE_TYPES = frozenset(
    {
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "image/svg+xml",
        "image/bmp",
        "image/tiff",
        "image/avif",
        "image/heic",
    }
)
AUDIO_TYPES = frozenset(
    {
        "audio/wav",
        "audio/x-wav",
        "audio/mpeg",
        "audio/mp4",
        "audio/aac",
        "audio/ogg",
        "audio/opus",
        "audio/flac",
        "audio/webm",
    }
)
# File signatures, for bytes given without a MIME type.
_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"WEBP", 8, "image/webp"),
    (b"WAVE", 8, "audio/wav"),
    (b"ID3", 0, "audio/mpeg"),
    (b"OggS", 0, "audio/ogg"),
    (b"fLaC", 0, "audio/flac"),
)
# Extensions Python's table does not know (or maps to an older type name).
_EXTENSIONS = {".webp": "image/webp", ".avif": "image/avif", ".heic": "image/heic"}
_EXTENSIONS.update({".wav": "audio/wav", ".flac": "audio/flac", ".opus": "audio/opus"})

Role = Literal["user", "assistant"]


class ContentError(ValueError):
    """A content block cannot be built as asked; the message says why and what would work."""


def _mime(mime_type: str) -> str:
    return mime_type.split(";")[0].strip().lower()


def _sniff(data: bytes) -> str | None:
    for signature, offset, mime in _MAGIC:
        if data[offset : offset + len(signature)] == signature:
            return mime
    return None


def _guess(path: Path) -> str | None:
    suffix = path.suffix.lower()
    return _EXTENSIONS.get(suffix) or mimetypes.guess_type(path.name)[0]


def _check_size(size: int, what: str) -> None:
    if size > MAX_BINARY_BYTES:
        raise ContentError(
            f"{what} is {size / 2**20:.1f} MiB; one result carries at most "
            f"{MAX_BINARY_BYTES // 2**20} MiB of binary data (a Lambda answer is at most 6 MB, "
            "and Base64 adds a third). Return a ResourceLink to a larger file instead."
        )


def _read(path: str | os.PathLike[str]) -> tuple[Path, bytes]:
    file = Path(path)
    try:
        _check_size(file.stat().st_size, str(file))
        return file, file.read_bytes()
    except OSError as exc:
        raise ContentError(f"cannot read {file}: {exc.strerror or exc}") from exc


class Content:
    """A content block. Subclasses build their wire form once, when created."""

    def to_wire(self) -> dict[str, Any]:
        raise NotImplementedError


def _with_annotations(block: dict[str, Any], annotations: Mapping[str, Any] | None) -> None:
    if annotations:
        block["annotations"] = dict(annotations)


@dataclass(frozen=True)
class Text(Content):
    """A text block (a plain `str` in a result list means the same, without annotations)."""

    text: str
    annotations: Mapping[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "text", "text": self.text}
        _with_annotations(block, self.annotations)
        return block


class _Binary(Content):
    kind: ClassVar[str]
    allowed: ClassVar[frozenset[str]]

    def __init__(
        self,
        data: bytes | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        mime_type: str | None = None,
        annotations: Mapping[str, Any] | None = None,
    ) -> None:
        label = f"{type(self).__name__}"
        if (data is None) == (path is None):
            raise ContentError(f"{label} needs either data=bytes or path=..., not both")
        if path is not None:
            file, data = _read(path)
            mime = mime_type or _guess(file) or _sniff(data)
            source = f"{label}(path={str(file)!r})"
        else:
            if not isinstance(data, bytes | bytearray | memoryview):
                raise ContentError(f"{label} data must be bytes, not {type(data).__name__}")
            data = bytes(data)
            _check_size(len(data), f"{label} data")
            mime = mime_type or _sniff(data)
            source = label
        if mime is None:
            raise ContentError(
                f"{source}: cannot tell the MIME type; pass mime_type= (one of "
                f"{', '.join(sorted(self.allowed))})"
            )
        if _mime(mime) not in self.allowed:
            raise ContentError(
                f"{source}: {mime!r} is not a known {self.kind} type; use one of "
                f"{', '.join(sorted(self.allowed))}"
            )
        self.mime_type = mime
        self.binary_size = len(data)  # bytes before Base64
        self.annotations = annotations
        self._data = base64.b64encode(data).decode("ascii")

    @property
    def data(self) -> bytes:
        return base64.b64decode(self._data)

    def to_wire(self) -> dict[str, Any]:
        block: dict[str, Any] = {"type": self.kind, "data": self._data, "mimeType": self.mime_type}
        _with_annotations(block, self.annotations)
        return block

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.mime_type}, {self.binary_size} bytes)"


class Image(_Binary):
    """An image: `Image(data=png_bytes, mime_type="image/png")` or `Image(path="chart.png")`.

    Without `mime_type`, it comes from the file's extension or the data's signature.
    """

    kind = "image"
    allowed = IMAGE_TYPES


class Audio(_Binary):
    """Audio: `Audio(data=wav_bytes, mime_type="audio/wav")` or `Audio(path="note.mp3")`."""

    kind = "audio"
    allowed = AUDIO_TYPES


@dataclass(frozen=True)
class ResourceLink(Content):
    """A link to a resource the client may read (`resources/read`) or open itself."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not self.uri or not self.name:
            raise ContentError("ResourceLink needs a uri and a name")

    def to_wire(self) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "resource_link", "uri": self.uri, "name": self.name}
        for key, value in (
            ("title", self.title),
            ("description", self.description),
            ("mimeType", self.mime_type),
            ("size", self.size),
        ):
            if value is not None:
                block[key] = value
        _with_annotations(block, self.annotations)
        return block


@dataclass(frozen=True)
class EmbeddedResource(Content):
    """A resource's contents inside the result: `text=` for text, `blob=` for bytes."""

    uri: str
    text: str | None = None
    blob: bytes | None = None
    mime_type: str | None = None
    annotations: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not self.uri:
            raise ContentError("EmbeddedResource needs a uri")
        if (self.text is None) == (self.blob is None):
            raise ContentError(f"EmbeddedResource({self.uri!r}) needs either text= or blob=")
        if self.blob is not None:
            _check_size(len(self.blob), f"EmbeddedResource({self.uri!r}) blob")

    def to_wire(self) -> dict[str, Any]:
        contents: dict[str, Any] = {"uri": self.uri}
        if self.mime_type is not None:
            contents["mimeType"] = self.mime_type
        if self.blob is not None:
            contents["blob"] = base64.b64encode(self.blob).decode("ascii")
        else:
            contents["text"] = self.text
        block: dict[str, Any] = {"type": "resource", "resource": contents}
        _with_annotations(block, self.annotations)
        return block


@dataclass(frozen=True)
class Message:
    """One prompt message: `Message("Summarise this:")`, `Message(Image(...), role="user")`."""

    content: str | Content
    role: Role = "user"

    def to_wire(self) -> dict[str, Any]:
        return {"role": self.role, "content": block_of(self.content)}


# -- shaping what a function returned ------------------------------------------------------------


def block_of(item: Any) -> dict[str, Any]:
    """One content block from a helper, a string or an already-shaped block."""
    if isinstance(item, Content):
        return item.to_wire()
    if isinstance(item, str):
        return {"type": "text", "text": item}
    if isinstance(item, dict) and isinstance(item.get("type"), str):
        return item
    raise TypeError(f"{type(item).__name__} is not a content block (use Text, Image, ...)")


def is_content(value: Any) -> bool:
    """Whether a returned value is content: a helper, or a list holding at least one."""
    if isinstance(value, Content):
        return True
    return isinstance(value, list | tuple) and any(isinstance(v, Content) for v in value)


def content_blocks(value: Content | Iterable[Any]) -> list[dict[str, Any]]:
    items = [value] if isinstance(value, Content) else list(value)
    return [block_of(item) for item in items]


def binary_bytes(blocks: Sequence[dict[str, Any]]) -> int:
    """Raw bytes of the binary data in wire blocks or resource contents (Base64: 4 chars per 3)."""
    total = 0
    for block in blocks:
        resource = block.get("resource")
        holder = resource if isinstance(resource, dict) else block
        data = holder.get("data", holder.get("blob"))
        if isinstance(data, str):
            total += len(data) * 3 // 4
    return total


def check_binary_budget(blocks: Sequence[dict[str, Any]], what: str) -> None:
    """ContentError when the blocks together carry more than the budget."""
    _check_size(binary_bytes(blocks), f"the binary content of {what}")
