"""A dependency-free progress bar on stderr for long runs (CLI and examples)."""

import sys
import time


class Progress:
    """Progress of `total` units, drawn on `stream` at most every `interval` seconds.

    Disabled (draws nothing) unless `enabled` is True, or None and the stream is a terminal.
    """

    def __init__(self, total, label="", *, unit="it", enabled=None, stream=None, interval=0.1):
        self.total = max(int(total), 1)
        self.label = label
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.enabled = enabled
        self.interval = interval
        self.done = 0
        self.start = time.monotonic()
        self._last_draw = 0.0
        self._drawn = -1  # `done` at the last draw

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def update(self, count=1):
        self.done += count
        now = time.monotonic()
        if self.enabled and (now - self._last_draw >= self.interval or self.done >= self.total):
            self._last_draw = now
            self._draw(now)

    def _draw(self, now):
        self._drawn = self.done
        fraction = min(self.done / self.total, 1.0)
        width = 30
        filled = int(round(fraction * width))
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        line = (
            f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {fraction * 100:5.1f}% "
            f"{self.done}/{self.total} {rate:,.1f} {self.unit}/s"
        )
        self.stream.write(line)
        self.stream.flush()

    def close(self):
        if self.enabled:
            if self._drawn != self.done:
                self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()
            self.enabled = False
