"""Unit tests of the sessions table without a screen: columns per width, cuts, sort, filter."""

from __future__ import annotations

from onegc_tui.views.sessions_view import (
    ELLIPSIS,
    SessionFilter,
    end_cut,
    fit_columns,
    middle_cut,
    ordered,
    session_cells,
    sort_arrow,
)

ID_A = "20260901-080000-t0-scripted-r1-00a0"
ID_B = "20260901-080000-t0-scripted-r2-01b1"  # started in the same second as ID_A


def keys(width: int) -> list[str]:
    return [c.key for c, _ in fit_columns(width, len(ID_A))]


def total(width: int) -> int:
    return sum(w + 2 for _, w in fit_columns(width, len(ID_A)))


def test_the_columns_that_matter_come_first_at_any_width():
    for width in (78, 98, 118, 198):
        assert keys(width)[:6] == ["mark", "state", "left", "best", "official", "session"]
        assert total(width) <= width  # nothing runs off the edge
    assert keys(78) == ["mark", "state", "left", "best", "official", "session"]
    # issue 50: at 100 columns the Agent and GPU columns had gone (the Official one took their room)
    assert keys(98)[6:] == ["task", "agent", "gpu"] and "model" not in keys(98)
    assert {c.key: w for c, w in fit_columns(98, len(ID_A))}["session"] >= 20  # still a readable id, cut in the middle
    assert keys(198)[-1] == "scripts"  # everything at 200 columns


def test_the_session_column_takes_the_room_left_up_to_the_longest_id():
    widths = {c.key: w for c, w in fit_columns(198, len(ID_A))}
    assert widths["session"] == len(ID_A)  # whole ids where there is room
    narrow = {c.key: w for c, w in fit_columns(78, len(ID_A))}
    assert narrow["session"] < len(ID_A)


def test_ids_started_in_the_same_second_stay_distinct_when_cut():
    for width in (14, 20, 28):
        a, b = middle_cut(ID_A, width), middle_cut(ID_B, width)
        assert len(a) == width and ELLIPSIS in a and a != b
        assert a.endswith("00a0") and b.endswith("01b1")  # the unique suffix survives
    assert middle_cut(ID_A, 64) == ID_A


def test_cut_text_ends_with_an_ellipsis():
    assert end_cut("budget exhausted", 10) == "budget ex…"
    assert end_cut("budget exhausted", 16) == "budget exhausted"


def test_budget_left_of_an_ended_session_fits_its_column():
    from onegc_tui.views.sessions_view import BY_KEY

    cells = session_cells({"session_id": "s", "state": "ended", "end_reason": "budget_exhausted"})
    assert cells["left"] == "exhausted" and len(cells["left"]) <= BY_KEY["left"].width  # under "Budget left"
    for reason in ("completed", "cost_limit", "aborted", "agent_failed", "harness_error"):
        assert len(session_cells({"session_id": "s", "state": "ended", "end_reason": reason})["left"]) <= 14


def rows() -> list[dict]:
    return [
        {"session_id": "old-ended", "state": "ended", "started_ts": 1.0, "score": 0.9},
        {"session_id": "new-ended", "state": "ended", "started_ts": 5.0, "score": 0.5},
        {"session_id": "old-running", "state": "running", "started_ts": 2.0},
        {"session_id": "new-running", "state": "running", "started_ts": 4.0},
        {"session_id": "failed", "state": "failed", "started_ts": 3.0},
        {"session_id": "paused", "state": "paused", "started_ts": 0.5},
    ]


def test_the_default_order_puts_the_most_recent_running_session_first():
    assert ordered(rows(), "state", False) == ["new-running", "old-running", "paused", "new-ended", "failed",
                                               "old-ended"]


def test_sort_arrows_follow_the_direction_shown():
    assert sort_arrow("best", False) == "▼" and sort_arrow("best", True) == "▲"
    assert sort_arrow("state", False) == "▲" and sort_arrow("agent", False) == "▲"
    assert ordered(rows(), "best", False)[:2] == ["old-ended", "new-ended"]


def test_the_filter_matches_fields_and_words():
    r = {"session_id": "demo--quick--t0--r1", "state": "ended", "end_reason": "budget_exhausted", "agent": "scripted",
         "task": "t0_demo", "model": None, "study": "demo"}
    assert SessionFilter.parse("state:ended agent:script").matches(r)
    assert SessionFilter.parse("task:t0 quick").matches(r)
    assert SessionFilter.parse("exhausted").matches(r)  # the end reason counts as the state
    assert not SessionFilter.parse("state:running").matches(r)
    assert not SessionFilter.parse("agent:codex").matches(r)
    assert not SessionFilter.parse("")  # empty: keeps everything
    assert SessionFilter.parse("nofield:x").words == ("nofield:x",)  # unknown fields are words


def test_unsealed_or_integrity_flagged_sessions_are_marked_in_the_session_column():
    from onegc_tui.views.sessions_view import cell_tone, integrity_note, session_cells

    sealed = {"session_id": "s1", "state": "ended", "containment": "bwrap+freezer", "flagged": 0}
    unsealed = dict(sealed, session_id="s2", containment="pidns+freezer")
    flagged = dict(sealed, session_id="s3", flagged=2)
    assert integrity_note(sealed) is None and session_cells(sealed)["session"] == "s1"
    assert cell_tone("session", sealed) == ""
    assert "unsealed" in integrity_note(unsealed) and session_cells(unsealed)["session"] == "⚠ s2"
    assert integrity_note(flagged) == "2 scores with integrity verdicts" and cell_tone("session", flagged) == "flagged"
    unchecked = dict(sealed, session_id="s4", not_checked='["V1", "V2"]')  # the store's JSON list
    assert integrity_note(unchecked) == "not checked: V1, V2 (onegc tasks lists each task's checks)"
    assert cell_tone("session", unchecked) == "flagged"
    assert integrity_note(dict(sealed, not_checked="[]")) is None and integrity_note(dict(sealed, not_checked="{")) is None


def test_a_sealed_session_listed_widens_the_official_column_and_only_then():
    from onegc_tui.views.sessions_view import SEALED_OFFICIAL_WIDTH

    for width in (78, 98, 198):
        plain = {c.key: w for c, w in fit_columns(width, len(ID_A))}
        sealed = {c.key: w for c, w in fit_columns(width, len(ID_A), sealed=True)}
        assert plain["official"] == 11 and sealed["official"] == SEALED_OFFICIAL_WIDTH == len("0.9933 val sealed")
        assert list(sealed)[:6] == ["mark", "state", "left", "best", "official", "session"]
        assert sum(w + 2 for w in sealed.values()) <= width  # nothing runs off the edge
