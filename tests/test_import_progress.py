"""`ImportProgress`'s texts/s across the runs of phase 2: a server's vector worker embeds what phase 1 wrote in
one run after another; a run that follows without a pause continues the rate, so the UI's strip does not lose
its rate and time left while the new run's first texts are still at the backend."""

from __future__ import annotations

import pytest

from mindnet.indexing import progress as progress_module
from mindnet.indexing.progress import RATE_CONTINUES_S, ImportProgress


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def time(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(progress_module, "time", c)
    return c


def one_run(p: ImportProgress, clock: Clock, *, total: int, done: int, embed: int, seconds: float) -> None:
    p.begin_embedding(total, done)
    clock.now += seconds
    p.embedded(embed)
    p.end_embedding()


def test_a_run_right_after_another_keeps_its_rate_before_it_has_embedded_anything(clock: Clock) -> None:
    p = ImportProgress()
    one_run(p, clock, total=200, done=0, embed=50, seconds=10.0)
    clock.now += 1.0
    p.begin_embedding(200, 50)               # the next run: its first batch is still at the backend
    clock.now += 4.0
    shown = p.as_dict()
    assert shown["texts_per_s"] == pytest.approx(50 / 15.0, abs=0.01)
    assert shown["eta_seconds"] == pytest.approx(150 / (50 / 15.0), abs=0.5)
    p.embedded(25)
    assert p.as_dict()["texts_per_s"] == pytest.approx(75 / 15.0, abs=0.01)


def test_a_run_after_a_pause_measures_anew(clock: Clock) -> None:
    p = ImportProgress()
    one_run(p, clock, total=200, done=0, embed=50, seconds=10.0)
    clock.now += RATE_CONTINUES_S + 1
    p.begin_embedding(210, 200)              # a saved note, minutes later
    assert p.as_dict()["texts_per_s"] is None and p.as_dict()["eta_seconds"] is None
    clock.now += 2.0
    p.embedded(10)
    assert p.as_dict()["texts_per_s"] == pytest.approx(5.0)


def test_a_first_run_that_has_embedded_nothing_shows_no_rate(clock: Clock) -> None:
    p = ImportProgress()
    p.begin_embedding(100, 0)
    clock.now += 3.0
    assert p.as_dict()["texts_per_s"] is None
