"""Fast structure checks of every notebook (no kernel is started).

The conventions (CONVENTIONS in the README's "For maintainers" section): a
numbered name, one H1, top matter in order, one Setup cell, Exercises with a
solution cell, Key points, a link to the next notebook, outputs committed from
a clean top-to-bottom run with nothing on stderr, and a README table of
contents that lists exactly the notebooks that exist.
"""

import math
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NAME = re.compile(r"^(\d\d)_[a-z]+(?:_[a-z0-9]+)+\.ipynb$")
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
MACHINE_PATHS = re.compile(r"(/work/|/root/|/home/|/tmp/|site-packages|/Users/|[A-Z]:\\\\)")


def headings(nb, level):
    prefix = "#" * level + " "
    return [
        line[len(prefix) :].strip()
        for cell in nb.cells
        if cell.cell_type == "markdown"
        for line in cell.source.splitlines()
        if line.startswith(prefix)
    ]


def heading_index(nb, title):
    """Index of the first markdown cell with a level-2 heading starting with `title`."""
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and re.search(
            rf"^## {re.escape(title)}", cell.source, re.M | re.I
        ):
            return i
    return None


def tags(cell):
    return cell.get("metadata", {}).get("tags", [])


@pytest.fixture(params=NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def notebook(request):
    return request.param, nbformat.read(request.param, as_version=4)


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found"


def test_names_are_numbered_from_01_without_gaps():
    numbers = []
    for path in NOTEBOOKS:
        match = NAME.match(path.name)
        assert match, f"{path.name} is not named NN_verb_topic.ipynb"
        numbers.append(int(match.group(1)))
    assert numbers == list(range(1, len(NOTEBOOKS) + 1))


def test_readme_table_of_contents_lists_exactly_the_notebooks():
    readme = (ROOT / "README.md").read_text()
    listed = re.findall(r"\(notebooks/(\d\d_[a-z0-9_]+\.ipynb)\)", readme)
    assert listed == [p.name for p in NOTEBOOKS]


def test_top_matter_is_in_order(notebook):
    path, nb = notebook
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), (
        f"{path.name}: must open with an H1"
    )
    assert len(headings(nb, 1)) == 1, (
        f"{path.name}: exactly one H1 expected, found {headings(nb, 1)}"
    )
    order = [heading_index(nb, t) for t in ("What you will learn", "Prerequisites", "Setup")]
    assert None not in order, (
        f"{path.name}: needs 'What you will learn', 'Prerequisites' and 'Setup' sections"
    )
    assert order == sorted(order), f"{path.name}: top matter out of order"
    learn = nb.cells[order[0]].source
    bullets = [line for line in learn.splitlines() if re.match(r"^\s*[-*] ", line)]
    assert 3 <= len(bullets) <= 5, f"{path.name}: 'What you will learn' should list 3-5 items"


def test_one_setup_cell_prepares_tensorflow_before_importing_it(notebook):
    path, nb = notebook
    setup = heading_index(nb, "Setup")
    code = [c for c in nb.cells[setup + 1 :] if c.cell_type == "code"]
    assert nb.cells[setup + 1].cell_type == "code", (
        f"{path.name}: the Setup heading must be followed by the setup cell"
    )
    source = code[0].source
    uses_tf = any("import tensorflow" in c.source for c in nb.cells if c.cell_type == "code")
    if uses_tf:
        assert "prepare_tensorflow(" in source and source.index(
            "prepare_tensorflow("
        ) < source.index("import tensorflow"), (
            f"{path.name}: the setup cell must call prepare_tensorflow() before importing TensorFlow"
        )
        later = [c for c in code[1:] if "import tensorflow" in c.source]
        assert not later, f"{path.name}: import TensorFlow in the setup cell only"


def test_ends_with_exercises_key_points_and_next_link(notebook):
    path, nb = notebook
    exercises, key_points = heading_index(nb, "Exercises"), heading_index(nb, "Key points")
    assert exercises is not None and key_points is not None and exercises < key_points, (
        f"{path.name}: needs 'Exercises' then 'Key points'"
    )
    index = NOTEBOOKS.index(path)
    tail = nb.cells[-1].source
    if index + 1 < len(NOTEBOOKS):
        assert NOTEBOOKS[index + 1].name in tail, (
            f"{path.name}: last cell must link to {NOTEBOOKS[index + 1].name}"
        )
    else:
        assert "README.md" in tail, f"{path.name}: last cell must link back to the README"


def test_every_exercise_is_a_stub_a_solution_and_a_check(notebook):
    """CONVENTIONS: a stub (untagged) that runs, a `solution` cell, a `check` cell naming the exercise."""
    path, nb = notebook
    start, end = heading_index(nb, "Exercises"), heading_index(nb, "Key points")
    code = [c for c in nb.cells[start:end] if c.cell_type == "code"]
    kinds = [
        "solution" if "solution" in tags(c) else "check" if "check" in tags(c) else "stub"
        for c in code
    ]
    triples = [
        i for i in range(len(kinds) - 2) if kinds[i : i + 3] == ["stub", "solution", "check"]
    ]
    assert len(triples) >= 2, (
        f"{path.name}: needs at least two exercises as stub, solution, check cells: {kinds}"
    )
    assert kinds.count("solution") == kinds.count("check") == len(triples), (
        f"{path.name}: every solution needs its stub before it and its check after it: {kinds}"
    )
    for number, i in enumerate(triples, start=1):
        check = code[i + 2].source
        assert f"Exercise {number} is not solved yet" in check, (
            f"{path.name}: the check of exercise {number} must fail with 'Exercise {number} is not solved yet: ...'"
        )


WORD = re.compile(r"[A-Za-z']+")
MAX_PROSE_WORDS = 2000


def prose_words(nb):
    """Words of prose: runs of letters (and apostrophes) in the markdown cells."""
    return sum(len(WORD.findall(c.source)) for c in nb.cells if c.cell_type == "markdown")


def reading_minutes(nb):
    """150 words a minute plus a minute per code cell, rounded up to a multiple of 5."""
    code_cells = sum(c.cell_type == "code" for c in nb.cells)
    return 5 * math.ceil((prose_words(nb) / 150 + code_cells) / 5)


def test_reading_minutes_formula():
    def nb(words, code_cells):
        cells = [nbformat.v4.new_markdown_cell(" ".join(["word"] * words))]
        cells += [nbformat.v4.new_code_cell("1") for _ in range(code_cells)]
        return nbformat.v4.new_notebook(cells=cells)

    assert prose_words(nb(3, 0)) == 3
    assert reading_minutes(nb(0, 0)) == 0
    assert reading_minutes(nb(150, 4)) == 5  # 1 + 4 minutes
    assert reading_minutes(nb(151, 4)) == 10  # just over 5 minutes
    assert reading_minutes(nb(1500, 30)) == 40


def test_prerequisites_say_how_long_it_takes(notebook):
    """The reading time comes from one formula: prose at 150 words a minute, a minute per code cell."""
    path, nb = notebook
    section = nb.cells[heading_index(nb, "Prerequisites")].source
    minutes = reading_minutes(nb)
    stated = re.findall(r"About\s+(\d+)\s+minutes\s+to\s+read\s+and\s+run\.", section)
    assert stated == [str(minutes)], (
        f"{path.name}: 'Prerequisites and time' must say 'About {minutes} minutes to read and "
        f"run.' ({prose_words(nb)} words of prose, "
        f"{sum(c.cell_type == 'code' for c in nb.cells)} code cells); it says {stated or 'nothing'}"
    )


def test_prose_fits_one_class_unit(notebook):
    path, nb = notebook
    words = prose_words(nb)
    assert words <= MAX_PROSE_WORDS, (
        f"{path.name}: {words} words of prose, at most {MAX_PROSE_WORDS} fit one class unit"
    )


def test_outputs_come_from_one_clean_top_to_bottom_run(notebook):
    path, nb = notebook
    counts = [c.execution_count for c in nb.cells if c.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1)), (
        f"{path.name}: run `make notebooks` (execution counts {counts})"
    )


def test_no_stderr_no_unexpected_errors_no_machine_paths(notebook):
    path, nb = notebook
    for number, cell in enumerate(nb.cells, start=1):
        if cell.cell_type != "code":
            continue
        for output in cell.outputs:
            where = f"{path.name} cell {number}"
            assert not (output.output_type == "stream" and output.name == "stderr"), (
                f"{where}: stderr output"
            )
            if output.output_type == "error":
                assert "raises-exception" in tags(cell), (
                    f"{where}: {output.ename} in an untagged cell"
                )
            text = output.get("text", "") + str(output.get("data", {}).get("text/plain", ""))
            text += "".join(output.get("traceback", []))  # an expected error's traceback too
            assert not MACHINE_PATHS.search(text), f"{where}: output shows a path of this machine"


def test_no_sys_path_hacks(notebook):
    path, nb = notebook
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert "sys.path" not in cell.source, (
                f"{path.name}: import helpers because it is installed"
            )


def test_every_cell_whose_output_is_not_compared_says_why(notebook):
    """A cell tagged nbval-ignore-output opens with a comment giving the reason (timings...)."""
    path, nb = notebook
    for number, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and "nbval-ignore-output" in tags(cell):
            assert cell.source.startswith("# Not compared: "), (
                f"{path.name} cell {number}: say why the output is not compared, in a first "
                "line '# Not compared: <reason>'"
            )
