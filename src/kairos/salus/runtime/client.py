"""The client of the Salus service (spec 6.1's adaptor, over HTTP with httpx).

    with SalusClient("http://127.0.0.1:8000") as salus:
        job = salus.submit("cnn-a", "kairos.salus.runtime.zoo:cnn", iterations=200, expected_s=4)
        for snapshot in salus.watch(job["id"]):
            print(snapshot["state"], snapshot["iterations_done"])

"Unmodified user code" becomes one call: the job's code is a factory the service imports by
path, so nothing but the JSON job description crosses the wire.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import httpx

TERMINAL = frozenset({"done", "failed", "cancelled"})


class SalusError(RuntimeError):
    """The service refused a request; `status`, `param` and the server's message."""

    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.param = param


class SalusClient:
    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 30.0) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout_s)

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._request(method, path, **kwargs).json()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        r = self.http.request(method, path, **kwargs)
        if r.status_code >= 400:
            try:
                err = r.json()["error"]
                raise SalusError(r.status_code, err["message"], err.get("param"))
            except (ValueError, KeyError, TypeError):
                raise SalusError(r.status_code, r.text) from None
        return r

    def submit(
        self,
        name: str,
        factory: str,
        iterations: int,
        kind: str = "train",
        expected_s: float | None = None,
        priority: int = 0,
        options: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Submit a job; the service's record of it (state `profiling` at first)."""
        body: dict[str, Any] = {
            "name": name,
            "factory": factory,
            "kind": kind,
            "iterations": iterations,
            "priority": priority,
            "options": options or {},
        }
        if expected_s is not None:
            body["expected_s"] = expected_s
        return self._call("POST", "/v1/jobs", json=body)

    def get(self, job_id: int, wait_s: float = 0.0) -> dict[str, Any]:
        """The job now, or once it ended if that happens within `wait_s` seconds."""
        params = {"wait_s": wait_s} if wait_s else None
        return self._call("GET", f"/v1/jobs/{job_id}", params=params)

    def wait(self, job_id: int, timeout_s: float = 600.0) -> dict[str, Any]:
        """Block until the job ended (done, failed or cancelled); TimeoutError past timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            job = self.get(job_id, wait_s=max(0.0, min(30.0, left)))
            if job["state"] in TERMINAL:
                return job
            if left <= 0:
                raise TimeoutError(f"job {job_id} did not end within {timeout_s} s")

    def watch(self, job_id: int, poll_s: float = 0.2) -> Iterator[dict[str, Any]]:
        """The job's record each time its state or progress changes, until it ends."""
        last: tuple[Any, ...] | None = None
        while True:
            job = self.get(job_id)
            key = (job["state"], job["iterations_done"], job["lane"])
            if key != last:
                last = key
                yield job
            if job["state"] in TERMINAL:
                return
            time.sleep(poll_s)

    def checkpoint(self, job_id: int, wait_s: float = 30.0) -> bytes:
        """The running job's weights as safetensors bytes (`safetensors.torch.load` reads
        them), taken at its next iteration boundary."""
        timeout = httpx.Timeout(self.http.timeout.read or 30.0, read=wait_s + 10.0)
        r = self._request(
            "GET", f"/v1/jobs/{job_id}/checkpoint", params={"wait_s": wait_s}, timeout=timeout
        )
        return r.content

    def cancel(self, job_id: int) -> dict[str, Any]:
        return self._call("POST", f"/v1/jobs/{job_id}/cancel")

    def jobs(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/jobs")["jobs"]

    def stats(self) -> dict[str, Any]:
        return self._call("GET", "/v1/stats")

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> SalusClient:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
