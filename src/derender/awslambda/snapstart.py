"""SnapStart: what an init captured that restored containers must not share.

With SnapStart, Lambda runs the init once, snapshots the process, and starts every new
container of a published version from that one snapshot. Whatever the init left in memory is
then the same in all of them, restored minutes or days later. For derender that is:

- the ``random`` module's state: every restored container would draw the same numbers
  (botocore's retry jitter among them, so their retries would stay in step);
- when a key ring was read and how old it is: the clock that times its re-read says nothing
  about the days the snapshot waited;
- open AWS connections: sockets of the snapshot's process, not of this container.

The Lambda Python runtime ships ``snapshot_restore_py``; callbacks registered with its
``register_after_restore`` run after each restore, before the first invocation. Outside that
runtime (tests, uvicorn) it is usually absent and there is nothing to restore.
(``secrets``, ``uuid.uuid4`` and ``os.urandom`` read the kernel's generator on every call and
need nothing.)
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

log = logging.getLogger("derender")


def on_restore(callback: Callable[[], None]) -> bool:
    """Run ``callback`` after every SnapStart restore; False where there are no restores."""
    try:
        from snapshot_restore_py import register_after_restore  # noqa: PLC0415
    except ImportError:
        return False
    register_after_restore(callback)
    return True


def renew_randomness() -> None:
    """Reseed the ``random`` module from the kernel, as a fresh process would be seeded."""
    random.seed()
