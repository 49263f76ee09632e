"""kairos.runtime.torch_threads: the one thread that runs a model's torch work, a job on a thread
that ends with it, and a job in a fresh interpreter."""

from __future__ import annotations

import functools
import os
import threading

import pytest
import torch

from kairos.runtime.torch_threads import (
    TorchThread,
    in_fresh_process,
    on_fresh_thread,
    waiting_thread,
)


def test_a_torch_thread_runs_every_call_in_order_on_one_other_thread() -> None:
    thread = TorchThread("test-torch")
    seen: list[tuple[int, int]] = []

    def record(i: int) -> None:
        seen.append((i, threading.get_ident()))

    futures = [thread.submit(functools.partial(record, i)) for i in range(20)]
    for f in futures:
        f.result(timeout=10)
    assert [i for i, _ in seen] == list(range(20))
    idents = {ident for _, ident in seen}
    assert idents == {thread.ident} and threading.get_ident() not in idents
    assert thread.call(lambda: 6 * 7) == 42
    thread.close()


def test_an_exception_reaches_the_caller_and_the_thread_keeps_serving() -> None:
    thread = TorchThread("test-torch")

    def fail() -> None:
        raise ValueError("bad model path")

    with pytest.raises(ValueError, match="bad model path"):
        thread.call(fail)
    assert thread.call(lambda: "still here") == "still here"
    # a call made from the thread itself runs at once instead of waiting on itself
    assert thread.call(lambda: thread.call(lambda: threading.get_ident())) == thread.ident
    thread.close()


def test_closing_ends_the_thread_after_the_calls_already_submitted() -> None:
    thread = TorchThread("test-torch")
    gate = threading.Event()
    first = thread.submit(gate.wait)
    second = thread.submit(lambda: "done")
    thread.close()
    with pytest.raises(RuntimeError, match="closed"):
        thread.submit(lambda: None)
    gate.set()
    assert first.result(timeout=10) is True and second.result(timeout=10) == "done"
    thread._thread.join(timeout=10)
    assert not thread._thread.is_alive()


def test_a_thread_count_is_the_threads_own_and_the_default_stays() -> None:
    default = torch.get_num_threads()
    thread = TorchThread("test-torch", threads=1)
    assert thread.call(torch.get_num_threads) == 1
    assert torch.get_num_threads() == default
    later: list[int] = []
    t = threading.Thread(target=lambda: later.append(torch.get_num_threads()))
    t.start()
    t.join()
    assert later == [default]  # threads started afterwards read the process default
    thread.close()


def test_a_job_on_a_fresh_thread_returns_raises_and_restores_the_count() -> None:
    default = torch.get_num_threads()
    where: list[threading.Thread] = []

    def job() -> int:
        where.append(threading.current_thread())
        return torch.get_num_threads()

    assert on_fresh_thread(job, threads=1) == 1
    assert where[0] is not threading.current_thread() and not where[0].is_alive()
    assert torch.get_num_threads() == default
    empty: dict[str, int] = {}
    with pytest.raises(KeyError, match="missing"):
        on_fresh_thread(lambda: empty["missing"])


def test_a_job_in_a_fresh_process_runs_in_another_interpreter() -> None:
    assert in_fresh_process(os.getpid) != os.getpid()
    assert in_fresh_process(divmod, 17, 5) == (3, 2)


def test_a_waiting_thread_runs_on_one_thread_while_threads_it_starts_get_the_default() -> None:
    default = torch.get_num_threads()
    started: list[int] = []
    with waiting_thread():
        assert torch.get_num_threads() == 1
        t = threading.Thread(target=lambda: started.append(torch.get_num_threads()))
        t.start()
        t.join()
    assert started == [default] and torch.get_num_threads() == default
