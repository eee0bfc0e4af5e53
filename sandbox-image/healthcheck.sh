#!/usr/bin/env bash
# HEALTHCHECK: coved answers /health on its port (the one COVED_LISTEN names).
set -euo pipefail
listen="${COVED_LISTEN:-0.0.0.0:7700}"
port="${listen##*:}"
exec curl -fsS --max-time 3 -o /dev/null "http://127.0.0.1:${port}/health"
