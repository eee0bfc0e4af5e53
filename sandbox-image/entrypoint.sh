#!/usr/bin/env bash
# The image's main process (under tini): coved on 0.0.0.0:7700 over /workspace.
#
# The token comes from the environment: COVE_TOKEN, or COVE_TOKEN_FILE naming a mounted
# secret. With neither, coved generates one into ~/.local/state/coved/token and logs where.
# Every coved flag can be given as an argument or its COVED_* variable (coved --help).
set -euo pipefail

export COVED_LISTEN="${COVED_LISTEN:-0.0.0.0:7700}"
export COVED_WORKSPACE="${COVED_WORKSPACE:-/workspace}"
export COVED_CHROMIUM="${COVED_CHROMIUM:-/usr/bin/chromium}"
export LANG="${LANG:-en_US.UTF-8}"

exec coved "$@"
