// The official TypeScript SDK client (@modelcontextprotocol/sdk 1.x, a 2025-11-25 client)
// against an endpoint serving the conformance tools: connect, list and call tools, answer an
// elicitation, a sampling request and a roots request mid-call, prompts, resources, logs, and
// end the session. Prints one JSON line per check; exits 1 if any failed.
//
// Usage: node ts_sdk_client.cjs <node_modules dir> <endpoint URL>
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");
const { commandLine, check, textOf, describe, report } = require("./driver.cjs");

const { modulesDir, url } = commandLine("ts_sdk_client.cjs");
const load = createRequire(path.join(modulesDir, "_here.js"));
const { Client } = load("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = load("@modelcontextprotocol/sdk/client/streamableHttp.js");
const {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} = load("@modelcontextprotocol/sdk/types.js");

async function main() {
  const asked = [];
  const logs = [];
  const client = new Client(
    { name: "interop-ts-sdk", version: "1.0.0" },
    { capabilities: { elicitation: {}, sampling: {}, roots: {} } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(`elicit: ${request.params.message}`);
    return {
      action: "accept",
      content: { username: "ada", email: "ada@example.com", name: "Ada", context: "docs" },
    };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async () => {
    asked.push("sample");
    return { role: "assistant", content: { type: "text", text: "Paris" }, model: "test-model" };
  });
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    asked.push("roots");
    return { roots: [{ uri: "file:///work", name: "work" }] };
  });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logs.push(notification.params.data);
  });

  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  check("connect negotiates 2025-11-25", transport.protocolVersion === "2025-11-25", transport.protocolVersion);
  check("connect is given a session id", Boolean(transport.sessionId), transport.sessionId);
  check("server identifies itself", client.getServerVersion()?.name === "mcp-tasks-aws-conformance", client.getServerVersion());

  const tools = (await client.listTools()).tools;
  const names = tools.map((tool) => tool.name);
  check("tools/list lists the tools", names.includes("test_simple_text") && names.includes("test_elicitation"), names);
  const required = tools.find((tool) => tool.name === "failing_job");
  check("tools/list says taskSupport", required?.execution?.taskSupport === "required", required);

  const simple = await client.callTool({ name: "greet", arguments: { name: "Ada" } });
  check("tools/call answers", textOf(simple) === "Hello, Ada!", simple);

  const elicited = await client.callTool({ name: "test_elicitation", arguments: { message: "Who are you?" } });
  check("an elicitation mid-call is answered", textOf(elicited).includes('"username": "ada"'), elicited);
  const sampled = await client.callTool({ name: "test_sampling", arguments: { prompt: "Capital of France?" } });
  check("a sampling request mid-call is answered", textOf(sampled) === "LLM response: Paris", sampled);
  const several = await client.callTool({ name: "test_input_required_result_multiple_inputs", arguments: {} });
  check("three questions at once are answered", !several.isError && asked.includes("roots"), several);
  const rounds = await client.callTool({ name: "test_input_required_result_multi_round", arguments: {} });
  check("a call over two rounds of questions completes", !rounds.isError, rounds);

  const prompts = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
  check("prompts/list lists the prompts", prompts.includes("test_input_required_result_prompt"), prompts);
  const prompt = await client.getPrompt({ name: "test_input_required_result_prompt", arguments: {} });
  check("prompts/get (asking a question) answers", prompt.messages[0]?.content?.text === "Use this context: docs", prompt);

  const resources = (await client.listResources()).resources.map((resource) => resource.uri);
  check("resources/list lists the resources", resources.includes("conformance://readme"), resources);
  const readme = await client.readResource({ uri: "conformance://readme" });
  check("resources/read answers", (readme.contents[0]?.text || "").includes("fixtures"), readme);
  await client.subscribeResource({ uri: "test://watched-resource" });
  check("resources/subscribe answers", true);

  await client.setLoggingLevel("info");
  await client.callTool({ name: "test_tool_with_logging", arguments: {} });
  check("logs arrive once a level is set", logs.length === 3, logs);
  await client.ping();
  check("ping answers", true);

  // terminateSession sends DELETE and forgets the id: ask with the old id to see it is gone.
  const sessionId = transport.sessionId;
  await transport.terminateSession();
  const after = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-session-id": sessionId,
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 99, method: "tools/list" }),
  });
  check("after DELETE the session is unknown (404)", after.status === 404, after.status);
  await client.close();
}

main()
  .catch((error) => check("no unexpected error", false, describe(error)))
  .finally(report);
