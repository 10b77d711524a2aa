"""The ingester: tails every session's ``events.jsonl`` into SQLite, exactly once.

Live, :class:`onegc_tui.store.live.LiveIngest` runs it on a thread, woken by a watchdog observer
over ``runs/`` (inotify locally; the polling observer where ``runs/`` lives on a network
filesystem). Each drain reads to the end of the file from the persisted byte offset, takes whole
lines only, and commits the batch together with its new offset. A corrupt line is recorded with its
file and line number and skipped. Watchdog calls are only "something changed" hints (it drops
repeats under load), and a periodic rescan backs them up. Sessions whose runner died without
``session_ended`` (or whose folder vanished) are marked failed in the store; that verdict is lifted
if the session's own events later show it alive (a session created, then launched late)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any, Literal, cast

from onegc_tui.store import Store, record_status
from onegc_tui.store.rows import batch_rows
from onegc_tui.store.torn_tail import settle_from_result
from runner.launch.reconcile import clean_up_after, reconcile
from runner.scoring import seal
from runner.wire import disqualifications
from runner.wire.jsonl import JsonlTail, TailState, too_long
from runner.wire.liveness import lock_held
from runner.wire.paths import SessionPaths, is_session_folder

# The parser (pydantic) is imported with the first new line, watchdog with the first LiveIngest:
# `onegc sessions` over a store that is current starts without either (start-up, README)

MAX_BATCH_BYTES = 4 << 20  # one transaction per ~4 MiB of new lines (and no event line is longer)
MAX_CONFIG_BYTES = 1 << 20  # session.json is a few hundred bytes
Record = dict[str, Any]  # an event's fields, validated once (onegc_tui/store/records.py): the one parse of its line
OnEvents = Callable[[str, list[Record]], None]
_SEQ, _TYPE, _SESSION = itemgetter("seq"), itemgetter("type"), itemgetter("session_id")


@dataclass(frozen=True)
class IngestBatch:
    """New whole lines of one ``events.jsonl``: each event's typed record, and its line beside it."""

    path: str
    session_id: str
    records: Sequence[Record]
    raws: Sequence[str]  # the line of each record
    offset: int
    line_no: int
    bad: Sequence[tuple[int, str]] = ()
    lines: Sequence[int] = ()  # the line number of each record, for the ones rejected here
    file_id: str | None = None  # the file read ("device:inode"): a new file under the same path starts over


@dataclass(frozen=True)
class Ingested:
    """What a batch changed: which of its records were new (indices into ``records``), and every
    line skipped (corrupt or in conflict)."""

    new: list[int]
    rejected: list[tuple[int, str]]


def write_batch(store: Store, batch: IngestBatch) -> Ingested:
    """Store a batch in one transaction (a savepoint of the store's, inside one); returns the events
    that were new and the lines skipped.

    The runner numbers its lines 1, 2, 3…; a second, different line claiming a number already
    stored was not written by it (a forged or corrupted record): it is skipped and reported,
    and the first one kept. The same line read twice (two ingesters) is no conflict."""
    sid = batch.session_id
    with store.batch(len(batch.records)):
        new, conflicts = _only_new(store, sid, batch.records)
        records, raws = batch.records, batch.raws
        if len(new) != len(records):
            records, raws = [records[i] for i in new], [raws[i] for i in new]
        if records:
            rows = batch_rows(sid, records, raws)
            best: tuple[float, Literal["MAX", "MIN"]] | None = None
            if rows.live_values:
                from tasks import best_of, direction_of  # the task registry: only once scores come in

                direction = direction_of(rows.delta.get("task") or store.task_of(sid))
                best = (best_of(rows.live_values, direction), "MAX" if direction == "higher" else "MIN")
            store.write(rows, best)
        rejected = list(batch.bad) + [
            (batch.lines[i] if i < len(batch.lines) else 0,
             f"a second line with seq {batch.records[i]['seq']}, other than the first: not the runner's (the first is kept)")
            for i in conflicts]
        if rejected:
            store.record_rejected(batch.path, sid, rejected)
        store.set_offset(batch.path, sid, batch.offset, batch.line_no, batch.file_id)
    return Ingested(new, rejected)


def _only_new(store: Store, sid: str, records: Sequence[Record]) -> tuple[list[int], list[int]]:
    """The indices of the records not stored yet, and of those whose seq is taken by another event."""
    if not records:
        return [], []
    seqs = list(map(_SEQ, records))
    if seqs[0] > store.top_seq(sid) and all(map(int.__lt__, seqs, seqs[1:])) and set(map(_SESSION, records)) == {sid}:
        return list(range(len(records))), []  # the common case: a tail of new, increasing lines
    from onegc_tui.store import stored
    from onegc_tui.store.records import parse_record

    have = {r["seq"]: r for r in stored.records(store.conn, sid, stored.envelopes(
        store.conn, sid, after=min(seqs) - 1, limit=max(seqs) - min(seqs) + 1))}
    out, conflicts = [], []
    for i, r in enumerate(records):
        if r["session_id"] != sid:
            continue
        if r["seq"] in have:
            # the stored event, with every field its model has (a stored line leaves out its None fields),
            # but its chain link: a kind with a table of its own keeps none (the file holds it, and the
            # chain is the seal's and verify's to check, runner/scoring/seal.py)
            if _unlinked(parse_record(json.dumps(have[r["seq"]]))) != _unlinked(r):
                conflicts.append(i)
            continue
        have[r["seq"]] = r
        out.append(i)
    return out, conflicts


def _unlinked(record: Record) -> dict:
    return {k: v for k, v in record.items() if k != "prev"}


@dataclass
class Ingester:
    """Ingests ``home/runs/*``; ``on_events(session_id, records)`` sees the record of every new
    event once (the dicts its store was written from: no event is parsed twice)."""

    home: Path
    store: Store
    on_events: OnEvents | None = None
    on_error: Callable[[str], None] | None = None
    # the home is only read (a monitor's read-only view): a session found dead is marked in the
    # store, a private copy, and nothing is cleaned up after its runner (its folder, its cgroup)
    read_only: bool = False
    _known: dict[str, SessionPaths] = field(default_factory=dict)
    _live: set[str] = field(default_factory=set)  # known and not ended: the ones looked at every poll
    _tails: dict[str, JsonlTail] = field(default_factory=dict)
    _held: list[tuple[str, list[Record]]] | None = None  # hold(): new events wait for deliver()
    _files: dict[str, _Watched] = field(default_factory=dict)
    _home_id: str | None = None

    def hold(self) -> None:
        """Keep the new events from ``on_events`` until :meth:`deliver`: the caller writes in one
        transaction, and what it shows must be what was committed (exactly once, even if the
        commit fails and the lines are read again)."""
        self._held = []

    def deliver(self) -> None:
        held, self._held = self._held or [], None
        if self.on_events is not None:
            for sid, events in held:
                self.on_events(sid, events)

    def discard(self) -> None:
        """The transaction of what was read did not commit: nothing of it is shown, and it is read again."""
        self._held = None
        self.forget_place()

    @property
    def home_id(self) -> str | None:
        """The id of the home the sessions are read in (runner/scoring/seal.py)."""
        if self._home_id is None:
            self._home_id = seal.home_id(self.home) or ""
        return self._home_id or None

    @property
    def runs(self) -> Path:
        return self.home / "runs"

    def discover(self, only: Collection[str] | None = None) -> list[str]:
        """Register session folders not seen before (of ``only``, where given); returns their ids."""
        added: list[str] = []
        if not self.runs.is_dir():
            return added
        for folder in sorted(self.runs.iterdir()):
            sid = folder.name
            if sid in self._known or (only is not None and sid not in only) or not is_session_folder(folder):
                continue
            paths = SessionPaths(folder)
            config = self._read_config(paths)
            self.store.register_session(sid, str(folder), config)
            self._apply_verdicts(sid, paths)
            self._known[sid] = paths
            if (self.store.session(sid) or {}).get("state") not in ("ended", "failed"):
                self._live.add(sid)  # an ended one: nothing more will come, the looks skip it
            added.append(sid)
        return added

    def _apply_verdicts(self, sid: str, paths: SessionPaths) -> None:
        found, reason = disqualifications.current(paths)
        if found:
            self.store.set_disqualified(sid, reason)

    def _read_config(self, paths: SessionPaths) -> dict:
        """``session.json`` as written by onegc; anything else is reported, and the session is
        still shown (its ``session_started`` event says what it is): a bad file hides nothing."""
        try:
            with open(paths.config, "rb") as f:
                raw = f.read(MAX_CONFIG_BYTES + 1)
            if len(raw) > MAX_CONFIG_BYTES:
                raise ValueError(f"over {MAX_CONFIG_BYTES >> 10} KiB")
            config = json.loads(raw)
            if not isinstance(config, dict):
                raise ValueError("not a JSON object")
            return config
        except (OSError, ValueError) as exc:
            self._error(f"{paths.config}: unreadable ({str(exc)[:120]}); the session is shown from its events")
            return {}

    def ingest_session(self, sid: str) -> int:
        """Read everything new of one session; returns how many new events were stored."""
        paths = self._known.get(sid)
        if paths is None:
            return 0
        watched = self._files.get(sid)
        if watched is None:
            watched = self._files[sid] = _Watched(str(paths.events))
        key = watched.key
        ident, size = _file_state(key)
        tail = self._tails.get(sid)
        if tail is None or ident != watched.ident:
            # first look at this file (or again, after a write that did not commit): where the
            # store has it; then this ingester's own place in it, which it only moves as it commits
            known = self.store.ingested_file(key)
            if known is not None and ident is not None and known != _file_id(ident):
                self._start_over(sid, paths)  # another attempt in this folder (a study retry)
            offset, line_no = self.store.offset(key)
            if tail is None or (tail.state.offset, tail.state.line_no) != (offset, line_no):
                tail = self._tails[sid] = JsonlTail(paths.events, TailState(offset, line_no))
            watched.ident = ident
        elif size == tail.state.offset and not tail.state.in_long_line:
            return 0  # nothing new since it was read (and stored): no query, no open
        try:
            return self._read_new(sid, paths, key, _file_id(ident), tail)
        except BaseException:
            self.forget_place(sid)  # what was read may not be stored: the store's place counts
            raise

    def unread(self, sid: str) -> int:
        """How many bytes of a session's file this ingester has not read (a stat, no query); a
        file it has not looked at, or another file in its place, counts as more than any batch."""
        tail, watched = self._tails.get(sid), self._files.get(sid)
        if tail is None or watched is None or tail.state.in_long_line:
            return MAX_BATCH_BYTES
        ident, size = _file_state(watched.key)
        if ident != watched.ident or size < tail.state.offset:
            return MAX_BATCH_BYTES
        return size - tail.state.offset

    def forget_place(self, sid: str | None = None) -> None:
        """Take the place in a session's file (all of them: ``None``) from the store next time: a
        write of what was read did not commit."""
        if sid is None:
            self._tails.clear()
            self._files.clear()
        else:
            self._tails.pop(sid, None)
            self._files.pop(sid, None)

    def _read_new(self, sid: str, paths: SessionPaths, key: str, file_id: str | None, tail: JsonlTail) -> int:
        offset = tail.state.offset
        total = 0
        while True:
            first, block = tail.read_block(MAX_BATCH_BYTES)
            batch = self._fast_batch(sid, first, block)
            if batch is None:
                batch = self._parse_lines(sid, first, block)
            records, raws, lines, bad = batch
            if tail.state.offset == offset:
                break
            new = write_batch(self.store, IngestBatch(key, sid, records, raws, tail.state.offset, tail.state.line_no, bad,
                                                      lines, file_id))
            for n, err in new.rejected:
                self._error(f"{paths.events}:{n}: event line skipped ({err})")
            offset = tail.state.offset
            total += len(new.new)
            if new.new and self.on_events is not None:
                events = list(records) if len(new.new) == len(records) else [records[i] for i in new.new]
                if self._held is None:
                    self.on_events(sid, events)
                else:
                    self._held.append((sid, events))
            if "session_ended" in map(_TYPE, records) and (  # (every line new: no look at each)
                    len(new.new) == len(records) or any(records[i]["type"] == "session_ended" for i in new.new)):
                self._apply_verdicts(sid, paths)  # the runner's own (an integrity rule) comes with its end
                record_status.apply(self.store, sid, paths, self.home_id)  # its chain and seal, checked once
                self._live.discard(sid)
            if tail.at_end:
                break  # no second open just to find nothing more
        return total

    def _start_over(self, sid: str, paths: SessionPaths) -> None:
        self.store.forget_session(sid)
        self.store.register_session(sid, str(paths.root), self._read_config(paths))
        self._tails.pop(sid, None)
        self._live.add(sid)

    @staticmethod
    def _fast_batch(sid: str, first: int, lines: list[bytes | None]) -> tuple | None:
        """A batch of good lines of this session, each validated into its record by a map in C (a
        catch-up or reindex reads millions, the monitor thousands a second); ``None`` when any line
        is not good, to be read line by line."""
        if not lines:
            return [], [], [], []
        if None in lines:
            return None
        good = cast("list[bytes]", lines)
        from onegc_tui.store.records import validate_record

        try:
            records = list(map(validate_record, good))
            raws = list(map(bytes.decode, good))
        except ValueError:  # a corrupt or blank line (ValidationError), or one not UTF-8
            return None
        if set(map(_SESSION, records)) != {sid}:
            return None
        return records, raws, range(first, first + len(lines)), []

    @staticmethod
    def _parse_lines(sid: str, first: int, block: list[bytes | None]) -> tuple:
        """Each line on its own: its record, or the reason it is bad."""
        from pydantic import ValidationError

        from onegc_tui.store.records import parse_record

        records: list[Record] = []
        raws: list[str] = []
        lines: list[int] = []
        bad: list[tuple[int, str]] = []
        for n, line in enumerate(block, first):
            if line is None:
                bad.append((n, too_long(MAX_BATCH_BYTES)))
                continue
            try:
                record = parse_record(line)
            except ValidationError as exc:
                if not line.strip():
                    continue
                err = exc.errors()[0]
                bad.append((n, f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"[:200]))
                continue
            if record["session_id"] != sid:  # only this session's runner writes this file
                bad.append((n, f"an event of session {record['session_id'][:60]!r} in {sid}'s file: skipped"))
                continue
            records.append(record)
            raws.append(line.decode("utf-8", errors="replace"))
            lines.append(n)
        return records, raws, lines, bad

    def ingest_all(self, only: Collection[str] | None = None) -> int:
        """Every session folder (of ``only``) read to its end, here, in this process (a catch-up
        from scratch on two: onegc_tui/store/parallel.py ``catch_up``)."""
        self.discover(only)
        return sum(self.ingest_session(sid) for sid in list(self._known))

    @property
    def live(self) -> frozenset[str]:
        """The sessions not ended (kept as they change: a poll over 10 000 finished sessions
        copies none of them)."""
        return frozenset(self._live)

    def catch_up(self) -> int:
        """Everything new in every session folder, then the liveness check (the CLI's one-shot view)."""
        n = self.ingest_all()
        self.check_liveness()
        return n

    def check_liveness(self) -> list[str]:
        """Mark sessions failed whose runner is gone (runner/launch/reconcile.py): running ones, and
        queued ones too — a runner that died before its first event, a folder deleted before it
        started; returns their ids."""
        failed = []
        for row in self.store.sessions("state IN ('queued', 'running', 'paused')"):
            sid = row["session_id"]
            if sid not in self._known:
                continue
            if lock_held(self._known[sid]):
                continue  # its runner holds the session's lock: alive (an open and a flock, every RESCAN_S)
            self.ingest_session(sid)  # a runner that just ended has written session_ended
            if (self.store.session(sid) or {}).get("state") in ("ended", "failed"):
                continue
            if settle_from_result(self.store, self._known[sid]) is not None:
                continue  # it ended, and its log's last line is torn: result.json says how
            reason = reconcile(self._known[sid])
            if reason:
                self.store.mark_failed(sid, reason)
                record_status.apply(self.store, sid, self._known[sid], self.home_id)  # its end cut off?
                if not self.read_only:
                    clean_up_after(self._known[sid])
                failed.append(sid)
        return failed

    def _error(self, message: str) -> None:
        if self.on_error:
            self.on_error(message)


@dataclass
class _Watched:
    """One session's ``events.jsonl`` as this ingester last read it."""

    key: str  # its path, as the store keys its offset
    ident: tuple[int, int] | None = None  # (device, inode): another file under the same path is another attempt


def _file_state(path: str) -> tuple[tuple[int, int] | None, int]:
    """The file's identity (device, inode) and size; ``(None, 0)`` when it is not there. By its
    path as a str, with no text made: ten times a second for each live session, at rest."""
    try:
        st = os.stat(path)
    except OSError:
        return None, 0
    return (st.st_dev, st.st_ino), st.st_size


def _file_id(ident: tuple[int, int] | None) -> str | None:
    """The identity as the store keeps it ("device:inode")."""
    return None if ident is None else f"{ident[0]}:{ident[1]}"
