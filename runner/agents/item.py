"""The transcript item: one normalised step of an agent's transcript, as every adapter returns it."""

from __future__ import annotations

from runner.wire.events import TEXT_LIMIT, TranscriptFields, clip
from runner.wire.untrusted import NAME_LIMIT, clean


class TranscriptItem(TranscriptFields):
    """One normalised step of an agent's transcript (../shared/DESIGN.md §4 "Transcript events")."""

    def bounded(self) -> dict:
        """The fields of the transcript event: text clipped, and every string the agent's output
        made (its JSON may carry a lone surrogate as ``"\\ud800"``) recordable (runner/wire/untrusted.py)."""
        data = self.model_dump(exclude_none=True)
        text = clip(self.text, TEXT_LIMIT)
        data["text"] = clean(text, len(text))
        for key in ("tool", "call_id"):
            if key in data:
                data[key] = clean(data[key], NAME_LIMIT)
        return data


def raw_item(line: str) -> TranscriptItem:
    """What a line no adapter understands becomes."""
    return TranscriptItem(role="system", kind="raw", text=line.rstrip("\n"))
