"""The one watchdog thread of ``caveat measure``'s streams (``client.WATCHDOG``): cuts a stream that
read nothing for its timeout (stalled) or that is still going at its timeout (overtime)."""

from __future__ import annotations

import threading
import time


class Watchdog:
    """One thread for all streams: a stream that has read nothing for its timeout is marked stalled and
    its connection cut, so its blocked read returns and the stream fails with a timeout. It looks every
    tenth of a second (so a timeout is honoured to within that), and runs only while a stream does."""

    TICK = 0.1

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[int, list] = {}  # id(exchange) -> [exchange, timeout, reads seen, since]
        self._thread: threading.Thread | None = None

    def watching(self, ex: "object", timeout: float):
        watchdog = self

        class _Watch:
            def __enter__(self):
                with watchdog._lock:
                    now = time.monotonic()
                    watchdog._streams[id(ex)] = [ex, timeout, ex.reads, now, now]
                    if watchdog._thread is None:
                        watchdog._thread = threading.Thread(target=watchdog._run, name="caveat-measure-watchdog",
                                                            daemon=True)
                        watchdog._thread.start()

            def __exit__(self, *exc):
                with watchdog._lock:
                    watchdog._streams.pop(id(ex), None)
                return False

        return _Watch()

    def _run(self) -> None:
        while True:
            time.sleep(self.TICK)
            now = time.monotonic()
            with self._lock:
                if not self._streams:
                    self._thread = None
                    return
                late = []
                for entry in self._streams.values():
                    ex, timeout, seen, since, began = entry
                    if now - began > timeout:   # the whole answer, however steadily it arrives
                        ex.overtime = True
                        late.append(ex)
                    elif ex.reads != seen:
                        entry[2], entry[3] = ex.reads, now
                    elif now - since > timeout:
                        late.append(ex)
            for ex in late:
                ex.stalled = True
                ex.abort()
