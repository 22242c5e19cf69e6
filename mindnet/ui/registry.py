"""The `Mindnet` of the server process, handed to the Chainlit app.

An embedded index is opened by one process at a time, so the chat must use the instance the HTTP API holds:
`mount_ui` sets it here before Chainlit loads `app.py`. Run standalone (`chainlit run mindnet/ui/app.py`),
the app builds one from the environment on first use.
"""

from __future__ import annotations

import threading

from mindnet.service import Mindnet

_lock = threading.Lock()
_mindnet: Mindnet | None = None


def set_mindnet(mindnet: Mindnet | None) -> None:
    global _mindnet
    with _lock:
        _mindnet = mindnet


def get_mindnet() -> Mindnet:
    global _mindnet
    with _lock:
        if _mindnet is None:
            _mindnet = Mindnet.from_env()
        return _mindnet
