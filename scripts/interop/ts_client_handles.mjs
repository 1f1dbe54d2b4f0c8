// The official TypeScript client 2.x (`@modelcontextprotocol/client`, brought by the Inspector
// 2.12 package) WITHOUT ext-tasks, against the conformance tools, in both of its eras:
// - legacy (2025-11-25, its default): no `tasks` capability;
// - modern (2026-07-28, `versionNegotiation: auto`): no Tasks extension.
// Task-only tools answer it with task handles, and the handle tools (task_status, task_answer,
// task_cancel) follow them to their results. One question is answered through the client's
// own elicitation handler (legacy: `elicitation/create` on the task_status stream; modern: an
// input_required round on task_status, which the client fulfils itself), one through
// task_answer by a client that declared nothing, reading only the text of each result.
// Prints one JSON line per check; exits 1 if any failed.
//
// Usage: node ts_client_handles.mjs <node_modules dir> <endpoint URL>
import path from "node:path";
import { pathToFileURL } from "node:url";
import driver from "./driver.cjs";

const { commandLine, check, textOf, describe, report } = driver;
const { modulesDir, url } = commandLine("ts_client_handles.mjs");
const load = (file) => import(pathToFileURL(path.join(modulesDir, file)).href);
const { Client, StreamableHTTPClientTransport } = await load("@modelcontextprotocol/client/dist/index.mjs");

const RELATED = "io.modelcontextprotocol/related-task";
const NEXT = /Next: call `([\w.-]+)` with /;

function bearer(sub) {
  const b64 = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return `Bearer ${b64({ alg: "none" })}.${b64({ sub })}.`;
}

async function connect(era, sub, capabilities, asked) {
  const options = era === "modern" ? { capabilities, versionNegotiation: { mode: "auto" } } : { capabilities };
  const client = new Client({ name: `interop-ts2-handles-${sub}`, version: "1.0.0" }, options);
  if (capabilities.elicitation) {
    client.setRequestHandler("elicitation/create", async (request) => {
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

async function run(era) {
  const asked = [];
  const client = await connect(era, "ada", { elicitation: {} }, asked);
  check(`${era}: the client negotiated its era`, client.getProtocolEra() === era, client.getProtocolEra());
  const tools = (await client.listTools()).tools;
  const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
  check(
    `${era}: tools/list adds the handle tools for a client without tasks`,
    ["task_status", "task_answer", "task_cancel"].every((name) => byName[name]?.description),
    Object.keys(byName),
  );

  // A task-only tool: a handle at once, then its question through the client's elicitation.
  const file = `ts2-${era}.txt`;
  const handle = await client.callTool({ name: "confirm_delete", arguments: { filename: file } });
  const taskId = handle.structuredContent?.taskId;
  check(
    `${era}: a task-only tool answers with a handle`,
    taskId && textOf(handle).includes(`Started task ${taskId}`) && handle._meta?.[RELATED]?.taskId === taskId,
    handle,
  );
  const confirmed = await follow(client, handle);
  check(
    `${era}: the task's question reaches the client's elicitation handler, once`,
    asked.filter((message) => message === `Delete ${file}?`).length === 1,
    asked,
  );
  check(`${era}: task_status answers the tool's own result`, textOf(confirmed) === `Deleted ${file}.`, confirmed);

  // An optional tool declared longer than the inline budget: a handle too, not an inline run.
  const long = await client.callTool({ name: "long_compute", arguments: { label: `ts2-${era}` } });
  const longDone = await follow(client, long);
  check(
    `${era}: a long optional tool answers with a handle, and task_status brings its result`,
    long.structuredContent?.status === "working" && textOf(longDone) === `Computed ts2-${era} after 2s.`,
    { long, longDone },
  );
  const failed = await follow(client, await client.callTool({ name: "protocol_error_job", arguments: {} }));
  check(
    `${era}: a failed task is a tool error with the JSON-RPC code and message`,
    failed.isError === true && textOf(failed).includes("protocol error") && textOf(failed).includes("-32603"),
    failed,
  );

  // Cancel wins.
  const waiting = await client.callTool({ name: "multi_input", arguments: {} });
  const cancelled = await client.callTool({ name: "task_cancel", arguments: { taskId: waiting.structuredContent.taskId } });
  const after = await client.callTool({ name: "task_status", arguments: { taskId: waiting.structuredContent.taskId } });
  check(
    `${era}: task_cancel cancels, and task_status says so`,
    textOf(cancelled).includes("is cancelled") && after.isError === true && textOf(after).includes("was cancelled"),
    [cancelled, after],
  );

  // Another caller's handle reads as missing; it declared nothing, and follows only the text:
  // the question comes back as text with its schema, and task_answer takes the answer.
  const other = await connect(era, "grace", {}, []);
  const foreign = await other.callTool({ name: "task_status", arguments: { taskId } }).catch((error) => error);
  check(`${era}: another caller's task_status is -32602`, foreign?.code === -32602, String(foreign));
  let text = textOf(await other.callTool({ name: "confirm_delete", arguments: { filename: `text-${file}` } }));
  const steps = [];
  for (let step = nextCall(text); step; step = nextCall(text)) {
    if (steps.length > 20) throw new Error(`no end in sight: ${text}`);
    steps.push(step.name);
    text = textOf(await other.callTool({ name: step.name, arguments: fill(step.args) }));
  }
  check(`${era}: a client following the text alone reaches the result`, text === `Deleted text-${file}.`, { text, steps });
  check(`${era}: it answered the question through task_answer`, steps.includes("task_answer"), steps);
  await other.close();
  await client.close();
}

for (const era of ["legacy", "modern"]) {
  try {
    await run(era);
  } catch (error) {
    check(`${era}: no unexpected error`, false, describe(error));
  }
}
report();
