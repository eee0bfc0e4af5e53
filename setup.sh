#!/usr/bin/env bash
# Sets Cove up on a fresh Debian or Ubuntu machine: Chromium for the browser tools (through
# apt-get, with sudo when not root), then a release build of `cove` and `coved` into
# target/release. Safe to run again: what is there already is kept.
set -euo pipefail
cd "$(dirname "$0")"

have() { command -v "$1" >/dev/null 2>&1; }

if have chromium || have chromium-browser || have google-chrome || have google-chrome-stable; then
    echo "setup: Chromium is installed" >&2
elif have apt-get; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    echo "setup: installing Chromium (apt-get install chromium) for the browser tools" >&2
    if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null; }; then
        echo "setup: Chromium could not be installed; the browser tools will answer browser_unavailable, everything else works" >&2
    fi
else
    echo "setup: no Chromium and no apt-get: install Chromium for the browser tools (or pass coved --chromium PATH)" >&2
fi

if have bwrap; then
    echo "setup: bubblewrap is installed" >&2
elif have apt-get; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    echo "setup: installing bubblewrap (apt-get install bubblewrap): the local sandbox's walls" >&2
    if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null; }; then
        echo "setup: bubblewrap could not be installed; local sandboxes will refuse to start (use Docker, a remote sandbox, or --sandbox host)" >&2
    fi
else
    echo "setup: no bubblewrap and no apt-get: install bubblewrap for the local sandbox's walls" >&2
fi

if ! have cargo; then
    echo "setup: cargo is missing: install the Rust toolchain (https://rustup.rs), then run ./setup.sh again" >&2
    exit 1
fi
echo "setup: building cove and coved (release; a few minutes the first time)" >&2
cargo build --release --bin cove --bin coved
echo "setup: done: target/release/cove run \"task\" (needs OPENAI_API_KEY or ANTHROPIC_API_KEY, or OPENAI_BASE_URL for a local OpenAI-compatible server)" >&2
