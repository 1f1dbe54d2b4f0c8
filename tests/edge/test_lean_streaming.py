"""Both doors stay lean.

- The streaming door's app (`handlers/stream.py`, what uvicorn serves under the Lambda Web
  Adapter), in a fresh interpreter with the deployed environment, serves a `server/discover`
  and a `tools/call` without loading the MCP SDK, moto, `rich` or the embedded stack.
- The buffered door's handler never loads uvicorn (nor the streaming app): its cold start is
  what it was.
"""

from __future__ import annotations

import json

from edge.test_lambda_lean import CHILD, FORBIDDEN, discover_event
from support.lambdas import API_CHILD_PRELUDE, PROJECT_ROOT, api_job, run_child

STREAM_CHILD = """
import asyncio, importlib.util, json, sys

job = json.loads(sys.argv[1])
spec = importlib.util.spec_from_file_location("handlers.stream", job["handler"])
stream = importlib.util.module_from_spec(spec)
sys.modules["handlers.stream"] = stream
spec.loader.exec_module(stream)
app = stream.asgi

async def call(body):
    sent, read = [], []
    async def receive():  # the body once; then nothing until the client leaves (never here)
        if read:
            await asyncio.sleep(3600)
        read.append(True)
        return {"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}
    async def send(message):
        sent.append(message)
    headers = [(b"content-type", b"application/json"), (b"accept", b"application/json"),
               (b"mcp-protocol-version", b"2026-07-28"), (b"mcp-method", body["method"].encode())]
    if "name" in body["params"]:
        headers.append((b"mcp-name", body["params"]["name"].encode()))
    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}
    await app(scope, receive, send)
    return sent[0]["status"]

meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
for method, params in (("server/discover", {}),
                       ("tools/call", {"name": "text_stats", "arguments": {"text": "a b"}})):
    status = asyncio.run(call({"jsonrpc": "2.0", "id": 1, "method": method,
                               "params": {**params, "_meta": meta}}))
    if status != 200:
        raise SystemExit(f"{method} answered {status}")
"""


# The end of the buffered handler's lean check: which forbidden modules were loaded.
STREAM_CHILD += CHILD[CHILD.index("forbidden = tuple") :]


def test_the_streaming_app_loads_nothing_of_the_client_tests_or_local_stack() -> None:
    job = {"handler": str(PROJECT_ROOT / "handlers" / "stream.py"), "forbidden": list(FORBIDDEN)}
    assert run_child(STREAM_CHILD, job) == []


BUFFERED_CHILD = (
    API_CHILD_PRELUDE
    + """
response = api.handler(job["event"], context)
assert response["statusCode"] == 200, response
print(json.dumps(sorted(n for n in sys.modules
                        if n.split(".")[0] == "uvicorn" or n == "mcp_tasks_aws.edge.streaming")))
"""
)


def test_the_buffered_handler_never_loads_the_streaming_door() -> None:
    loaded = run_child(BUFFERED_CHILD, api_job(event=discover_event()))
    assert loaded == [], json.dumps(loaded)
