"""The event union: every event class is a member, so none can be forgotten when one is added."""

from __future__ import annotations

from runner.wire import events
from runner.wire.events import EVENT_CLASSES, EVENT_TYPES, parse_event


def _subclasses(cls: type) -> set[type]:
    return {sub for direct in cls.__subclasses__() for sub in (direct, *_subclasses(direct))}


def test_every_event_class_is_in_the_union():
    defined = {c for c in _subclasses(events._Event) if c.__module__ == events.__name__}
    assert defined == set(EVENT_CLASSES), "add the new class to runner.wire.events.Event"
    assert len(EVENT_TYPES) == len(EVENT_CLASSES)  # one class per type name


def test_the_union_discriminates_on_type():
    e = parse_event('{"type": "heartbeat", "session_id": "s", "seq": 2, "ts": 1.0, "remaining_s": 5, "active_s": 1}')
    assert type(e) is events.Heartbeat and e.remaining_s == 5
