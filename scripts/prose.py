"""Measure the notebooks' prose for their writers: words, sentences and the long ones.

Usage: python scripts/prose.py [NOTEBOOK ...]       (default: notebooks/[0-9][0-9]_*.ipynb)
       python scripts/prose.py --long 5 notebooks/03_*.ipynb   (and its 5 longest sentences)

One row per notebook and a total row: cells, then the words and sentences of the markdown
prose, mean words per sentence and the sentences over 35 words. Two more columns count them by
the strict rule: a list item or a paragraph that ends without a full stop runs on into the next
one of its cell. The goal is met by the strict columns. CONTRIBUTING.md ("Prose") gives the
counting rules and the goal. It is a measure for writers, not a test: no number fails it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG = 35  # words: a long sentence (CONTRIBUTING.md)
ABBREVIATIONS = {"e.g.", "i.e.", "cf.", "vs.", "approx."}  # their period ends no sentence

NOT_PROSE = re.compile(
    r"^[ \t]*(```|~~~)[\s\S]*?(?:^[ \t]*\1[^\n]*$|\Z)"  # a fenced code block (to its fence)
    r"|^[ \t]{0,3}#{1,6}(?:[ \t][^\n]*)?$"  # a heading
    r"|^[ \t]*\|[^\n]*$",  # a row of a table
    re.MULTILINE,
)
PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
HTML_BLOCK = re.compile(r"\s*<[A-Za-z!/]")  # a paragraph that starts with a tag is HTML
LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d+[.)])[ \t]+")
QUOTE = re.compile(r"[ \t]*(?:>[ \t]?)*")  # indentation and quote markers
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
LINK = re.compile(r"(!?)\[([^\]]*)\]\([^)]*\)")  # an image's text is dropped, a link's kept
AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
HTML_TAG = re.compile(r"<!--[\s\S]*?-->|</?[A-Za-z][^>]*>")
TITLE = re.compile(r"(\*\*?)(?=\S)[^*]+?[.?!:]\1(?=\s|$)")  # **1. Title.** or *Days mixed?*
EMPHASIS = re.compile(r"\*+|~~|(?<!\w)_+|_+(?!\w)")  # not the _ inside num_shards
ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|])")
SENTENCE_END = re.compile(r"[.!?][)\]\"'’”]*$")
HIDDEN = re.compile("\x00(\\d+)\x00")  # a code span while a unit is split into words


def units(markdown: str) -> Iterator[str]:
    """The paragraphs and list items of one markdown cell, each as one line of text: fenced code
    blocks, headings, table rows and HTML blocks are left out."""
    for paragraph in PARAGRAPH_BREAK.split(NOT_PROSE.sub("", markdown)):
        if paragraph.strip() and not HTML_BLOCK.match(paragraph):
            yield from _items(paragraph)


def _items(paragraph: str) -> Iterator[str]:
    """A paragraph's list items one by one (their markers dropped), or the paragraph whole."""
    unit: list[str] = []
    for line in paragraph.splitlines():
        item = LIST_ITEM.match(line)
        if item and unit:
            yield " ".join(unit)
            unit = []
        text = line[item.end() :] if item else line[QUOTE.match(line).end() :]
        if text.strip():
            unit.append(text.strip())
    if unit:
        yield " ".join(unit)


def sentences(unit: str) -> list[list[str]]:
    """The sentences of one paragraph or list item, each a list of its words. A code span is one
    word; a sentence ends at a word that ends in ``.``, ``!`` or ``?`` (not an abbreviation such
    as ``e.g.``), and at the end of the unit, whether or not a period ends it."""
    spans: list[str] = []

    def hide(code: re.Match) -> str:  # one word, whatever spaces and dots it holds
        spans.append(code.group(0))
        return f"\x00{len(spans) - 1}\x00"

    text = CODE_SPAN.sub(hide, unit)
    title = TITLE.match(text)
    text = text[title.end() :] if title else text
    text = LINK.sub(lambda link: "" if link.group(1) else link.group(2), text)
    text = ESCAPE.sub(r"\1", HTML_TAG.sub(" ", AUTOLINK.sub(r"\1", text)))
    found: list[list[str]] = [[]]
    for token in filter(_is_word, EMPHASIS.sub("", text).split()):
        found[-1].append(HIDDEN.sub(lambda hidden: spans[int(hidden.group(1))], token))
        if _ends_sentence(token):
            found.append([])
    return [sentence for sentence in found if sentence]


def _ends_sentence(token: str) -> bool:
    """Whether a sentence ends at this word (its code spans hidden): ``.``, ``!`` or ``?`` at its
    end, closing brackets and quotes aside, unless it is one of the ABBREVIATIONS."""
    if token.lstrip("([\"'‘“").lower() in ABBREVIATIONS:
        return False
    return SENTENCE_END.search(token) is not None


def _is_word(token: str) -> bool:  # a letter, a digit or a code span: not a lone dash or arrow
    return "\x00" in token or any(character.isalnum() for character in token)


def read_cells(path: Path) -> list[dict]:
    """The cells of a notebook file, each source as one string."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        source = cell["source"]
        cell["source"] = "".join(source) if isinstance(source, list) else source
    return cells


def cell_sentences(cells: list[dict], strict: bool = False) -> list[tuple[int, list[str]]]:
    """Every sentence of the markdown cells, with its cell's number (the first cell is 1). By
    the ``strict`` rule, a unit that ends without a full stop runs on into the next one."""
    found = []
    for number, cell in enumerate(cells, start=1):
        if cell["cell_type"] == "markdown":
            found += [(number, s) for s in markdown_sentences(cell["source"], strict)]
    return found


def markdown_sentences(markdown: str, strict: bool = False) -> list[list[str]]:
    """The sentences of one markdown cell. Each paragraph or list item ends its last sentence,
    unless ``strict``: then a unit whose last word ends no sentence (no ``.``, ``!`` or ``?``)
    runs on into the next unit of the cell, as a list item without a stop does for a reader."""
    found: list[list[str]] = []
    runs_on = False
    for unit in units(markdown):
        parts = sentences(unit)
        if runs_on and parts:
            found[-1] = found[-1] + parts.pop(0)
        found += parts
        runs_on = strict and bool(found) and not _ends_sentence(found[-1][-1])
    return found


def row(name: str, cells: int, lengths: list[int], strict: list[int] | None = None) -> list[str]:
    """A row of the table, from the number of words of each sentence, and then, if given, the
    mean and the long ones from the sentences counted by the strict rule."""
    words = sum(lengths)
    found = [name, str(cells), f"{words:,}", f"{len(lengths):,}", *_long(lengths)]
    return found if strict is None else [*found, *_long(strict)]


def _long(lengths: list[int]) -> list[str]:
    """The mean words per sentence and the sentences over LONG words, with their share."""
    count = len(lengths)
    over = sum(length > LONG for length in lengths)
    mean = f"{sum(lengths) / count:.1f}" if count else "-"
    share = f"{over} ({100 * over / count:.0f}%)" if count else "0"
    return [mean, share]


def table(rows: list[list[str]]) -> str:
    """The rows under their header, the names left-aligned and the numbers right-aligned."""
    header = ["notebook", "cells", "words", "sentences", "words/sentence", f"over {LONG}"]
    rows = [[*header, "strict w/s", f"strict over {LONG}"][: len(rows[0])], *rows]
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    lines = []
    for r in rows:
        numbers = [cell.rjust(width) for cell, width in zip(r[1:], widths[1:], strict=True)]
        lines.append("  ".join([r[0].ljust(widths[0]), *numbers]))
    return "\n".join(lines)


def longest(name: str, found: list[tuple[int, list[str]]], n: int) -> str:
    """The ``n`` longest sentences of a notebook, longest first (in order among equals)."""
    ranked = sorted(found, key=lambda pair: len(pair[1]), reverse=True)[:n]
    lines = [f"{name}: the {len(ranked)} longest sentences"]
    lines += [f"  {len(words)} words, cell {cell}: {' '.join(words)}" for cell, words in ranked]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, metavar="NOTEBOOK")
    parser.add_argument(
        "--long",
        type=int,
        default=0,
        metavar="N",
        help="also list each notebook's N longest sentences",
    )
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    measured = {}  # name: (number of cells, its sentences, its sentences by the strict rule)
    for path in paths:
        try:
            cells = read_cells(path)
        except (OSError, ValueError, KeyError, TypeError) as error:
            print(f"{path}: cannot read it as a notebook: {error}", file=sys.stderr)
            return 1
        measured[path.name] = (len(cells), cell_sentences(cells), cell_sentences(cells, True))
    print(table(rows_of(measured)))
    if args.long > 0:
        for name, (_, _, found) in measured.items():
            print(f"\n{longest(name, found, args.long)}")
    return 0


def rows_of(measured: dict[str, tuple]) -> list[list[str]]:
    """A row per notebook, then the total, from each one's cells and sentences by both rules."""
    rows = []
    every: list[list[int]] = [[], []]
    for name, (cells, found, strict) in measured.items():
        lengths = [len(s) for _, s in found]
        strict_lengths = [len(s) for _, s in strict]
        rows.append(row(name, cells, lengths, strict_lengths))
        every[0] += lengths
        every[1] += strict_lengths
    total = sum(cells for cells, _, _ in measured.values())
    return [*rows, row("total", total, every[0], every[1])]


if __name__ == "__main__":
    sys.exit(main())
