"""The `mcp-tasks` terminal client: commands (`main`), listings (`browse`), rendering
(`display`, `terminal`), forms from a requested schema (`forms`) and sign-in (`sign_in`).

Built on the SDK extension in `mcp_tasks_aws.client`; nothing in the extension imports this
package.
"""
