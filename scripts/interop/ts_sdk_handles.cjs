// The official TypeScript SDK client (@modelcontextprotocol/sdk 1.x) WITHOUT the tasks
// capability, against the conformance tools: task-only tools answer it with task handles, and
// the handle tools (task_status, task_answer, task_cancel) follow them to their results. One
// question is answered through the client's own elicitation handler (elicitation/create on
// the task_status stream), one through task_answer by a client that declared nothing, reading
// only the text of each result. Prints one JSON line per check; exits 1 if any failed.
//
// Usage: node ts_sdk_handles.cjs <node_modules dir> <endpoint URL>
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");
const { commandLine, check, textOf, describe, report } = require("./driver.cjs");

const { modulesDir, url } = commandLine("ts_sdk_handles.cjs");
const load = createRequire(path.join(modulesDir, "_here.js"));
const { Client } = load("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = load("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { CallToolResultSchema, ElicitRequestSchema, McpError } = load("@modelcontextprotocol/sdk/types.js");

const RELATED = "io.modelcontextprotocol/related-task";
const NEXT = /Next: call `([\w.-]+)` with /;

function bearer(sub) {
  const b64 = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return `Bearer ${b64({ alg: "none" })}.${b64({ sub })}.`;
}

async function connect(sub, capabilities, asked) {
  const client = new Client({ name: `interop-ts-handles-${sub}`, version: "1.0.0" }, { capabilities });
  if (capabilities.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params.message);
      return { action: "accept", content: { confirm: true } };
    });
  }
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: bearer(sub) } },
  });
  await client.connect(transport);
  return client;
}

// task_status (waiting) until the task's own result, or its failure, comes back.
async function follow(client, handle) {
  let result = handle;
  for (let calls = 0; ["working", "input_required"].includes(result.structuredContent?.status); calls++) {
    if (calls > 20) throw new Error(`the task never finished: ${JSON.stringify(result)}`);
    const taskId = result.structuredContent.taskId;
    result = await client.callTool({ name: "task_status", arguments: { taskId, waitSeconds: 10 } });
  }
  return result;
}

// The call a result's text names next, read from the text alone (null: nothing more to do).
function nextCall(text) {
  const found = NEXT.exec(text);
  if (!found) return null;
  const rest = text.slice(found.index + found[0].length);
  // The arguments are the JSON object that follows: find where it ends.
  let depth = 0;
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === "{") depth++;
    if (rest[i] === "}" && --depth === 0) return { name: found[1], args: JSON.parse(rest.slice(0, i + 1)) };
  }
  throw new Error(`no arguments after "${found[0]}"`);
}

// A model's part: replace each <type> placeholder the text asks to fill in.
function fill(value) {
  if (Array.isArray(value)) return value.map(fill);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v)]));
  if (value === "<boolean>") return true;
  if (typeof value === "string" && /^<[^>]+>$/.test(value)) return "interop";
  return value;
}

async function main() {
  const asked = [];
  const client = await connect("ada", { elicitation: {} }, asked);
  const tools = (await client.listTools()).tools;
  const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
  check(
    "tools/list adds the handle tools for a client without tasks",
    ["task_status", "task_answer", "task_cancel"].every((name) => byName[name]?.description),
    Object.keys(byName),
  );
  check(
    "a task-only tool that answers with a handle is listed optional; the refusing fixture stays required",
    byName.confirm_delete?.execution?.taskSupport === "optional" && byName.failing_job?.execution?.taskSupport === "required",
    [byName.confirm_delete?.execution, byName.failing_job?.execution],
  );

  // A task-only tool: a handle at once, then its question through the client's elicitation.
  const handle = await client.callTool({ name: "confirm_delete", arguments: { filename: "handle.txt" } });
  const taskId = handle.structuredContent?.taskId;
  check(
    "a task-only tool answers with a handle",
    taskId && textOf(handle).includes(`Started task ${taskId}`) && handle._meta?.[RELATED]?.taskId === taskId,
    handle,
  );
  const confirmed = await follow(client, handle);
  check("the task's question reaches the client's elicitation handler", asked.includes("Delete handle.txt?"), asked);
  check("task_status answers the tool's own result", textOf(confirmed) === "Deleted handle.txt.", confirmed);

  // An optional tool declared longer than the inline budget: a handle too, not an inline run.
  const long = await client.callTool({ name: "long_compute", arguments: { label: "ts-sdk" } });
  const longDone = await follow(client, long);
  check(
    "a long optional tool answers with a handle, and task_status brings its result",
    long.structuredContent?.status === "working" && textOf(longDone) === "Computed ts-sdk after 2s.",
    { long, longDone },
  );

  const failed = await follow(client, await client.callTool({ name: "protocol_error_job", arguments: {} }));
  check(
    "a failed task is a tool error with the JSON-RPC code and message",
    failed.isError === true && textOf(failed).includes("protocol error") && textOf(failed).includes("-32603"),
    failed,
  );

  // client.callTool refuses a `required` tool itself: send the plain call as a raw request.
  const refused = await client
    .request({ method: "tools/call", params: { name: "failing_job", arguments: {} } }, CallToolResultSchema)
    .catch((error) => error);
  check(
    "the fixture that keeps the refusal refuses a plain call with -32601",
    refused instanceof McpError && refused.code === -32601,
    String(refused),
  );

  // Cancel wins.
  const waiting = await client.callTool({ name: "multi_input", arguments: {} });
  const cancelled = await client.callTool({ name: "task_cancel", arguments: { taskId: waiting.structuredContent.taskId } });
  const after = await client.callTool({ name: "task_status", arguments: { taskId: waiting.structuredContent.taskId } });
  check(
    "task_cancel cancels, and task_status says so",
    textOf(cancelled).includes("is cancelled") && after.isError === true && textOf(after).includes("was cancelled"),
    [cancelled, after],
  );

  // Another caller's handle reads as missing.
  const other = await connect("grace", {}, []);
  const foreign = await other.callTool({ name: "task_status", arguments: { taskId } }).catch((error) => error);
  check("another caller's task_status is -32602", foreign instanceof McpError && foreign.code === -32602, String(foreign));

  // A client that declared nothing, following only the text: the question comes back as text
  // with its schema, and task_answer takes the answer.
  let text = textOf(await other.callTool({ name: "confirm_delete", arguments: { filename: "text.txt" } }));
  const steps = [];
  for (let step = nextCall(text); step; step = nextCall(text)) {
    if (steps.length > 20) throw new Error(`no end in sight: ${text}`);
    steps.push(step.name);
    text = textOf(await other.callTool({ name: step.name, arguments: fill(step.args) }));
  }
  check("a client following the text alone reaches the result", text === "Deleted text.txt.", { text, steps });
  check("it answered the question through task_answer", steps.includes("task_answer"), steps);
  await other.close();
  await client.close();
}

main()
  .catch((error) => check("no unexpected error", false, describe(error)))
  .finally(report);
