"""The live feed: what the sessions did since the last look, read from the store, for any display.

One object, no UI: the monitor (onegc_tui/app/app.py) reads it each second and hands the rows to
the dashboard's table and the alerts to its notifications; ``onegc run --plain``
(onegc_tui/cli/plain.py) reads it beside its event lines and prints what the events alone do not
say (the budget running low). Shaped as nvitop's collector: the
feed collects, each display draws.

A look (:meth:`LiveFeed.read`) costs a ``data_version`` read unless something was committed, and
then reads only the sessions rows changed since the last look (over 10 000 finished sessions,
reading every row each second was ~170 ms of the monitor's drawing thread). The alerts see each
session's new scores, warnings and end in the store's typed rows, whoever ingested them: every
display on a home says the same, not only the one whose ingest happened to read the line, and no
event line is parsed again. A session already there
at the first look is no news (its best is the one to beat).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from onegc_tui.store import Store
from onegc_tui.store import queries as store_queries
from onegc_tui.views.alerts import Alert, Alerts
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
    """Every session's latest row, the running ones, and the alerts, kept up to date from a store."""

    def __init__(self) -> None:
        self.rows: dict[str, dict] = {}  # every session's latest summary row
        self.running: set[str] = set()  # their countdowns move, the alerts watch them
        self.alerts = Alerts(direction=lambda sid: direction_of(self.rows.get(sid, {}).get("task")),
                             task=lambda sid: self.rows.get(sid, {}).get("task"))
        self._unchecked: set[str] = set()  # rows changed since the alerts' clock last looked
        self._alerted: dict[str, int] = {}  # per session, the seq up to which the alerts have read the store
        self._end_seen: dict[str, float] = {}  # per session, the end (its ended_ts) the alerts have told
        self._opened = False  # the first look is done: a session seen later is new
        self._rev = 0  # the newest sessions-row revision read
        self._data_version = -1

    @property
    def rev(self) -> int:
        """The newest sessions-row revision read: the next look reads the rows changed after it."""
        return self._rev

    def read(self, store: Store) -> Look:
        """The rows changed since the last look, and the alerts their new events raise."""
        look = Look()
        version = store_queries.data_version(store)
        if version != self._data_version:
            self._data_version = version
            for row in store.sessions_since(self._rev):
                look.changed[row["session_id"]] = row
                self._rev = max(self._rev, row["rev"])
        look.moving = [sid for sid in self.running if sid not in look.changed]
        look.sessions_moved = self._opened and any(
            sid not in self.rows or self.rows[sid]["state"] != row["state"] for sid, row in look.changed.items())
        for sid, row in look.changed.items():
            if sid not in self.rows:
                self._first_sight(store, sid, row)
            self.rows[sid] = row
            (self.running.add if row["state"] == "running" else self.running.discard)(sid)
            look.alerts += self._alerts_from_store(store, sid, row)
        self._opened = True
        self._unchecked.update(look.changed)
        return look

    def due(self, now: float) -> list[Alert]:
        """What no single event says, on a clock: 10 % of the budget left, a runner that died (over
        the running sessions and those changed since the last call)."""
        watched = self._unchecked | self.running
        self._unchecked = set()
        return self.alerts.check({sid: self.rows[sid] for sid in watched if sid in self.rows}, now)

    def _first_sight(self, store: Store, sid: str, row: dict) -> None:
        if not self._opened:  # there at the first look: its past is no news
            self._alerted[sid] = row.get("last_seq") or 0
            if row.get("ended_ts") is not None:
                self._end_seen[sid] = row["ended_ts"]
            if row.get("best_live") is not None:
                self.alerts.best[sid] = row["best_live"]
        self.alerts.states[sid] = row["state"]

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
