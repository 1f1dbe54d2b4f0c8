"""The cap on a task's result counts the result as a response encodes it (escaped twice), not
its bytes of JSON: a result of quotes doubles in the Lambda response."""

from __future__ import annotations

import json

from mcp_tasks_aws.protocol.jsonrpc import MAX_RESULT_BYTES, encoded_size, result_message
from mcp_tasks_aws.server.tasks import detailed_task
from support.domain import ALICE, Domain

LAMBDA_RESPONSE_LIMIT = 6 * 1024 * 1024


def test_a_quote_heavy_result_under_the_cap_in_json_but_not_encoded_is_refused() -> None:
    # 1.5 M quotes: 3 MB of JSON (under the cap), 6 MB once escaped in the response (over it)
    domain = Domain()
    text = '"' * 1_500_000
    raw = len(json.dumps({"content": [{"type": "text", "text": text}]}, separators=(",", ":")))
    assert raw < MAX_RESULT_BYTES
    task_id = domain.create("quotes", {"size": len(text)})
    domain.run_leg(task_id)
    view = domain.service.get(ALICE, task_id)
    assert view.record.status == "completed"
    assert view.result is not None
    assert view.result["isError"] is True
    message = view.result["content"][0]["text"]
    assert "returned 6.0 MB (as encoded in a response)" in message
    assert "a task result may be at most 4.0 MB" in message


def test_a_result_kept_under_the_cap_reads_back_within_lambdas_response_limit() -> None:
    domain = Domain()
    text = '"' * 990_000  # just under the cap once encoded
    task_id = domain.create("quotes", {"size": len(text)})
    domain.run_leg(task_id)
    view = domain.service.get(ALICE, task_id)
    assert view.result == {"content": [{"type": "text", "text": text}]}
    response = result_message(1, {"resultType": "complete", **detailed_task(view)})
    assert encoded_size(response) < LAMBDA_RESPONSE_LIMIT
