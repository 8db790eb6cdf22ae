"""scripts/prose.py: the counting rules that CONTRIBUTING.md ("Prose") states, on made-up markdown."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import prose  # noqa: E402  (scripts/prose.py)


def lengths(markdown: str) -> list[int]:
    """The number of words of each sentence of one markdown cell."""
    return [len(s) for unit in prose.units(markdown) for s in prose.sentences(unit)]


def texts(markdown: str) -> list[str]:
    return [" ".join(s) for unit in prose.units(markdown) for s in prose.sentences(unit)]


def test_a_sentence_ends_at_a_full_stop_a_question_or_an_exclamation_mark():
    assert texts("One word. Then two more! Does it ask? And the rest") == [
        "One word.",
        "Then two more!",
        "Does it ask?",
        "And the rest",
    ]


def test_closing_brackets_and_quotes_after_the_stop_still_end_the_sentence():
    assert lengths('It says "stop." Then (this one.) And') == [3, 3, 1]


@pytest.mark.parametrize("abbreviation", ["e.g.", "i.e.", "cf.", "vs.", "approx.", "(e.g."])
def test_an_abbreviation_ends_no_sentence(abbreviation):
    assert lengths(f"Use a spec, {abbreviation} a dict of features. Then parse.") == [8, 2]


def test_numbers_versions_urls_and_dotted_names_end_no_sentence():
    markdown = "It took 1.5 s on TF 2.21 with tf.data, see http://example.org/a.b for more. Done."
    assert lengths(markdown) == [13, 1]


def test_a_code_span_is_one_word_whatever_it_holds():
    markdown = "Call `tf.io.parse_single_example(x, spec)` now. Then `a? b. c!` and ``x ` y``."
    assert texts(markdown) == [
        "Call `tf.io.parse_single_example(x, spec)` now.",
        "Then `a? b. c!` and ``x ` y``.",
    ]
    assert lengths(markdown) == [3, 4]


def test_code_blocks_headings_tables_and_html_are_left_out():
    markdown = "\n".join(
        [
            "## A heading of five words",
            "",
            "Before the code.",
            "```python",
            "print('a sentence. And another one.')",
            "```",
            "",
            "~~~",
            "more code. here",
            "~~~",
            "| key | type |",
            "|---|---|",
            "| `height` | int64. Not prose |",
            "",
            '<div class="note">An HTML block.',
            "It goes on to the blank line.</div>",
            "",
            "After <b>the</b> table.",
        ]
    )
    assert texts(markdown) == ["Before the code.", "After the table."]


def test_a_fence_that_never_closes_leaves_out_the_rest_of_the_cell():
    assert texts("Some prose.\n\n```\ncode. more code.\n\nStill code.") == ["Some prose."]


def test_each_list_item_is_a_sentence_even_without_a_full_stop():
    markdown = (
        "It does three things:\n\n- reads the shards\n- shuffles them. Twice\n  over\n1. batches"
    )
    assert texts(markdown) == [
        "It does three things:",
        "reads the shards",
        "shuffles them.",
        "Twice over",
        "batches",
    ]


def test_a_paragraph_ends_its_last_sentence_and_a_line_break_does_not():
    assert lengths("A first paragraph\nthat goes on\n\nends there, then a second") == [6, 5]


def test_a_paragraphs_opening_bold_or_italic_title_is_left_out_like_a_heading():
    assert texts("**Exercise 1.** Add a feature.") == ["Add a feature."]
    assert texts("**2. How good must JPEG be?** Write a function.") == ["Write a function."]
    assert texts("*Days mixed?* Shuffle the files.") == ["Shuffle the files."]
    assert texts("**Shards**, so that readers open several files.") == [
        "Shards, so that readers open several files."
    ]  # emphasis, not a title: its words count


def test_links_keep_their_text_images_go_and_dashes_are_no_words():
    markdown = "See [the README](../README.md) - ![a cat](cat.png) it says so."
    assert texts(markdown) == ["See the README it says so."]


def strict_texts(markdown: str) -> list[str]:
    return [" ".join(s) for s in prose.markdown_sentences(markdown, strict=True)]


def test_by_the_strict_rule_a_unit_without_a_full_stop_runs_on_into_the_next():
    markdown = "It does three things:\n\n- reads the shards\n- shuffles them. Twice\n- batches."
    assert strict_texts(markdown) == [
        "It does three things: reads the shards shuffles them.",
        "Twice batches.",
    ]
    assert prose.markdown_sentences(markdown) == [s.split() for s in texts(markdown)]


def test_by_the_strict_rule_a_cell_still_ends_its_last_sentence(tmp_path):
    cells = [("markdown", "Read it back:"), ("code", "1"), ("markdown", "- one\n- two")]
    path = write_notebook(tmp_path / "01_a.ipynb", cells)
    assert prose.cell_sentences(prose.read_cells(path), strict=True) == [
        (1, ["Read", "it", "back:"]),
        (3, ["one", "two"]),
    ]


def test_by_the_strict_rule_an_abbreviation_or_a_code_span_at_the_end_runs_on():
    assert strict_texts("- a spec, e.g.\n- a dict. \n- done!\n- `x?`\n- y\n- `z`?\n- w") == [
        "a spec, e.g. a dict.",
        "done!",
        "`x?` y `z`?",
        "w",
    ]


def test_the_table_counts_sentences_over_35_words_and_the_mean():
    assert prose.row("x.ipynb", 7, [35, 36, 10, 3]) == [
        "x.ipynb",
        "7",
        "84",
        "4",
        "21.0",
        "1 (25%)",
    ]
    assert prose.row("empty.ipynb", 1, []) == ["empty.ipynb", "1", "0", "0", "-", "0"]
    assert prose.row("x.ipynb", 7, [35, 36, 10, 3], [71, 13]) == [
        *["x.ipynb", "7", "84", "4", "21.0", "1 (25%)"],
        *["42.0", "1 (50%)"],
    ]


def write_notebook(path: Path, cells: list[tuple[str, str]]) -> Path:
    cells = [{"cell_type": kind, "metadata": {}, "source": source} for kind, source in cells]
    path.write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    return path


def test_only_markdown_cells_count_and_cells_are_numbered_from_1(tmp_path):
    cells = [
        ("markdown", "# Title\n\nOne sentence here."),
        ("code", "print('Not. Prose.')"),
        ("markdown", ["Two ", "lines. And more"]),  # a source as nbformat stores it: lines
    ]
    path = write_notebook(tmp_path / "01_a.ipynb", cells)
    found = prose.cell_sentences(prose.read_cells(path))
    assert found == [
        (1, ["One", "sentence", "here."]),
        (3, ["Two", "lines."]),
        (3, ["And", "more"]),
    ]


def test_the_command_prints_a_row_per_notebook_a_total_and_the_longest(tmp_path, capsys):
    long = " ".join(["word"] * 36) + "."
    first = write_notebook(tmp_path / "01_a.ipynb", [("markdown", f"Short one. {long}")])
    cells = [("code", "1"), ("markdown", "Two words.\n\n- an item\n- and one more.")]
    second = write_notebook(tmp_path / "02_b.ipynb", cells)
    assert prose.main([str(first), str(second), "--long", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split() for line in lines[:4]] == [
        [*"notebook cells words sentences words/sentence over 35".split(), "strict", "w/s"]
        + ["strict", "over", "35"],
        ["01_a.ipynb", "1", "38", "2", "19.0", "1", "(50%)", "19.0", "1", "(50%)"],
        ["02_b.ipynb", "2", "7", "3", "2.3", "0", "(0%)", "3.5", "0", "(0%)"],
        ["total", "3", "45", "5", "9.0", "1", "(20%)", "11.2", "1", "(25%)"],
    ]
    assert lines[5] == "01_a.ipynb: the 1 longest sentences"
    assert lines[6] == f"  36 words, cell 1: {long}"
    assert lines[-1] == "  5 words, cell 2: an item and one more."  # by the strict rule


def test_a_file_that_is_not_a_notebook_is_one_line_and_exit_1(tmp_path, capsys):
    (tmp_path / "x.ipynb").write_text("not json")
    assert prose.main([str(tmp_path / "x.ipynb")]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith(f"{tmp_path / 'x.ipynb'}: cannot read it as a notebook")
        and err.count("\n") == 1
    )
