"""Our server under uvicorn with cProfile switched on and off by signals (for stream_http.py).

    python bench/_profiled_server.py OUT.prof --host 127.0.0.1 --port 8000 --no-access-log

SIGUSR1 starts profiling, SIGUSR2 stops it and writes OUT.prof, so start-up (imports,
tokenizer loading) and warm-up calls stay out of the profile. Times are the serving thread's
CPU time. The profiler records what runs as Python callbacks of the event loop; the loop's own
C code (uvloop) between callbacks is not attributed to any function.
"""

from __future__ import annotations

import argparse
import cProfile
import signal
import sys
import time
from types import FrameType

import uvicorn


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--no-access-log", action="store_true")
    args = parser.parse_args()
    # CPU time of the serving thread, not wall time: a write to the loopback socket wakes the
    # client, which may run on this CPU before the write returns; wall time would charge that
    # to the write.
    profiler = cProfile.Profile(time.thread_time_ns, 1e-9)

    def start(_signum: int, _frame: FrameType | None) -> None:
        profiler.enable()

    def stop(_signum: int, _frame: FrameType | None) -> None:
        profiler.disable()
        profiler.dump_stats(args.out)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    uvicorn.run("derender.app.main:create_app", factory=True, host=args.host, port=args.port,
                access_log=not args.no_access_log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
