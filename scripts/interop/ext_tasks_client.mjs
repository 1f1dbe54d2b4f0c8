// The official generation-agnostic Tasks client, `@modelcontextprotocol/ext-tasks` 0.2.x on
// `@modelcontextprotocol/client` 2.x (both brought by the Inspector 2.12 package), against an
// endpoint serving the conformance tools, in both protocol eras:
// - legacy (2025-11-25, the client's default): its v1 requester (params.task, tasks/get,
//   tasks/result, tasks/list, tasks/cancel), and an elicitation during a task, which it gets
//   on a tasks/get stream (it opens tasks/result only once the task is terminal);
// - modern (2026-07-28, the client's `auto` negotiation): its v2 requester, with the raw
//   dispatch it requires (plain HTTP here) and an elicitation answered through tasks/update.
// Prints one JSON line per check; exits 1 if any failed.
//
// Usage: node ext_tasks_client.mjs <node_modules dir> <endpoint URL>
import path from "node:path";
import { pathToFileURL } from "node:url";
import driver from "./driver.cjs";

const { commandLine, check, textOf, describe, report } = driver;
const { modulesDir, url } = commandLine("ext_tasks_client.mjs");
// Both packages export ESM only; import their entry files so ext-tasks and this script share
// one copy of the client.
const load = (file) => import(pathToFileURL(path.join(modulesDir, file)).href);
const { Client, StreamableHTTPClientTransport } = await load("@modelcontextprotocol/client/dist/index.mjs");
const ext = await load("@modelcontextprotocol/ext-tasks/dist/client/index.js");

const CLIENT_INFO = { name: "interop-ext-tasks", version: "1.0.0" };
const CAPABILITIES = { elicitation: {} };
const SETTLE_MS = 20000;

function inputHandler(asked) {
  return ext.createApplicationInputHandler({
    elicitation: async (request, context) => {
      asked.push({ message: request.params.message, scope: context.scope, delivery: context.delivery });
      return { action: "accept", content: { confirm: true } };
    },
    sampling: async () => ({ role: "assistant", content: { type: "text", text: "ok" }, model: "interop" }),
    roots: async () => ({ roots: [] }),
  });
}

// What ext-tasks needs to speak 2026-07-28 task shapes below the SDK: one JSON-RPC request
// over HTTP, with the routing headers that revision requires.
async function rawDispatch(request, options = {}) {
  const params = request.params || {};
  const name = request.method === "tools/call" ? params.name : params.taskId;
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": params._meta?.["io.modelcontextprotocol/protocolVersion"] ?? "2026-07-28",
    "mcp-method": request.method,
    ...(name === undefined ? {} : { "mcp-name": String(name) }),
  };
  const id = Math.floor(Math.random() * 1e9);
  const response = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id, ...request }),
    signal: options.signal,
  });
  const body = await response.text();
  const messages = response.headers.get("content-type")?.startsWith("text/event-stream")
    ? body.split("\n").filter((line) => line.startsWith("data: ") && line.length > 6).map((line) => JSON.parse(line.slice(6)))
    : [JSON.parse(body)];
  const answer = messages.find((message) => message.id === id);
  if (!answer) throw new ext.DispatchError(`no answer (HTTP ${response.status})`);
  return "error" in answer ? { kind: "error", error: answer.error } : { kind: "result", result: answer.result };
}

async function session(era, asked) {
  const options = era === "modern" ? { capabilities: CAPABILITIES, versionNegotiation: { mode: "auto" } } : { capabilities: CAPABILITIES };
  const client = new Client(CLIENT_INFO, options);
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const framing = era === "modern"
    ? { rawDispatch, v2RequestFraming: { protocolVersion: "2026-07-28", clientInfo: CLIENT_INFO, clientCapabilities: CAPABILITIES } }
    : {};
  const tasks = ext.createTaskSessionFromClient(client, {
    endpointId: `interop-${era}`,
    onInputRequest: inputHandler(asked),
    onError: () => {},
    ...framing,
  });
  return { client, tasks };
}

async function settle(execution) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not settled within ${SETTLE_MS} ms`)), SETTLE_MS);
  });
  try {
    return (await Promise.race([execution.settle(), timeout])).outcome;
  } finally {
    clearTimeout(timer);
  }
}

async function call(tasks, name, args, task) {
  const execution = await tasks.callTool(name, args, { task: { preference: "prefer", ...task } });
  return { execution, outcome: await settle(execution) };
}

async function legacy() {
  const asked = [];
  const { client, tasks } = await session("legacy", asked);
  const era = "legacy";
  check(`${era}: the client negotiated 2025-11-25`, client.getProtocolEra() === "legacy", client.getProtocolEra());
  check(
    `${era}: the session sees list, cancel and task execution`,
    tasks.capabilities.inventory === "server-list" && tasks.capabilities.cancellation && tasks.capabilities.execution,
    tasks.capabilities,
  );
  const done = await call(tasks, "slow_compute", { seconds: 1, label: "ext" }, { retentionMs: 120000 });
  check(`${era}: a call becomes a task`, done.execution.kind === "task", done.execution.kind);
  check(
    `${era}: it settles with the call's result (tasks/result)`,
    done.outcome.status === "completed" && textOf(done.outcome.result) === "Computed ext after 1.0s.",
    done.outcome,
  );
  check(`${era}: the asked retention is honoured`, done.outcome.task?.retentionMs === 120000, done.outcome.task);
  // Its v1 requester polls tasks/get and never opens tasks/result while the task works: the
  // task's question comes on a tasks/get stream (tagged with the related task), once.
  const confirmed = await call(tasks, "confirm_delete", { filename: "ext-legacy.txt" });
  const mine = asked.filter((a) => a.message === "Delete ext-legacy.txt?");
  check(
    `${era}: an elicitation during the task reaches its handler from a tasks/get stream, once, and the task settles`,
    textOf(confirmed.outcome.result) === "Deleted ext-legacy.txt." &&
      mine.length === 1 &&
      mine[0].scope === "task" &&
      mine[0].delivery === "peer-request",
    { outcome: confirmed.outcome, asked },
  );
  // A durable tool (a Lambda durable execution; AWS's in-process runner here): its question
  // reaches the handler once, its sleep keeps it working, then it settles.
  const durable = await call(tasks, "durable_confirm", { filename: "ext-durable-legacy.txt" });
  check(
    `${era}: a durable tool's question reaches its handler once, and it settles after its sleep`,
    textOf(durable.outcome.result) === "Deleted ext-durable-legacy.txt durably (22 characters checked)." &&
      asked.filter((a) => a.message === "Durably delete ext-durable-legacy.txt?").length === 1,
    { outcome: durable.outcome, asked },
  );
  const toolError = await call(tasks, "failing_job", {});
  check(
    `${era}: a tool error settles failed, saying why`,
    toolError.outcome.status === "failed" && (toolError.outcome.task?.statusMessage || "").includes("inconsistent"),
    toolError.outcome,
  );
  const protocolError = await call(tasks, "protocol_error_job", {});
  check(`${era}: a protocol error settles failed`, protocolError.outcome.status === "failed", protocolError.outcome);
  const listed = (await tasks.listTasks()).tasks.map((task) => task.taskId);
  const ids = [protocolError, toolError, durable, confirmed, done].map((call) => call.execution.handle.taskId);
  check(`${era}: tasks/list lists them, newest first`, ids.every((id, i) => listed.indexOf(id) === i), { listed, ids });
  const running = await tasks.callTool("slow_compute", { seconds: 30, label: "ext-cancel" }, { task: { preference: "prefer" } });
  await tasks.cancelTask(running.handle.taskId);
  const cancelled = await settle(running);
  check(`${era}: tasks/cancel cancels it`, cancelled.status === "cancelled", cancelled);
  await tasks.close();
  await client.close();
}

async function modern() {
  const asked = [];
  const { client, tasks } = await session("modern", asked);
  const era = "modern";
  check(`${era}: the client negotiated 2026-07-28`, client.getProtocolEra() === "modern", client.getProtocolEra());
  const done = await call(tasks, "slow_compute", { seconds: 1, label: "ext" });
  check(
    `${era}: a call becomes a task and settles with its result`,
    done.execution.kind === "task" && textOf(done.outcome.result) === "Computed ext after 1.0s.",
    done.outcome,
  );
  const confirmed = await call(tasks, "confirm_delete", { filename: "ext.txt" });
  check(
    `${era}: an elicitation during the task is answered (tasks/update)`,
    textOf(confirmed.outcome.result) === "Deleted ext.txt." && asked.some((a) => a.message === "Delete ext.txt?"),
    { outcome: confirmed.outcome, asked },
  );
  const durable = await call(tasks, "durable_confirm", { filename: "ext-durable.txt" });
  check(
    `${era}: a durable tool's question is answered (tasks/update), and it settles after its sleep`,
    textOf(durable.outcome.result) === "Deleted ext-durable.txt durably (15 characters checked)." &&
      asked.filter((a) => a.message === "Durably delete ext-durable.txt?").length === 1,
    { outcome: durable.outcome, asked },
  );
  const sleeping = await tasks.callTool(
    "durable_confirm",
    { filename: "ext-durable-cancel.txt", sleep_seconds: 3600 },
    { task: { preference: "prefer" } },
  );
  const settling = settle(sleeping).catch((error) => ({ status: describe(error) }));
  const sleepingId = sleeping.handle.taskId;
  let message = "";
  for (let i = 0; i < 200 && !message.startsWith("sleeping until"); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    message = (await tasks.task(sleepingId).snapshot()).statusMessage || "";
  }
  check(`${era}: a durable task sleeps working, saying until when`, message.startsWith("sleeping until"), message);
  await tasks.cancelTask(sleepingId);
  const cancelledDurable = await settling;
  check(
    `${era}: a durable task cancelled mid-sleep settles cancelled`,
    cancelledDurable.status === "cancelled",
    cancelledDurable,
  );
  const toolError = await call(tasks, "failing_job", {});
  check(
    `${era}: a tool error completes with isError`,
    toolError.outcome.status === "completed" && toolError.outcome.result?.isError === true,
    toolError.outcome,
  );
  const running = await tasks.callTool("slow_compute", { seconds: 30, label: "ext-cancel" }, { task: { preference: "prefer" } });
  await tasks.cancelTask(running.handle.taskId);
  const cancelled = await settle(running);
  check(`${era}: tasks/cancel cancels it`, cancelled.status === "cancelled", cancelled);
  await tasks.close();
  await client.close();
}

for (const era of [legacy, modern]) {
  try {
    await era();
  } catch (error) {
    check(`${era.name}: no unexpected error`, false, describe(error));
  }
}
report();
