"""Fast structure checks of every notebook (no kernel is started).

The conventions (CONTRIBUTING.md, "Writing a notebook"): a numbered name, one H1, top
matter in order, one Setup cell, Exercises (each a stub, then its check), Key points,
Solutions (each a solution, then the same check again), a link to the next notebook, outputs
committed from a clean top-to-bottom run with nothing on stderr (each exercise shown unsolved
under Exercises and solved under Solutions), nothing written for maintainers in what a learner
reads, and a README table of contents that lists exactly the notebooks that exist.
"""

import math
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import classroom  # noqa: E402  (a script, not a package: the one reader of the exercise layout)

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
        # A %%writefile cell writes a script that runs in a process of its own: its imports
        # are that script's, and it prepares TensorFlow itself.
        scripts = [c for c in code[1:] if c.source.startswith("%%writefile")]
        later = [c for c in code[1:] if "import tensorflow" in c.source and c not in scripts]
        assert not later, f"{path.name}: import TensorFlow in the setup cell only"
        for script in scripts:
            text = script.source
            if "import tensorflow" in text:
                assert "prepare_tensorflow(" in text, f"{path.name}: {text[:40]}"
                first = text.index("prepare_tensorflow(")
                assert first < text.index("import tensorflow"), f"{path.name}: {text[:40]}"


def test_ends_with_exercises_key_points_solutions_and_next_link(notebook):
    path, nb = notebook
    order = [heading_index(nb, t) for t in ("Exercises", "Key points", "Solutions")]
    assert None not in order and order == sorted(order), (
        f"{path.name}: needs 'Exercises', then 'Key points', then 'Solutions'"
    )
    later = [c for c in nb.cells[order[2] + 1 :] if re.search(r"^## ", c.source, re.M)]
    assert not later, f"{path.name}: 'Solutions' must be the last section"
    index = NOTEBOOKS.index(path)
    tail = nb.cells[-1].source
    if index + 1 < len(NOTEBOOKS):
        assert NOTEBOOKS[index + 1].name in tail, (
            f"{path.name}: last cell must link to {NOTEBOOKS[index + 1].name}"
        )
    else:
        assert "README.md" in tail, f"{path.name}: last cell must link back to the README"


EXERCISE_TAGS = {"check", "solution", "solution-check"}


def test_every_exercise_is_a_stub_and_its_check_then_a_solution_and_the_check_again(notebook):
    """CONTRIBUTING: under Exercises a stub (untagged) and its check (tags check and
    raises-exception), which defines check_exercise_N() and calls it; under Solutions the
    solution (tag solution) and a cell calling check_exercise_N() again (tag solution-check).
    No cell of an exercise anywhere else: solutions live only under Solutions."""
    path, nb = notebook
    try:
        listed = classroom.exercises(nb)
    except ValueError as error:
        pytest.fail(f"{path.name}: {error}")
    assert len(listed) >= 2, f"{path.name}: needs at least two exercises"
    placed = set()
    for exercise in listed:
        n, check = exercise.number, nb.cells[exercise.check].source
        assert f"def check_exercise_{n}():" in check, (
            f"{path.name}: the check of exercise {n} must define check_exercise_{n}()"
        )
        assert check.rstrip().endswith(f"\ncheck_exercise_{n}()"), (
            f"{path.name}: the check of exercise {n} must end by calling check_exercise_{n}()"
        )
        assert f"Exercise {n} is not solved yet" in check, (
            f"{path.name}: the check of exercise {n} must fail with "
            f"'Exercise {n} is not solved yet: ...'"
        )
        placed |= {exercise.check, exercise.solution, exercise.solution_check}
    elsewhere = [i for i, c in enumerate(nb.cells) if EXERCISE_TAGS & set(tags(c))]
    assert sorted(placed) == elsewhere, (
        f"{path.name}: cells {sorted(set(elsewhere) - placed)} are tagged check, solution or "
        "solution-check outside the exercise layout"
    )


def test_stored_outputs_show_each_exercise_unsolved_then_solved(notebook):
    """From one top-to-bottom run with the stubs in place: each check right after a stub
    shows 'Exercise N is not solved yet', and each solution-check passes (no error)."""
    path, nb = notebook
    for exercise in classroom.exercises(nb):
        n = exercise.number
        errors = [o for o in nb.cells[exercise.check].outputs if o.output_type == "error"]
        assert [(o.ename, o.evalue.split(":")[0]) for o in errors] == [
            ("AssertionError", f"Exercise {n} is not solved yet")
        ], f"{path.name}: the stored check of exercise {n} must show it unsolved: make notebooks"
        again = nb.cells[exercise.solution_check].outputs
        assert again and not [o for o in again if o.output_type == "error"], (
            f"{path.name}: the stored solution-check of exercise {n} must pass: make notebooks"
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


MAX_CELLS = 80


def too_many_cells(nb) -> str | None:
    """Why a notebook holds more than one lesson by its cell count, or None."""
    if len(nb.cells) > MAX_CELLS:
        return f"{len(nb.cells)} cells, at most {MAX_CELLS} fit one lesson: split it in two"
    return None


def test_cell_limit_counts_every_cell():
    def nb(markdown, code):
        cells = [nbformat.v4.new_markdown_cell("word") for _ in range(markdown)]
        cells += [nbformat.v4.new_code_cell("1") for _ in range(code)]
        return nbformat.v4.new_notebook(cells=cells)

    assert too_many_cells(nb(40, 40)) is None
    assert too_many_cells(nb(41, 40)) == "81 cells, at most 80 fit one lesson: split it in two"
    assert too_many_cells(nb(0, 81)) is not None


def test_cells_fit_one_lesson(notebook):
    path, nb = notebook
    problem = too_many_cells(nb)
    assert problem is None, f"{path.name}: {problem}"


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


REASON = "nbval-ignore-output-reason"


def test_every_cell_whose_output_is_not_compared_says_why_in_its_metadata(notebook):
    """A cell tagged nbval-ignore-output (timings, memory) gives the reason in its metadata,
    under "nbval-ignore-output-reason", where maintainers look and learners do not."""
    path, nb = notebook
    for number, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and "nbval-ignore-output" in tags(cell):
            reason = cell.metadata.get(REASON)
            assert isinstance(reason, str) and reason.strip(), (
                f"{path.name} cell {number}: say why the output is not compared, in the cell "
                f"metadata {REASON!r}"
            )


# Words for maintainers, not learners: lint markers, nbval reasons, the machines the
# notebooks were run on.
MAINTAINER_WORDS = re.compile(
    r"# noqa|# Not compared|\bCI\b|installed here|busy cores|last notebook for now"
)


def test_learners_read_no_maintainer_markers(notebook):
    path, nb = notebook
    found = [
        (number, match[0])
        for number, cell in enumerate(nb.cells)
        for match in MAINTAINER_WORDS.finditer(cell.source)
    ]
    assert not found, f"{path.name}: (cell, words for maintainers) {found}"
