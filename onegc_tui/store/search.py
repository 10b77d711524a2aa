"""Full-text search over the transcript: the SQL that finds rows holding words as typed.

The FTS5 index (``transcript_fts``, schema.py) narrows the rows by the words' tokens; the SQL
function ``holds`` (registered on every connection the store opens) checks each word itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_TOKEN = re.compile(r"[^\W_]+")  # what FTS5's unicode61 tokenizer keeps: letters and digits


def fts_query(words: Sequence[str]) -> str:
    """An FTS5 query for rows holding every word: each word's tokens, as prefixes ("run_1.py" ->
    "run"* "1"* "py"*). The index keeps no positions (detail=column), so a word of several tokens
    cannot be a phrase; :func:`text_search` checks the words themselves. Empty when no word has a
    token (then there is nothing to ask the index)."""
    return " ".join(f'"{token}"*' for w in words for token in _TOKEN.findall(w))


def holds(text: str | None, word: str) -> bool:
    """SQL ``holds(text, word)``: the lower-cased ``word`` is in ``text``, whatever it holds."""
    return text is not None and word in text.lower()


def text_search(words: Sequence[str], text: str = "t.text") -> tuple[str, list[str], list[str]]:
    """``(join, conditions, args)`` for transcript rows ``t`` holding every (lower-cased) word as
    typed: ``run_1.py``, ``val_acc``, ``12:30``, ``"``, ``*``. The full-text index narrows the rows
    by the words' tokens; ``holds`` checks each word itself in SQL, so a ``LIMIT`` counts matches,
    not rows that merely share the tokens (every ``12`` and ``30`` of a log for ``12:30``)."""
    if not words:
        return "", [], []
    join, where, args = "", [], []
    if match := fts_query(words):
        join = " JOIN transcript_fts f ON f.rowid = t.rowid"
        where.append("transcript_fts MATCH ?")
        args.append(match)
    for word in words:
        where.append(f"holds({text}, ?)")
        args.append(word)
    return join, where, args
