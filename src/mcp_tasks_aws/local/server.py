"""The embedded stack: the real Lambda handlers behind a small HTTP server on 127.0.0.1.

`make run` calls :func:`main`. Each HTTP request becomes the payload-v2 event API Gateway would
send (with an emulated JWT authorizer), goes to the real `handlers/api.py`, and its answer goes
back as HTTP. Tests use :class:`EmbeddedStack` the same way, on a free port.

Configuration is the deployed functions' environment (see `mcp_tasks_aws.config`); what the
cloud would provide (a request-state secret, fake AWS credentials) is filled in here.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import secrets
import sys
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext, build_event
from mcp_tasks_aws.local.aws import start_local_aws

logger = logging.getLogger("mcp_tasks_aws.local")

PROJECT_ROOT = Path(__file__).resolve().parents[3]
# Metrics are disabled locally; Powertools still warns on each empty flush.
warnings.filterwarnings("ignore", message="No application metrics to publish")
MCP_PATH = "/mcp"


def local_environment(
    host: str, port: int, overrides: dict[str, str] | None = None
) -> dict[str, str]:
    """The environment the handlers see locally: what AWS and the template would set."""
    env = {
        "MCP_TASKS_TOOLS": "demo",
        "MCP_TASKS_STATE_SECRET": secrets.token_hex(32),
        "MCP_TASKS_ALLOWED_ORIGINS": ",".join(
            f"http://{name}:{port}" for name in ("127.0.0.1", "localhost", host)
        ),
        "POWERTOOLS_SERVICE_NAME": "mcp-tasks-aws",
        "POWERTOOLS_METRICS_NAMESPACE": "McpTasksAws",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    # The user's environment wins over these defaults, but not what a stack in this process
    # wrote there earlier (its port, its secret). Origins the user allows add to the stack's.
    for key in env:
        value = os.environ.get(key)
        if value is not None and value not in _WRITTEN_BY_STACKS.get(key, set()):
            if key == "MCP_TASKS_ALLOWED_ORIGINS":
                value = ",".join(dict.fromkeys([*env[key].split(","), *value.split(",")]))
            env[key] = value
    env.update(overrides or {})
    return env


_WRITTEN_BY_STACKS: dict[str, set[str]] = {}


def load_handler_module(name: str, unique: str) -> ModuleType:
    """Import `handlers/<name>.py` afresh (each stack gets its own module and settings)."""
    path = PROJECT_ROOT / "handlers" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_embedded_{name}_{unique}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _ChunkedSink:
    """Writes a streamed response as HTTP/1.1 chunked transfer, flushing each event."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self.handler = handler
        self.started = False

    def begin(self, status: int, headers: dict[str, str]) -> None:
        self.started = True
        self.handler.send_response(status)
        for name, value in headers.items():
            self.handler.send_header(name, value)
        self.handler.send_header("transfer-encoding", "chunked")
        self.handler.end_headers()
        self.handler.wfile.flush()

    def write(self, chunk: bytes) -> None:
        self.handler.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        self.handler.wfile.flush()

    def end(self) -> None:
        self.handler.wfile.write(b"0\r\n\r\n")
        self.handler.wfile.flush()


def _make_request_handler(api_handler: Any) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "mcp-tasks-aws-local"

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            if self.path.partition("?")[0] != MCP_PATH:
                self._write(404, {"content-type": "text/plain"}, b"Not Found: the endpoint is /mcp")
                return
            event = build_event(
                method=self.command,
                path=self.path,
                headers=dict(self.headers.items()),
                body=body,
                source_ip=self.client_address[0],
            )
            sink = _ChunkedSink(self)
            try:
                result = api_handler(event, LocalLambdaContext(response_stream=sink))
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client left mid-stream
                return
            if sink.started:
                sink.end()
                return
            payload = result.get("body") or ""
            data = payload.encode() if isinstance(payload, str) else payload
            self._write(int(result["statusCode"]), result.get("headers") or {}, data)

        def _write(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET = do_DELETE = do_PUT = do_PATCH = do_OPTIONS = do_HEAD = _serve

        def log_message(self, format: str, *args: Any) -> None:
            logger.debug("%s " + format, self.address_string(), *args)

    return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hang up on streams they are done with (listen windows): not an error.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _without_metric_backlog(module: ModuleType) -> Any:
    """The module's handler, clearing Powertools metrics after each call.

    Metrics are disabled locally, and Powertools then keeps every value until a batch of 100
    forces a print; clearing keeps the local output quiet and memory flat.
    """
    handler = module.handler
    metrics = getattr(module, "metrics", None)

    def call(event: dict[str, Any], context: Any) -> Any:
        try:
            return handler(event, context)
        finally:
            if metrics is not None:
                metrics.clear_metrics()

    return call


class EmbeddedStack:
    """The whole stack on one machine; usable as a context manager.

    Starts moto with the template's resources (see `local.aws`), loads the three handler
    modules with the environment the template gives them, routes the state machine's
    `lambda:invoke` to the worker, and serves the API handler over HTTP.
    """

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, env: dict[str, str] | None = None
    ) -> None:
        self._server = _QuietServer((host, port), BaseHTTPRequestHandler)
        address = self._server.server_address
        self.host, self.port = str(address[0]), int(address[1])
        settings = local_environment(self.host, self.port, env)
        self.aws = start_local_aws(
            PROJECT_ROOT / "template.yaml", {"ToolsModule": settings["MCP_TASKS_TOOLS"]}
        )
        # Resource names come from the template; local settings (and overrides) win otherwise.
        self.environment = {**self.aws.environment, **settings}
        os.environ.update(self.environment)
        for key, value in self.environment.items():
            _WRITTEN_BY_STACKS.setdefault(key, set()).add(value)
        unique = secrets.token_hex(4)
        self.api = load_handler_module("api", unique)
        self.worker = load_handler_module("worker", unique)
        self.reconcile = load_handler_module("reconcile", unique)
        self.aws.register("WorkerFunction", _without_metric_backlog(self.worker))
        self.aws.watch_executions(_without_metric_backlog(self.reconcile))
        self._server.RequestHandlerClass = _make_request_handler(_without_metric_backlog(self.api))
        # Serve as a warm environment would: the API's AWS clients are created on first use,
        # and a listen window's first read must not wait for that (the ack is timed).
        if getattr(self.api, "change_feed", None) is not None:
            self.api.change_feed.versions()
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{MCP_PATH}"

    def start(self) -> EmbeddedStack:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()
        self.aws.stop()

    def __enter__(self) -> EmbeddedStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the embedded mcp-tasks-aws stack.")
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("botocore").setLevel(logging.WARNING)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        logger.warning("listening on %s: the embedded stack is meant for loopback only", args.host)
    stack = EmbeddedStack(args.host, args.port)
    tools = os.environ.get("MCP_TASKS_TOOLS", "demo")
    print(f"mcp-tasks-aws embedded stack serving tools '{tools}' at {stack.url} (Ctrl-C stops)")
    sys.stdout.flush()
    try:
        stack.serve_forever()
    except KeyboardInterrupt:
        print("\nstopping")
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
