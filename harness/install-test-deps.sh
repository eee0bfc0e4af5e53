#!/usr/bin/env bash
# What the tests need besides Debian's base packages: pages written by others, for the
# browser tests (Python's documentation and jQuery UI's demos from Debian, Swagger UI from
# npm).
set -euo pipefail
cd "$(dirname "$0")/.."

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
if ! [ -f /usr/share/doc/python3/html/library/os.html ]; then
    $sudo apt-get install -y -qq --no-install-recommends python3-doc >/dev/null
fi
if ! [ -f /usr/share/doc/libjs-jquery-ui-docs/examples/dialog/modal-form.html ]; then
    # Its dependencies (libjs-jquery-ui, node-requirejs) carry the scripts the demos load.
    $sudo apt-get install -y -qq --no-install-recommends libjs-jquery-ui-docs >/dev/null
fi
if ! command -v npm >/dev/null 2>&1; then
    $sudo apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
mkdir -p target/test-deps
npm install --prefix target/test-deps --no-audit --no-fund --silent swagger-ui-dist@5.35.0
