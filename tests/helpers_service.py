"""A `Mindnet` warming up in the background while the opening of its index is held back: the time `mindnet serve`
spends opening a big index, on a small test index."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

import mindnet.service as service_module
from mindnet.service import Mindnet
from mindnet.settings import Settings


@contextmanager
def warming_with_open_held(settings: Settings, monkeypatch: pytest.MonkeyPatch
                           ) -> Iterator[tuple[Mindnet, Callable[[], None]]]:
    """Yields the app (its `warm` running in a thread, the index's opening waiting) and `open_now()`, which
    lets the opening go on and waits for the warm-up to end. The app is closed on exit."""
    release = threading.Event()
    real_open = service_module.open_store

    def slow_open(s: Settings, **kwargs):
        assert release.wait(30)
        return real_open(s, **kwargs)
    monkeypatch.setattr(service_module, "open_store", slow_open)
    app = Mindnet(settings)
    warm = threading.Thread(target=app.warm)
    warm.start()

    def open_now() -> None:
        release.set()
        warm.join(30)
    try:
        yield app, open_now
    finally:
        open_now()
        app.close()
