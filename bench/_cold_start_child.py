"""One cold start, as a fresh Lambda container does it (run by bench/cold_start.py).

    python3.12 -S _cold_start_child.py DEPS_DIR FUNCTION_DIR EVENTS_DIR WARM_ROUNDS LARGEST

``-S``: no site-packages, only the layer and the function on ``sys.path`` (Lambda puts
``/var/task`` and ``/opt/python`` there). Prints ``answered`` as soon as the first event is
answered, then one JSON line: the seconds spent importing the libraries, building the handler
(the app and the default model: Lambda's init) and answering the first event, the CPU time
the process had used by then (interpreter start-up included), and the resident
memory after serving every event of EVENTS_DIR WARM_ROUNDS times; then the time and peak
memory of the event in the file LARGEST.
"""

import time

STARTED = time.perf_counter()

import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

deps, function, events, rounds = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
largest = Path(sys.argv[5])
sys.path[:0] = [function, deps]


def status(key: str) -> int:
    """A ``/proc/self/status`` figure in kB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


class Context:
    aws_request_id = "cold-start"
    function_name = "derender"


def main() -> None:
    import derender.awslambda.adapter  # noqa: F401  (the libraries: fastapi, pydantic, tokenizers…)
    imported = time.perf_counter()
    import handler  # Lambda's init: the app and the default model
    initialised = time.perf_counter()
    first = json.loads((events / "http-api-v2.chat.json").read_text())
    log = sys.stdout
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):  # handler logs
        response = handler.handler(first, Context())
        answered, cpu = time.perf_counter(), time.process_time()
        assert response["statusCode"] == 200, response
        print("answered", file=log, flush=True)  # the parent stamps the first response here
        after_first = status("VmRSS")
        bodies = [json.loads(p.read_text()) for p in sorted(events.glob("*.json"))]
        for _ in range(rounds):
            for event in bodies:
                handler.handler(event, Context())
        warm, warm_peak = status("VmRSS"), status("VmHWM")
        event = json.loads(largest.read_text())
        began = time.perf_counter()
        handler.handler(event, Context())
        largest_seconds = time.perf_counter() - began
    print(json.dumps({
        "imports": imported - STARTED, "init": initialised - imported,
        "first_call": answered - initialised, "cpu": cpu, "rss_first_kb": after_first,
        "rss_warm_kb": warm, "hwm_warm_kb": warm_peak, "invocations": 1 + rounds * len(bodies),
        "largest": largest_seconds, "hwm_largest_kb": status("VmHWM"),
    }), flush=True)


main()
