"""rich's Console whose tables never cut a cell (``cli/ui.py`` makes it: rich is imported only
when a command prints). A table wider than the terminal is printed as a list (one block per row,
``column: value`` lines) instead of being squeezed with ellipses, so ids and paths stay whole and
copyable."""
from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.errors import MarkupError
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from rocmrevive.cli.shown import Lines, shown
from rocmrevive.errors import exit_code


def _line(s: str) -> str:
    """One printed line through the one renderer: newlines at its ends (a blank line before a
    heading) kept, every other control character, a newline inside included, escaped."""
    body = s.strip("\n")
    if not body:
        return s
    head = s[:len(s) - len(s.lstrip("\n"))]
    return head + shown(body) + s[len(s.rstrip("\n")):]


def _safe(obj, *, header: bool = False):
    """``obj`` with every string in it passed through the one renderer (``shown``): a str or
    Text as one line (``_line``), a table cell too; a column header (rocmrevive's own words,
    ``GPU\\nnode``) and a cell rocmrevive stacked on purpose (``shown.Lines``) keep their
    newlines."""
    if isinstance(obj, Lines):
        return Text(obj)          # its parts went through shown when it was stacked
    if isinstance(obj, str):
        return shown(obj, lines=True) if header else _line(obj)
    if isinstance(obj, Text):
        plain = obj.plain
        safe = shown(plain, lines=True) if header else _line(plain)
        if safe == plain:
            return obj
        return Text(safe, style=obj.style, justify=obj.justify, no_wrap=obj.no_wrap, end=obj.end)
    if isinstance(obj, Table):
        if obj.title is not None:
            obj.title = _safe(obj.title)
        for col in obj.columns:
            col.header = _safe(col.header, header=True)
            col._cells = [_safe(c) for c in col._cells]
    return obj


class WholeCellConsole(Console):
    """A Console whose ``print`` of a Table keeps every cell whole."""

    def print(self, *objects, **kwargs):  # noqa: A003 - rich's name
        # nothing reaches the terminal raw: every string printed passes the one renderer
        objects = tuple(_safe(o) for o in objects)
        try:
            return self._print(*objects, **kwargs)
        except MarkupError:   # brackets in a name that read as markup: print it as it is
            return self._print(*objects, **{**kwargs, "markup": False})

    def _print(self, *objects, **kwargs):
        if len(objects) == 1 and isinstance(objects[0], Table):
            if not self._fits(objects[0]):
                return self._print_as_list(objects[0], **kwargs)
            if not self.is_terminal:
                return self._print_plain(objects[0], **kwargs)
            self._widths_for_words(objects[0])
        return super().print(*objects, **kwargs)

    def _print_plain(self, table, **kwargs):
        """Piped: every table in one plain style (no box lines, columns two spaces apart)
        and no line ending in spaces, so files and `grep`/`cut` see the same layout."""
        table.box, table.show_edge, table.pad_edge = None, False, False
        with self.capture() as cap:
            super().print(table, **kwargs)
        for line in cap.get().splitlines():
            super().print(Text(line.rstrip()), soft_wrap=True)

    def _widths_for_words(self, table) -> None:
        """Fixed column widths for a table narrower at its minimum than the terminal but
        wider at its natural size: each column gets its longest word, the rest of the width
        goes to the columns in proportion to what they lack (rich's own squeeze would cut
        an id in a column it narrows first)."""
        wide = self.options.update(width=1_000_000)
        ranges = [table._measure_column(self, wide, c) for c in table.columns]
        avail = self.width - table._extra_width
        if sum(r.maximum for r in ranges) <= avail:
            return
        lack = [r.maximum - r.minimum for r in ranges]
        spare = avail - sum(r.minimum for r in ranges)
        for i, (c, r, short) in enumerate(zip(table.columns, ranges, lack)):
            c.width = r.minimum + spare * short // max(1, sum(lack)) - table._get_padding_width(i)

    def on_broken_pipe(self) -> None:  # rich's own handler exits 1, the internal-error code
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(exit_code("PIPE_CLOSED"))

    def _fits(self, table) -> bool:
        """Whether the table fits with every cell wrapped only between words (its minimum
        width: the longest word of each column): a path or id is one word, never cut."""
        wide = self.options.update(width=1_000_000)  # the table's natural width, unclamped
        return Measurement.get(self, wide, table).minimum <= self.width

    def _print_as_list(self, table, **kwargs):
        def plain(cell) -> str:
            if isinstance(cell, Text):
                return cell.plain
            if isinstance(cell, str):
                return Text.from_markup(cell).plain if kwargs.get("markup", True) else cell
            return str(cell)

        if table.title:
            super().print(plain(table.title), markup=False, soft_wrap=True)
        heads = [plain(c.header) or f"#{i}" for i, c in enumerate(table.columns)]
        cells = [list(c._cells) for c in table.columns]
        for r in range(table.row_count):
            row = [plain(col[r]) if r < len(col) else "" for col in cells]
            super().print(f"{heads[0]}: {row[0]}", markup=False, soft_wrap=True)
            for h, v in zip(heads[1:], row[1:]):
                if v:
                    super().print(f"  {h}: {v}", markup=False, soft_wrap=True)
        return None
