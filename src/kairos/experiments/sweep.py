"""Parameter sweeps that run in parallel, cache every finished point, and resume.

A point is a base config with some fields updated. Its cache key hashes the function's
qualified name, the point's full config JSON, the kairos source code and the content of every
file the point reads (any config string naming an existing file, and whatever the config's
`input_files()` declares, such as shared data it reads by a fixed name), so neither a changed
parameter, changed code nor a changed input file ever reuses a stale result, while an
interrupted sweep picks up exactly where it stopped. Point functions must be
module-level (picklable) and deterministic given their config (seeds live in the config), which
is what makes a parallel sweep equal a serial one.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from threadpoolctl import threadpool_limits

from kairos.experiments.progress import progress

C = TypeVar("C", bound=BaseModel)
PointFn = Callable[[C], dict[str, Any]]


Done = Callable[[int, "dict[str, Any] | BaseException"], None]


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. under `taskset` or a
    container's cpuset), not the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _limit_threads(threads: int) -> None:
    """A pool worker's BLAS/OpenMP (and torch's, if loaded) threads: its share of the cores.

    Left alone, every worker's BLAS starts one thread per core, so J workers run J x cores
    threads that preempt each other (as joblib's workers also avoid): measured on Auxo's E1
    quick (2 cores), two workers took 54.6 s with BLAS's default threads and 41.5 s with one
    each, against 67.7 s serially. Results are the same bits either way (checked on E1)."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)  # for libraries the point loads later
    threadpool_limits(threads)  # for those already loaded (forked from the parent)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """A process pool whose workers split the usable cores between them (`_limit_threads`):
    every pool of experiment points opens through here."""
    share = max(1, usable_cores() // workers)
    return ProcessPoolExecutor(max_workers=workers, initializer=_limit_threads, initargs=(share,))


class SweepError(RuntimeError):
    """Some points of a sweep failed; the others finished and are cached."""


def grid(**axes: Iterable[Any]) -> list[dict[str, Any]]:
    """The Cartesian product of the axes, in row-major order: `grid(a=[1,2], b=[3])`."""
    names = list(axes)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*axes.values())]


@functools.cache
def code_fingerprint() -> str:
    """A hash of the installed kairos sources: a result computed by other code is never reused."""
    import kairos

    root = Path(kairos.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def input_files(config: BaseModel) -> list[Path]:
    """The files a point reads: the config's `input_files()` if it declares them, and every
    string in the config that names an existing file."""
    declared = getattr(config, "input_files", None)
    files = {Path(f) for f in declared()} if callable(declared) else set()
    for text in _strings(config.model_dump(mode="json")):
        if 0 < len(text) < 4096 and "\n" not in text:
            try:
                if Path(text).is_file():
                    files.add(Path(text))
            except (OSError, ValueError):
                continue  # not a path this system can stat
    return sorted(f.resolve() for f in files)


@functools.lru_cache(maxsize=256)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_digest(path: Path) -> str:
    """The content hash of a file, computed once per version (modification time and size),
    except that a file modified in the last few seconds is hashed afresh: a second write
    within the file system's timestamp granularity could keep both."""
    st = path.stat()
    if time.time() - st.st_mtime < 2.0:
        return _file_digest.__wrapped__(str(path), st.st_mtime_ns, st.st_size)
    return _file_digest(str(path), st.st_mtime_ns, st.st_size)


def point_key(fn: Callable[..., Any], config: BaseModel) -> str:
    inputs = "".join(f"{f}:{file_digest(f)}\n" for f in input_files(config))
    ident = (
        f"{fn.__module__}.{fn.__qualname__}\n{config.model_dump_json()}\n"
        f"{code_fingerprint()}\n{inputs}"
    )
    return hashlib.sha256(ident.encode()).hexdigest()[:24]


class Sweep(Generic[C]):
    """Runs `fn` over `base` updated by each point; results come back in point order."""

    def __init__(
        self,
        fn: PointFn[C],
        base: C,
        points: Sequence[Mapping[str, Any]],
        *,
        cache_dir: str | Path | None = None,
        jobs: int = 1,
        ray_address: str | None = None,
        progress: bool = True,
        description: str = "sweep",
    ) -> None:
        self.fn = fn
        # validated up front: a bad point fails before any work starts
        self.configs: list[C] = [
            type(base).model_validate({**base.model_dump(), **dict(p)}) for p in points
        ]
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.jobs = max(1, jobs)
        self.ray_address = ray_address
        self.progress = progress
        self.description = description
        self.computed = 0  # points actually run (not served from the cache) by the last run()

    def _cache_path(self, cfg: C) -> Path | None:
        return self.cache_dir / f"{point_key(self.fn, cfg)}.json" if self.cache_dir else None

    def _load(self, cfg: C) -> dict[str, Any] | None:
        path = self._cache_path(cfg)
        if path is None or not path.is_file():
            return None
        try:
            data: dict[str, Any] = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            return None  # a torn or foreign file: recompute rather than trust it
        return data.get("result")

    def _store(self, cfg: C, result: dict[str, Any]) -> None:
        path = self._cache_path(cfg)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"config": cfg.model_dump(mode="json"), "result": result}
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(payload, fh)
        os.replace(tmp, path)  # atomic: a crash never leaves half a result behind

    def run(self) -> list[dict[str, Any]]:
        """Results in point order. A failing point does not stop the others: every point that
        can finish is computed and cached, then `SweepError` names the ones that failed."""
        results: list[dict[str, Any] | None] = [self._load(c) for c in self.configs]
        todo = [i for i, r in enumerate(results) if r is None]
        self.computed = 0
        self.failures: dict[int, BaseException] = {}
        with progress(self.description, len(self.configs), self.progress) as advance:
            advance(len(self.configs) - len(todo))

            def done(i: int, result: dict[str, Any] | BaseException) -> None:
                if isinstance(result, BaseException):
                    self.failures[i] = result
                    advance(1)
                    return
                # round-trip through JSON so cached and fresh results are the same objects
                clean: dict[str, Any] = json.loads(json.dumps(result))
                self._store(self.configs[i], clean)
                results[i] = clean
                self.computed += 1
                advance(1)

            if self.ray_address:
                self._run_ray(todo, done)
            elif self.jobs == 1 or len(todo) <= 1:
                for i in todo:
                    try:
                        out: dict[str, Any] | BaseException = self.fn(self.configs[i])
                    except Exception as exc:
                        out = exc
                    done(i, out)
            else:
                self._run_pool(todo, done)
        if self.failures:
            first = min(self.failures)
            raise SweepError(
                f"{len(self.failures)} of {len(self.configs)} points failed "
                f"(first: point {first}: {self.failures[first]!r}); finished points are cached"
            ) from self.failures[first]
        return [r for r in results if r is not None]

    def _run_pool(self, todo: list[int], done: Done) -> None:
        with worker_pool(min(self.jobs, len(todo))) as pool:
            pending: dict[Future[dict[str, Any]], int] = {
                pool.submit(self.fn, self.configs[i]): i for i in todo
            }
            try:
                while pending:
                    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        i = pending.pop(fut)
                        exc = fut.exception()
                        done(i, exc if exc is not None else fut.result())
            finally:  # on Ctrl-C: drop what has not started; what finished is already cached
                for fut in pending:
                    fut.cancel()

    def _run_ray(self, todo: list[int], done: Done) -> None:
        try:
            import ray
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise RuntimeError("--ray needs Ray: pip install 'kairos[tune]'") from exc
        if not ray.is_initialized():
            ray.init(
                address=self.ray_address,
                ignore_reinit_error=True,
                log_to_driver=False,
                include_dashboard=False,
                num_cpus=None if self.ray_address != "local" else self.jobs,
            )
        remote = ray.remote(self.fn)
        refs = {remote.remote(self.configs[i]): i for i in todo}
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1)
            for ref in ready:
                i = refs.pop(ref)
                try:
                    done(i, ray.get(ref))
                except Exception as exc:
                    done(i, exc)
