"""The endpoint pool's choices, on a clock the test moves: balance, take out, try, bring back."""

from __future__ import annotations

import httpx2
import openai
import pytest

from cseaug.config import FailoverConfig
from cseaug.llm.endpoints import EndpointPool, Ticket

A, B = "http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"
REQUEST = httpx2.Request("POST", f"{A}/chat/completions")


def refused() -> openai.APIConnectionError:
    return openai.APIConnectionError(request=REQUEST)


def status(code: int) -> openai.APIStatusError:
    return openai.APIStatusError(
        f"HTTP {code}", response=httpx2.Response(code, request=REQUEST), body=None
    )


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def clock() -> Clock:
    return Clock()


def pool_of(clock: Clock, *urls: str, cooldown_s: float = 5.0) -> EndpointPool:
    return EndpointPool(
        urls or (A, B),
        FailoverConfig(failures=3, cooldown_s=cooldown_s, max_cooldown_s=30.0),
        clock=clock,
    )


def ticket(pool: EndpointPool, in_flight: list[int], concurrency: int = 4) -> Ticket:
    placed = pool.place(in_flight, [concurrency] * len(in_flight))
    assert isinstance(placed, Ticket), placed
    return placed


def fail(pool: EndpointPool, index: int, times: int, failure: BaseException) -> None:
    for _ in range(times):
        pool.finished(ticket(pool, [0, 4] if index == 0 else [4, 0]), failure)


def test_the_least_busy_endpoint_gets_the_request_and_a_full_one_none(clock: Clock) -> None:
    pool = pool_of(clock)
    assert ticket(pool, [3, 1]).index == 1
    assert ticket(pool, [2, 3]).index == 0
    assert ticket(pool, [1, 4]).index == 0  # B has its `concurrency` in flight
    assert pool.place([4, 4], [4, 4]) is None  # every slot taken: wait for one


def test_failures_in_a_row_take_an_endpoint_out_and_the_other_keeps_serving(
    clock: Clock,
) -> None:
    pool = pool_of(clock)
    fail(pool, 0, 2, refused())
    pool.finished(ticket(pool, [0, 4]), None)  # an answer breaks the streak
    fail(pool, 0, 2, status(503))
    assert pool.in_service() == [A, B]
    fail(pool, 0, 1, openai.APITimeoutError(request=REQUEST))
    assert pool.in_service() == [B]
    assert {ticket(pool, [0, n]).index for n in range(4)} == {1}  # idle A is not chosen
    # B full and A cooling down: wait until A's cool-down ends
    assert pool.place([0, 4], [4, 4]) == pytest.approx(5.0)


def test_answers_429_and_4xx_are_the_server_answering(clock: Clock) -> None:
    pool = pool_of(clock)
    for failure in (status(429), status(400), status(404), refused(), refused()):
        pool.finished(ticket(pool, [0, 4]), failure)
    assert pool.in_service() == [A, B]


def test_requests_sent_before_the_take_out_do_not_extend_it(clock: Clock) -> None:
    pool = pool_of(clock)
    early = [ticket(pool, [0, 4]) for _ in range(10)]  # ten in flight on A
    for placed in early[:3]:
        pool.finished(placed, refused())
    assert pool.in_service() == [B]
    for placed in early[3:]:  # their failures arrive later: already counted as out
        pool.finished(placed, refused())
    clock.now += 5.0
    assert ticket(pool, [0, 0]) == Ticket(0, 1, trial=True)  # after 5 s, not 10


def test_after_its_cool_down_one_request_tries_the_endpoint(clock: Clock) -> None:
    pool = pool_of(clock)
    fail(pool, 0, 3, refused())
    clock.now += 4.9
    assert ticket(pool, [0, 0]).index == 1
    clock.now += 0.1
    trial = ticket(pool, [0, 0])
    assert trial.trial and trial.index == 0
    assert ticket(pool, [1, 0]).index == 1  # one trial at a time
    pool.finished(trial, refused())  # still down: out for twice as long
    clock.now += 9.9
    assert ticket(pool, [0, 0]).index == 1
    clock.now += 0.1
    trial = ticket(pool, [0, 0])
    assert trial.trial
    pool.finished(trial, None)  # it answers: back in service, cool-down reset
    assert pool.in_service() == [A, B]
    fail(pool, 0, 3, refused())
    clock.now += 5.0
    assert ticket(pool, [0, 0]).trial


def test_the_cool_down_doubles_up_to_its_maximum(clock: Clock) -> None:
    pool = pool_of(clock, cooldown_s=8.0)
    fail(pool, 0, 3, refused())
    waits = []
    for _ in range(4):
        waits.append(pool.place([0, 4], [4, 4]))
        clock.now += 1000
        pool.finished(ticket(pool, [0, 0]), refused())  # the trial fails
    assert waits == pytest.approx([8.0, 16.0, 30.0, 30.0])


def test_with_every_endpoint_out_requests_go_to_the_one_due_back_first(clock: Clock) -> None:
    pool = pool_of(clock)
    fail(pool, 1, 3, refused())
    clock.now += 1.0
    fail(pool, 0, 3, refused())
    assert pool.in_service() == []
    # not a made-up error: the request meets the endpoint's own failure and is retried
    assert ticket(pool, [0, 0]) == Ticket(1, 1)
    assert ticket(pool, [0, 4]) == Ticket(0, 1)
    pool.finished(Ticket(1, 1), None)  # it answered: in service again
    assert pool.in_service() == [B]


def test_one_endpoint_gets_every_request_even_while_failing(clock: Clock) -> None:
    pool = pool_of(clock, A)
    for _ in range(10):
        pool.finished(ticket(pool, [0]), refused())
    assert all(ticket(pool, [n]).index == 0 for n in range(4))
