#!/bin/bash
# The STREAMING front door's handler: under AWS's Lambda Web Adapter (the layer's /opt/bootstrap
# is the function's AWS_LAMBDA_EXEC_WRAPPER), Lambda runs this instead of a Python handler and
# the adapter forwards each invocation to the server it starts, on 127.0.0.1:$AWS_LWA_PORT.
# One worker, no access log (the adapter and the app log), no lifespan (the app is built on
# import, before the port opens: readiness means ready).
exec python3 -m uvicorn handlers.stream:asgi \
    --host 127.0.0.1 --port "${AWS_LWA_PORT:-8080}" \
    --workers 1 --no-access-log --lifespan off --log-level warning
