"""A footer that always fits: full labels where there is room, then compact spacing, then short
labels, then fewer keys — never cut off at the edge. ``?`` (help, every key) and ``q`` (quit)
always stay; the keys dropped first are the last ones listed."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

SHORT = {"Pause/resume": "Pause", "Filter sessions": "Filter", "Search transcript": "Search",
         "Transcript kinds": "Kinds", "New session": "New", "Reverse sort": "Reverse", "Mean/best": "Best",
         "Demo tasks": "Demo", "Open the line whole": "Open"}
KEEP = ("help", "quit", "app.help", "app.quit", "app.pop_screen", "dismiss")  # actions shown however narrow the terminal
PALETTE_W = 14  # "^p palette" and its border


def short_label(description: str) -> str:
    return SHORT.get(description, description.split()[0] if description else description)


def plan(items: list[tuple[str, str, str]], width: int) -> tuple[bool, list[tuple[str, str]], bool]:
    """How to show ``items`` (action, key as shown, description) in ``width`` cells: whether
    compact, which (key, label) pairs, and whether the command-palette key still fits."""
    def cost(pairs: list[tuple[str, str]], compact: bool) -> int:
        return sum(len(k) + len(d) + (2 if compact else 3) for k, d in pairs)

    full = [(k, d) for _, k, d in items]
    short = [(k, short_label(d)) for _, k, d in items]
    for compact, pairs in ((False, full), (True, full), (True, short)):
        if cost(pairs, compact) <= width:
            return compact, pairs, cost(pairs, compact) + PALETTE_W <= width
    kept = list(zip((a for a, _, _ in items), short, strict=True))
    while cost([p for _, p in kept], True) > width:
        droppable = [i for i, (action, _) in enumerate(kept) if action not in KEEP]
        if not droppable:
            break
        del kept[droppable[-1]]
    return True, [p for _, p in kept], False


class KeyFooter(Footer):
    """Textual's footer (clickable keys, live bindings) with labels that fit the terminal."""

    def _items(self) -> list[tuple[str, str, str, bool, str, str]]:
        """(action, key as shown, description, enabled, tooltip, key) of each binding shown."""
        out, seen = [], set()
        for _, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show and binding.action not in seen:
                seen.add(binding.action)
                out.append((binding.action, self.app.get_key_display(binding), binding.description, enabled,
                            tooltip or binding.description, binding.key))
        return out

    def _signature(self) -> tuple:
        """Everything ``compose`` draws from: the keys shown, the width, the palette key."""
        palette = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
        return tuple(self._items()), self.app.size.width, palette is not None and palette[2]

    def bindings_changed(self, screen) -> None:
        """Recompose only when what the footer shows has changed. Textual's recomposes on every
        update of the screen's bindings (each focus change, each ``refresh_bindings``), mounting
        every key anew: over a large store the dashboard's first second was several of them."""
        self._bindings_ready = True
        if not screen.app.app_focus or not (self.is_attached and screen is self.screen):
            return
        if self._signature() != self._shown:
            self.call_after_refresh(self.recompose)

    _shown: tuple | None = None  # the signature of what the last compose drew

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        self._shown = self._signature()
        items = self._items()
        compact, pairs, palette = plan([(a, k, d) for a, k, d, *_ in items], self.app.size.width)
        self._plan_width = self.app.size.width
        self.compact = compact
        by_key = {item[1]: item for item in items}
        for key_display, label in pairs:
            action, _, _, enabled, tooltip, key = by_key[key_display]
            item = FooterKey(key, key_display, label, action, disabled=not enabled, tooltip=tooltip,
                             classes="-compact" if compact else "")
            # born with the footer's compactness: a FooterKey starts compact, and the binding's first
            # sync restyled each key on its own (~2.5 ms a key, ~35 ms of every screen's first frame)
            item.set_reactive(FooterKey.compact, compact)
            yield item.data_bind(compact=Footer.compact)
        if palette and self.app.ENABLE_COMMAND_PALETTE:
            binding = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
            if binding is not None:
                _, b, enabled, _ = binding
                yield FooterKey(b.key, self.app.get_key_display(b), b.description, b.action,
                                classes="-command-palette", disabled=not enabled, tooltip=b.description)

    _plan_width = 0

    def on_resize(self) -> None:
        if self.app.size.width != self._plan_width and self._bindings_ready:
            self.call_after_refresh(self.recompose)
