"""The live feed: what the sessions did since the last look, read from the store, for any display.

One object, no UI: the monitor (onegc_tui/app/app.py) reads it each second and hands the rows to
the dashboard's table and the alerts to its notifications; ``onegc run --plain``
(onegc_tui/cli/plain.py) reads it beside its event lines and prints what the events alone do not
say (the budget running low). Shaped as nvitop's collector: the
feed collects, each display draws.

A look (:meth:`LiveFeed.read`) costs a ``data_version`` read unless something was committed, and
then reads only the sessions rows changed since the last look (over 10 000 finished sessions,
reading every row each second was ~170 ms of the monitor's drawing thread). The first look reads
the live sessions only (running, paused, queued: a range of an index), and where the rows of the
home end (onegc_tui/store/session_pages.py ``high_marks``): a session there then, finished, is no
news, whatever it does later (a disqualification), and is never held. The feed holds the rows of
the live sessions and of those that changed since the clock's last look (:meth:`LiveFeed.due`),
and how far it has read each session that changed while it watched: its memory follows what the
sessions do while it watches, not the size of the home (100 000 sessions, a few running: a few
rows). The alerts see each
session's new scores, warnings and end in the store's typed rows, whoever ingested them: every
display on a home says the same, not only the one whose ingest happened to read the line, and no
event line is parsed again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from onegc_tui.store import Store
from onegc_tui.store import queries as store_queries
from onegc_tui.store.session_pages import changed_since, high_marks, live_rows
from onegc_tui.views.alerts import Alert, Alerts
from runner.wire.summary import ENDED_STATES
from tasks import direction_of


@dataclass
class Look:
    """What one look found: the rows changed (by session), the running sessions not among them
    (their countdowns move), what the alerts make of the new events, and whether a session
    appeared, started or ended since the first look (what the history's matrix depends on)."""

    changed: dict[str, dict] = field(default_factory=dict)
    moving: list[str] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)
    sessions_moved: bool = False


class LiveFeed:
    """The live sessions' latest rows, the running ones, and the alerts, kept up to date from a store."""

    def __init__(self) -> None:
        self.rows: dict[str, dict] = {}  # the live sessions' latest rows, and those changed since the last due()
        self.running: set[str] = set()  # their countdowns move, the alerts watch them
        self.alerts = Alerts(direction=lambda sid: direction_of(self.rows.get(sid, {}).get("task")),
                             task=lambda sid: self.rows.get(sid, {}).get("task"))
        self._unchecked: set[str] = set()  # rows changed since the alerts' clock last looked
        self._alerted: dict[str, int] = {}  # per session seen, the seq up to which the alerts have read the store
        self._end_seen: dict[str, float] = {}  # per session, the end (its ended_ts) the alerts have told
        self._opened = False  # the first look is done: a session seen later is new
        self._known = 0  # the newest summary row at the first look: a row up to it was there then
        self._rev = 0  # the newest sessions-row revision read
        self._data_version = -1

    @property
    def rev(self) -> int:
        """The newest sessions-row revision read: the next look reads the rows changed after it."""
        return self._rev

    def read(self, store: Store) -> Look:
        """The rows changed since the last look (the first: the live sessions'), and the alerts
        their new events raise."""
        look = Look()
        version = store_queries.data_version(store)
        changed: list[tuple[int, dict]] = []
        if version != self._data_version:
            self._data_version = version
            if not self._opened:
                with store_queries.snapshot(store):  # the live rows as of these marks
                    self._rev, self._known = high_marks(store)
                    changed = [(0, row) for row in live_rows(store)]
            else:
                changed = changed_since(store, self._rev)
        for rowid, row in changed:
            sid = row["session_id"]
            look.changed[sid] = row
            self._rev = max(self._rev, row["rev"])
            before = self.rows.get(sid)
            if sid not in self._alerted:
                look.sessions_moved |= self._first_sight(sid, row, there=not self._opened or rowid <= self._known)
            else:
                look.sessions_moved |= before is None or before["state"] != row["state"]
            self.rows[sid] = row
            (self.running.add if row["state"] == "running" else self.running.discard)(sid)
            look.alerts += self._alerts_from_store(store, sid, row)
        look.moving = [sid for sid in self.running if sid not in look.changed]
        look.sessions_moved = look.sessions_moved and self._opened
        self._opened = True
        self._unchecked.update(look.changed)
        return look

    def due(self, now: float) -> list[Alert]:
        """What no single event says, on a clock: 10 % of the budget left, a runner that died (over
        the running sessions and those changed since the last call). A finished session's row
        is let go then (the feed keeps how far it has read it)."""
        watched = self._unchecked | self.running
        self._unchecked = set()
        out = self.alerts.check({sid: self.rows[sid] for sid in watched if sid in self.rows}, now)
        for sid in watched:
            if self.rows.get(sid, {}).get("state") in ENDED_STATES:
                self.rows.pop(sid)
                self.alerts.forget(sid)
        return out

    def _first_sight(self, sid: str, row: dict, there: bool) -> bool:
        """A session this feed has not read yet; ``there``: in the store at the first look (its
        past is no news). Whether it moves the history's matrix (a session it has not seen)."""
        self.alerts.states[sid] = row["state"]
        if not there:
            self._alerted[sid] = 0  # new: every row it has is news
            return True
        self._alerted[sid] = row.get("last_seq") or 0
        if row.get("ended_ts") is not None:
            self._end_seen[sid] = row["ended_ts"]
        if row.get("best_live") is not None:
            self.alerts.best[sid] = row["best_live"]
        return self._opened  # a finished one, changed since the first look (a disqualification)

    def _alerts_from_store(self, store: Store, sid: str, row: dict) -> list[Alert]:
        """What the session's new rows in the store say: a new best or a failed live score (its
        checkpoints row), a blocked connection, a cap or a stall (its warnings), a refused pause
        (its controls), its end (its summary row). Typed rows: no event line is read again."""
        after = self._alerted.get(sid, 0)
        last = row.get("last_seq") or 0
        if last <= after:
            return []
        events: list[tuple[int, list[Alert]]] = [
            (seq, self.alerts.scored(sid, name, value, error, at_s))
            for seq, name, value, error, at_s in store_queries.new_scores(store, sid, after)]
        events += [(seq, self.alerts.warned(sid, code, message)) for seq, code, message in
                   store_queries.new_warnings(store, sid, after)]
        events += [(seq, self.alerts.refused(sid, action, detail)) for seq, action, detail in
                   store_queries.new_refusals(store, sid, after)]
        events.sort(key=lambda e: e[0])
        out = [alert for _seq, alerts in events for alert in alerts]
        if row.get("ended_ts") is not None and self._end_seen.get(sid) != row["ended_ts"]:
            self._end_seen[sid] = row["ended_ts"]
            out += self.alerts.ended(sid, row.get("end_reason") or "", row.get("score"), row.get("end_detail") or "")
        self._alerted[sid] = last
        return out


__all__ = ["LiveFeed", "Look"]
