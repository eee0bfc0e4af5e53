#!/usr/bin/env bash
# Sets Cove up on a fresh Debian or Ubuntu machine: Chromium for the browser tools and
# bubblewrap for the local sandbox's walls (through apt-get, with sudo when not root), then
# a release build of `cove` and `coved` into
# target/release. Safe to run again: what is there already is kept.
set -euo pipefail
cd "$(dirname "$0")"

have() { command -v "$1" >/dev/null 2>&1; }

# install PACKAGE WHAT IF_FAILED IF_NO_APT: installs a Debian package with apt-get (sudo
# when not root), saying what it is for and what happens without it.
install() {
    if have apt-get; then
        local sudo=""
        if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
        echo "setup: installing $2 (apt-get install $1)" >&2
        if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "$1" >/dev/null; }; then
            echo "setup: $1 could not be installed; $3" >&2
        fi
    else
        echo "setup: no $1 and no apt-get: $4" >&2
    fi
}

if have chromium || have chromium-browser || have google-chrome || have google-chrome-stable; then
    echo "setup: Chromium is installed" >&2
else
    install chromium "Chromium for the browser tools" \
        "the browser tools will answer browser_unavailable, everything else works" \
        "install Chromium for the browser tools (or pass coved --chromium PATH)"
fi

if have bwrap; then
    echo "setup: bubblewrap is installed" >&2
else
    install bubblewrap "bubblewrap, the local sandbox's walls" \
        "local sandboxes will refuse to start (use Docker, a remote sandbox, or --sandbox host)" \
        "install bubblewrap for the local sandbox's walls"
fi

if ! have cargo; then
    echo "setup: cargo is missing: install the Rust toolchain (https://rustup.rs), then run ./setup.sh again" >&2
    exit 1
fi
echo "setup: building cove and coved (release; a few minutes the first time)" >&2
cargo build --release --bin cove --bin coved
echo "setup: done: target/release/cove run \"task\" (needs OPENAI_API_KEY or ANTHROPIC_API_KEY, or OPENAI_BASE_URL for a local OpenAI-compatible server)" >&2
