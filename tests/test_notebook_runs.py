"""Each notebook run once more, as the student copy `make student` writes.

One execution per notebook proves two things:

* the exercise checks are real: a copy without solutions runs top to bottom and
  fails only in its check cells, each with its own exercise's message;
* the figures are what the code draws today: nbval compares every text output but
  skips images, so here every PNG output of a cell not tagged `nbval-ignore-output`
  (timing plots) must decode to the same pixels as the stored one. The package
  versions are locked (requirements.lock), so rendering is exact; a figure whose
  plotted values changed without `make notebooks` fails.
"""

import io
import sys
from base64 import b64decode
from functools import cache
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import classroom  # noqa: E402  (a script, not a package)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
IDS = [p.stem for p in NOTEBOOKS]


def tags(cell):
    return cell.get("metadata", {}).get("tags", [])


@cache
def executed_student_copy(path: Path, folder: Path):
    """The student copy of ``path``, executed in ``folder`` (once per test session and worker)."""
    nb = classroom.student_copy(path)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute()
    return nb


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("runs")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_student_copy_has_no_solutions_and_fails_only_in_checks(path, run_folder):
    original = nbformat.read(path, as_version=4)
    solutions = [c.source for c in original.cells if "solution" in tags(c)]
    student = classroom.student_copy(path)
    assert not [c for c in student.cells if "solution" in tags(c)]
    sources = [c.source for c in student.cells]
    assert not [s for s in solutions if s in sources], "solution code left in the student copy"
    checks = [c for c in student.cells if "check" in tags(c)]
    assert len(checks) == len(solutions) >= 2
    assert all(c.outputs == [] for c in checks), "check outputs must be cleared"

    executed = executed_student_copy(path, run_folder)
    failures = [
        (tags(cell), output.ename, output.evalue)
        for cell in executed.cells
        for output in cell.get("outputs", [])
        if output.output_type == "error" and "raises-exception" not in tags(cell)
    ]
    expected = [
        (["check"], "AssertionError", f"Exercise {n} is not solved yet")
        for n in range(1, len(checks) + 1)
    ]
    assert [(t, name, value.split(":")[0]) for t, name, value in failures] == expected, failures


def pixels(output) -> np.ndarray:
    return np.asarray(
        Image.open(io.BytesIO(b64decode(output["data"]["image/png"]))).convert("RGBA")
    )


def figure_problems(stored, executed, name: str) -> tuple[int, list[str]]:
    """Compare the PNG outputs of two runs of the same cells; return (figures compared, problems)."""
    compared, problems = 0, []
    for number, (before, after) in enumerate(
        zip(stored.cells, executed.cells, strict=True), start=1
    ):
        if before.cell_type != "code" or "nbval-ignore-output" in tags(before):
            continue
        old = [o for o in before.outputs if "image/png" in o.get("data", {})]
        new = [o for o in after.outputs if "image/png" in o.get("data", {})]
        if len(old) != len(new):
            problems.append(f"{name} cell {number}: {len(old)} figures stored, {len(new)} drawn")
            continue
        for figure, (a, b) in enumerate(
            zip(map(pixels, old), map(pixels, new), strict=True), start=1
        ):
            where = f"{name} cell {number} figure {figure}"
            compared += 1
            if a.shape != b.shape:
                problems.append(f"{where}: size {a.shape} stored, {b.shape} drawn")
            elif differ := int(np.count_nonzero(a != b)):
                problems.append(f"{where}: {differ} pixel values differ from the stored figure")
    return compared, problems


def png_outputs(nb, ignored: bool) -> int:
    return sum(
        "image/png" in o.get("data", {})
        for c in nb.cells
        if c.cell_type == "code" and ("nbval-ignore-output" in tags(c)) == ignored
        for o in c.outputs
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_figures_are_what_the_code_draws_today(path, run_folder):
    stored = classroom.student_copy(path)  # the same cells, with the outputs as committed
    compared, problems = figure_problems(stored, executed_student_copy(path, run_folder), path.name)
    assert not problems, f"{problems}: run make notebooks"
    assert compared == png_outputs(stored, ignored=False)


def test_a_changed_figure_is_noticed(tmp_path):
    """The check can fail: draw notebook 01's first figure on another background."""
    path = NOTEBOOKS[0]
    stored = classroom.student_copy(path)
    changed = classroom.student_copy(path)
    first = next(
        c
        for c in changed.cells
        if c.cell_type == "code" and any("image/png" in o.get("data", {}) for o in c.outputs)
    )
    first.source = (
        "plt.rcParams['axes.facecolor'] = plt.rcParams['figure.facecolor'] = '#fff8e7'\n"
        + first.source
    )
    NotebookClient(
        changed,
        timeout=600,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    compared, problems = figure_problems(stored, changed, path.name)
    assert compared >= 1 and len(problems) >= 1 and "pixel values differ" in problems[0]
