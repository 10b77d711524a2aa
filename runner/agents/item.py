"""The transcript item: one normalised step of an agent's transcript, as every adapter returns it."""

from __future__ import annotations

from runner.wire.events import TranscriptFields, clip


class TranscriptItem(TranscriptFields):
    """One normalised step of an agent's transcript (../shared/DESIGN.md §4 "Transcript events")."""

    def bounded(self) -> dict:
        data = self.model_dump(exclude_none=True)
        data["text"] = clip(self.text)
        return data


def raw_item(line: str) -> TranscriptItem:
    """What a line no adapter understands becomes."""
    return TranscriptItem(role="system", kind="raw", text=line.rstrip("\n"))
