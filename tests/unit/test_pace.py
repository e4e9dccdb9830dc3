"""The limit on file transfers in flight: closed while the store answers at once, open
while transfers wait for it (``reconciler.outputs.pace``)."""

from __future__ import annotations

import threading

from reconciler.outputs import pace
from reconciler.outputs.pace import RunGate, TransferLimit


def _waits(limit: TransferLimit, seconds: float, n: int = pace.WINDOW) -> None:
    for _ in range(n):
        limit.first_byte(seconds)


def test_the_limit_starts_low_and_opens_once_transfers_wait_on_the_store() -> None:
    limit = TransferLimit(8, 32)
    assert limit.limit == 8
    _waits(limit, 0.001)
    assert limit.limit == 8
    _waits(limit, 0.05, pace.WINDOW // 2 - 1)  # under half the window slow: not yet
    assert limit.limit == 8
    _waits(limit, 0.05, 1)
    assert limit.limit == 32


def test_the_limit_closes_again_once_the_store_answers_at_once_and_holds_in_between() -> None:
    limit = TransferLimit(8, 32)
    _waits(limit, 0.05)
    assert limit.limit == 32
    _waits(limit, pace.SLOW_S / 2)  # between a quarter and the threshold: no change
    assert limit.limit == 32
    _waits(limit, pace.SLOW_S / 10)
    assert limit.limit == 8


def test_no_more_transfers_than_the_limit_run_at_once_and_a_wider_limit_wakes_the_waiters() -> None:
    limit = TransferLimit(2, 4)
    release = threading.Event()
    running: list[int] = []
    lock = threading.Lock()
    inside = threading.Semaphore(0)

    def transfer() -> None:
        assert limit.acquire()
        with lock:
            running.append(1)
        inside.release()
        release.wait(5)
        limit.release()

    threads = [threading.Thread(target=transfer) for _ in range(5)]
    for t in threads:
        t.start()
    for _ in range(2):
        assert inside.acquire(timeout=5)
    assert not inside.acquire(timeout=0.3)  # the third waits for a slot
    assert limit.peak == 2
    _waits(limit, 1.0)  # the store is slow: two more may start without any slot freed
    for _ in range(2):
        assert inside.acquire(timeout=5)
    assert not inside.acquire(timeout=0.3)
    assert limit.peak == 4
    release.set()
    for t in threads:
        t.join(5)
    assert len(running) == 5 and limit.peak == 4


def test_a_transfer_waiting_for_a_slot_gives_up_when_told_to_stop() -> None:
    limit = TransferLimit(1, 1)
    assert limit.acquire()
    stop = threading.Event()
    got: list[bool] = []
    waiter = threading.Thread(target=lambda: got.append(limit.acquire(stop=stop.is_set)))
    waiter.start()
    stop.set()
    waiter.join(5)
    assert got == [False]
    limit.release()
    assert limit.acquire()  # the slot was not leaked by the one that gave up


def _hold(slots, n: int) -> tuple[list[threading.Thread], threading.Event, threading.Semaphore]:
    """Start ``n`` threads that each take a slot and keep it until released."""
    release, inside = threading.Event(), threading.Semaphore(0)

    def hold() -> None:
        with slots:
            inside.release()
            release.wait(5)

    threads = [threading.Thread(target=hold) for _ in range(n)]
    for t in threads:
        t.start()
    return threads, release, inside


def _entered(inside: threading.Semaphore, timeout: float = 5) -> int:
    count = 0
    while inside.acquire(timeout=timeout if count == 0 else 0.3):
        count += 1
    return count


def test_the_run_gate_keeps_one_run_in_its_requests_while_the_platform_answers_at_once() -> None:
    rtt: list[float | None] = [None]
    gate = RunGate(1, 4, lambda: rtt[0], waiting=2)
    assert gate.limit() == 1  # nothing measured yet: one at a time
    rtt[0] = pace.FAR_S / 4
    assert gate.limit() == 1
    threads, release, inside = _hold(gate.requests, 3)
    assert _entered(inside) == 1
    rtt[0] = pace.FAR_S * 10  # the first answer from afar: the waiters go in
    assert _entered(inside) == 2
    release.set()
    for t in threads:
        t.join(5)
    assert gate.requests.peak == 3


def test_the_run_gate_keeps_waiting_times_as_many_runs_in_flight() -> None:
    rtt = [pace.FAR_S / 4]
    gate = RunGate(1, 4, lambda: rtt[0], waiting=2)
    threads, release, inside = _hold(gate.run, 9)
    assert _entered(inside) == 2  # near: one in its requests, one waiting for its files
    rtt[0] = pace.FAR_S * 10
    assert _entered(inside) == 6  # far: 4 x 2
    release.set()
    for t in threads:
        t.join(5)
    assert gate.run.peak == 8
