"""The relay against a real coved, through an environment whose exec runs commands on this
machine as Harbor's Docker environment runs them in a container (stderr into stdout, no
stdin). Run by the harness (harness/tests/e2e/harbor.rs), which starts coved and passes
COVED_BIN, COVED_PORT, COVED_TOKEN and COVED_WORKSPACE.

    python -m unittest discover integrations/harbor/tests
"""

import asyncio
import os
import shutil
import tempfile
import time
import unittest
from dataclasses import dataclass
from pathlib import Path

import httpx

from cove_harbor.relay import INLINE_REQUEST_MAX, Relay


@dataclass
class Result:
    stdout: str | None
    return_code: int


class LocalEnvironment:
    """Harbor's environment interface over this machine: what the relay uses of it."""

    def __init__(self) -> None:
        self.uploads = 0
        self.downloads = 0

    async def exec(self, command, cwd=None, env=None, timeout_sec=None, user=None):
        process = await asyncio.create_subprocess_exec(
            "bash", "-c", command,
            env={**os.environ, **(env or {})},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            out, _ = await process.communicate()
        except asyncio.CancelledError:
            process.kill()
            await process.wait()
            raise
        return Result(out.decode(errors="replace"), process.returncode)

    async def upload_file(self, source_path, target_path):
        self.uploads += 1
        shutil.copy(source_path, target_path)

    async def download_file(self, source_path, target_path):
        self.downloads += 1
        shutil.copy(source_path, target_path)


def settings():
    names = ["COVED_BIN", "COVED_PORT", "COVED_TOKEN", "COVED_WORKSPACE"]
    missing = [n for n in names if n not in os.environ]
    if missing:
        raise RuntimeError(f"set {', '.join(missing)} (the harness's harbor test does)")
    return {n: os.environ[n] for n in names}


class RelayTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        self.s = settings()
        self.spill = tempfile.mkdtemp()
        self.environment = LocalEnvironment()
        self.relay = Relay(self.environment, self.s["COVED_BIN"], int(self.s["COVED_PORT"]), spill_dir=self.spill)
        self.url = await self.relay.start()
        self.headers = {"authorization": f"Bearer {self.s['COVED_TOKEN']}"}

    async def asyncTearDown(self):
        await self.relay.close()
        shutil.rmtree(self.spill, ignore_errors=True)

    async def test_a_large_request_goes_up_as_a_file_and_a_large_answer_comes_down_as_one(self):
        content = "y" * (INLINE_REQUEST_MAX * 3)
        async with httpx.AsyncClient(base_url=self.url, headers=self.headers, timeout=60) as client:
            made = await client.post("/v1/files/create", json={"path": "big.txt", "content": content})
            self.assertEqual(made.status_code, 200, made.text)
            self.assertEqual(self.environment.uploads, 1)
            self.assertEqual(len((Path(self.s["COVED_WORKSPACE"]) / "big.txt").read_text()), len(content))

            data = bytes(i % 253 for i in range(6 * 1024 * 1024))
            (Path(self.s["COVED_WORKSPACE"]) / "big.bin").write_bytes(data)
            got = await client.get("/v1/files/content", params={"path": "big.bin"})
            self.assertEqual(got.status_code, 200)
            self.assertEqual(got.content, data)
            self.assertEqual(self.environment.downloads, 1)
            self.assertEqual(os.listdir(self.spill), [], "the spilled body stays behind")

            # Kept-alive connection, coved's own refusal relayed as it is.
            refused = await client.get("/v1/info", headers={"authorization": "Bearer " + "n" * 40})
            self.assertEqual(refused.status_code, 401)
            self.assertEqual(refused.json()["error"]["code"], "unauthorized")
        self.assertEqual(self.relay.failures, 0)

    async def test_closing_abandons_a_request_still_running(self):
        async def long_command():
            async with httpx.AsyncClient(base_url=self.url, headers=self.headers, timeout=120) as client:
                return await client.post("/v1/shell/exec", json={"command": "sleep 60", "timeout_secs": 90})

        pending = asyncio.create_task(long_command())
        while self.relay.requests == 0:
            await asyncio.sleep(0.05)
        started = time.monotonic()
        await self.relay.close()
        self.assertLess(time.monotonic() - started, 30, "close waited for the command")
        with self.assertRaises(httpx.HTTPError):
            await pending

    async def test_a_relay_that_cannot_reach_coved_answers_502_with_the_reason(self):
        relay = Relay(self.environment, self.s["COVED_BIN"], 1, spill_dir=self.spill)
        url = await relay.start()
        try:
            async with httpx.AsyncClient(base_url=url, headers=self.headers) as client:
                answer = await client.get("/v1/info")
            self.assertEqual(answer.status_code, 502)
            self.assertIn("no coved answers", answer.json()["error"]["message"])
            self.assertEqual(relay.failures, 1)
        finally:
            await relay.close()


if __name__ == "__main__":
    unittest.main()
