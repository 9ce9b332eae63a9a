"""How much of one message the reader reads (issue 36, item 9): a bound no customer's own words meet.

A message longer than `READ_LIMIT_CHARS` is not read at all — neither scanned nor extracted — and
is no evidence of anything: it becomes no memory, grounds no profile value and no hypothesis. Its
reading is the refusal `TOO_LONG`, never a hang. Skipping the gate cannot let such a message
through, since nothing of it is read.

Why this number: the longest customer message in our dev sets is 82 characters (CrossWOZ's 4,229
user turns; 65 in the beike sample), so 2,000 is about 25 times that, while the API admits 8,000
(`memory.capture.ingest.MAX_TEXT_CHARS`) for pasted records, which are nobody's own words anyway.
At 2,000 characters the costliest shape we could craft reads in about 0.4 s of CPU and ordinary
text in about 0.2 s (`benchmarks/reading_bound.py`, on 2 shared cores); the reader is linear in the
length once admission reads each clause and sentence once (`extract.admission.SentenceShape`),
except where a numeral parser or the gate is not, which the bound caps.
"""

from __future__ import annotations

READ_LIMIT_CHARS = 2000
TOO_LONG = "消息过长，未读取"


def unreadable(text: str) -> str | None:
    """Why the reader will not read `text` (`TOO_LONG`), or None when it will."""
    return TOO_LONG if len(text or "") > READ_LIMIT_CHARS else None


__all__ = ["READ_LIMIT_CHARS", "TOO_LONG", "unreadable"]
