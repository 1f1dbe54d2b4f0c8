"""What the tests share, as plain modules any test folder imports (`from support.mcp import
McpClient`): clients over the real transport and the embedded stack, the published schemas,
test clocks and task records, the in-memory task domain and the tool sets test stacks serve.

Conftest files hold only fixtures; a helper more than one test module uses lives here.
"""
