"""Event lines validated into plain dicts, by the very schema of :data:`runner.wire.events.Event`:
the one parse of each line, at ingest. Its record is what the store writes (onegc_tui/store/rows.py)
and what a live ingest hands on (``Ingester.on_events``); nothing parses the line again.

The store needs each event's fields, not a model instance: building the frozen pydantic object
(its ``__dict__``, its set of fields given) was half the cost of parsing a line, and those
objects, tracked by the garbage collector, made its passes longer while a batch was held.
:func:`parse_record` validates a line with the same rules (the events' own core schema, each
model's fields as a typed dict: same types, defaults, literals, ``extra="forbid"``) and returns
the dict the model would hold as its ``__dict__``. A line it rejects goes to
:func:`runner.wire.events.parse_event`, so a bad line is reported with the model's own message.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import SchemaValidator

from runner.wire.events import EVENT_ADAPTER, parse_event

Record = dict[str, Any]


def _as_typed_dict(model: dict) -> dict:
    """A ``model`` core schema as the ``typed-dict`` schema of its fields."""
    assert model["type"] == "model" and model["schema"]["type"] == "model-fields", model["type"]
    assert not model["schema"].get("computed_fields") and not model.get("post_init"), model["cls"]
    fields = {}
    for name, field in model["schema"]["fields"].items():
        assert field["type"] == "model-field" and "validation_alias" not in field, (model["cls"], name)
        fields[name] = {"type": "typed-dict-field", "schema": field["schema"],
                        "required": field["schema"]["type"] != "default"}
    extra = model.get("config", {}).get("extra_fields_behavior", "ignore")
    return {"type": "typed-dict", "fields": fields, "extra_behavior": extra, "total": True}


def _record_schema() -> dict:
    union = EVENT_ADAPTER.core_schema
    assert union["type"] == "tagged-union" and union["discriminator"] == "type", union["type"]
    return {**{k: v for k, v in union.items() if k not in ("choices", "metadata")},
            "choices": {tag: _as_typed_dict(model) for tag, model in union["choices"].items()}}


# strings cached by key only: keys repeat on every line, values (text, ids) mostly do not, and
# caching those cost more than it saved (15 % of a line's parse)
_VALIDATOR = SchemaValidator(_record_schema(), {"cache_strings": "keys"})
# the validator alone, for a whole batch at C speed (``map``): it raises on a bad line, which the
# caller then reads line by line with parse_record (the model's message)
validate_record = _VALIDATOR.validate_json


def parse_record(line: bytes | str) -> Record:
    """One event line as a dict of its fields (``parse_event(line).__dict__``, without the
    model); raises ``pydantic.ValidationError`` with the model's message for a bad line."""
    try:
        return _VALIDATOR.validate_json(line)
    except ValueError:  # ValidationError, or anything this schema and the model's might disagree on
        return dict(parse_event(line).__dict__)  # the model's verdict, and its error message

