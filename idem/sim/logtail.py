"""What a handler prints, kept bounded: the last lines, however much it prints.

Lambda ships everything a function prints to CloudWatch Logs and goes on; a check keeps only
what its timeline shows. A handler that prints a 50 MB dump on every invocation must cost the
check the time to write it into a buffer that forgets, not the memory to keep it."""
from __future__ import annotations

import io
from collections import deque

#: Lines kept per invocation, and characters kept of each (a longer line is cut, and says so):
#: enough for every log line a handler of this workbook writes (a 1,024-byte key, a batch of 500
#: records), at most about 8 MB whatever a handler prints.
LINES = 1_000
WIDTH = 8_192


class LogTail(io.TextIOBase):
    """A text stream that keeps the last `lines` lines (each at most `width` characters) and
    counts the characters it let go."""

    def __init__(self, lines: int = LINES, width: int = WIDTH) -> None:
        super().__init__()
        self.keep, self.width = lines, width
        self._chunks: deque[str] = deque()  # what was written last, in pieces: each write costs its own length
        self._size = 0
        self.written = 0
        self._limit = lines * (width + 1) + 1

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        given = len(text)
        self.written += given
        if given >= self._limit:
            self._chunks.clear()
            self._size = 0
            text = text[-self._limit:]
        self._chunks.append(text)
        self._size += len(text)
        while self._size - len(self._chunks[0]) >= self._limit:  # the oldest piece is no longer needed
            self._size -= len(self._chunks.popleft())
        return given

    @property
    def _tail(self) -> str:
        """The last characters written, at most what the kept lines can hold."""
        return "".join(self._chunks)[-self._limit:]

    def lines(self) -> list[str]:
        """The last lines, a long one cut; first, if anything was let go, how much."""
        kept = self._tail.splitlines()[-self.keep:]
        shown = sum(len(line) + 1 for line in kept)
        cut = [line if len(line) <= self.width else
               f"{line[:self.width]}... [line cut at {self.width:,} characters]" for line in kept]
        dropped = self.written - shown
        if dropped > 0:
            return [f"[{dropped:,} characters printed before these lines: not kept]", *cut]
        return cut
