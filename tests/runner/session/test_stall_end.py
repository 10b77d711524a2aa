"""A model stream that hangs until the budget ends is named in the end detail, not only in a
warning (issue 37 item 4): the session no longer ends on a bare "active time reached the budget"."""

from __future__ import annotations

import pytest

from tests.helpers import events, start_session, wait_event

pytestmark = pytest.mark.slow


def test_a_stream_hung_until_the_budget_ends_is_named_in_the_end_detail(home):
    # a word from "the model", then silence and no tool until the budget ends
    paths = start_session(home, "hung1", agent="command", command=["sh", "-c", "echo thinking; exec sleep 600"],
                          budget_s=12, grace_s=2, stall_s=3)
    ended = wait_event(paths, "session_ended", timeout=90)
    assert ended["reason"] == "budget_exhausted", ended
    assert "the model stream stalled: no model response in its last" in ended["detail"], ended["detail"]
    assert "(named after 3 s)" in ended["detail"]
    stalls = [e for e in events(paths) if e["type"] == "warning" and e["code"] == "stall"]
    assert len(stalls) == 1 and stalls[0]["ts"] < ended["ts"] - 5  # named while it ran, well before the end
