"""The 2025-11-25 (legacy) side of the dual-era endpoint.

`endpoint` checks sessions and routes legacy messages through the server's one method table;
`methods` registers the (legacy, method) entries; `questions` carries inline questions as
server->client requests over SSE and resumes them; `state` is the port (and its in-memory
twin) for the little session state that must be stored. No AWS here: the DynamoDB adapter is
`aws.sessions`. The package is imported on the first legacy message only (see `app`).
"""
