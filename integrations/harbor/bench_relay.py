"""What the relay costs a request: coved's API called directly, then through the relay over
an exec that runs on this machine (the relay's own cost: one `coved call` process, the
envelope in base64), then through `docker exec` into a container (what an exec into a
container adds). Prints JSON figures (milliseconds).

    target/test-deps/harbor/bin/python integrations/harbor/bench_relay.py \
        --coved target/debug/coved --static-coved target/x86_64-unknown-linux-gnu/debug/coved \
        [--image cove-base:bookworm] [-n 50]
"""

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from cove_harbor.relay import Relay  # noqa: E402
from tests.test_relay import LocalEnvironment, Result  # noqa: E402


class DockerExec(LocalEnvironment):
    """An environment whose exec is `docker exec CONTAINER bash -c`, as Harbor's runs it."""

    def __init__(self, container: str) -> None:
        super().__init__()
        self.container = container

    async def exec(self, command, cwd=None, env=None, timeout_sec=None, user=None):
        names = [a for k in (env or {}) for a in ("-e", k)]
        process = await asyncio.create_subprocess_exec(
            "docker", "exec", *names, self.container, "bash", "-c", command,
            env={**os.environ, **(env or {})},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await process.communicate()
        return Result(out.decode(errors="replace"), process.returncode)


async def timed(client: httpx.AsyncClient, n: int) -> dict:
    figures = {}
    for name, call in [
        ("info", lambda: client.get("/v1/info")),
        ("exec_true", lambda: client.post("/v1/shell/exec", json={"command": "true"})),
    ]:
        samples = []
        for _ in range(n):
            started = time.perf_counter()
            answer = await call()
            samples.append((time.perf_counter() - started) * 1000)
            answer.raise_for_status()
        samples.sort()
        figures[name] = {
            "p50_ms": round(statistics.median(samples), 2),
            "p95_ms": round(samples[int(len(samples) * 0.95) - 1], 2),
        }
    return figures


def start_coved(coved: str, workspace: str, token: str) -> tuple[subprocess.Popen, int]:
    process = subprocess.Popen(
        [coved, "--listen", "127.0.0.1:0", "--workspace", workspace, "--state-dir", workspace + "-state"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={**os.environ, "COVE_TOKEN": token},
    )
    line = process.stdout.readline().decode()
    return process, int(line.rsplit(":", 1)[1])


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--coved", required=True)
    parser.add_argument("--static-coved")
    parser.add_argument("--image", default="cove-base:bookworm")
    parser.add_argument("-n", type=int, default=50)
    args = parser.parse_args()
    token = secrets.token_hex(24)
    headers = {"authorization": f"Bearer {token}"}
    results = {"requests": args.n}
    with tempfile.TemporaryDirectory() as scratch:
        daemon, port = start_coved(args.coved, scratch + "/ws", token)
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers) as client:
                results["direct"] = await timed(client, args.n)
            relay = Relay(LocalEnvironment(), args.coved, port, spill_dir=scratch)
            url = await relay.start()
            async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
                results["relay_local_exec"] = await timed(client, args.n)
            await relay.close()
        finally:
            daemon.terminate()
            daemon.wait()
    if args.static_coved:
        results["relay_docker_exec"] = await in_container(args, token, headers)
    print(json.dumps(results, indent=2))


async def in_container(args, token: str, headers: dict) -> dict:
    name = f"cove-bench-{secrets.token_hex(4)}"
    subprocess.run(["docker", "run", "-d", "--name", name, args.image, "sleep", "infinity"], check=True, capture_output=True)
    try:
        subprocess.run(["docker", "cp", args.static_coved, f"{name}:/tmp/coved"], check=True)
        subprocess.run(
            ["docker", "exec", "-d", "-e", "COVE_TOKEN", name, "/tmp/coved", "--listen", "127.0.0.1:7700", "--workspace", "/tmp/ws"],
            check=True, env={**os.environ, "COVE_TOKEN": token},
        )
        environment = DockerExec(name)
        relay = Relay(environment, "/tmp/coved", 7700)
        url = await relay.start()
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
            for _ in range(50):
                if (await client.get("/health")).status_code == 200:
                    break
                await asyncio.sleep(0.1)
            figures = await timed(client, args.n)
        await relay.close()
        return figures
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)


if __name__ == "__main__":
    asyncio.run(main())
