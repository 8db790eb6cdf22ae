"""The helper library stays small, lazy and used: the design card's "small helper module".

A notebook teaches; ``helpers`` remembers only what a notebook has shown. These checks
keep it that way: a line budget, a budget of public names, every public name used by a
notebook or the command line, and no TensorFlow imported by importing any module.
"""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPERS = ROOT / "helpers"
MODULES = sorted(p for p in HELPERS.glob("*.py") if p.name != "__main__.py")
# Issue 10 set 2,500 lines for notebooks 01-07. Notebooks 08 (Beam) and 09 (detection boxes)
# each need a module the command line runs; they get about 250 lines each, and no more names.
MAX_LINES, MAX_PUBLIC_NAMES = 3000, 80


def public_names(path: Path) -> list[str]:
    """Module-level functions, classes and assignments whose names do not start with '_'."""
    if path.name.startswith("_"):
        return []
    names = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names.append(name.id)
    return [name for name in names if not name.startswith("_")]


def notebook_code() -> str:
    cells = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        notebook = json.loads(path.read_text())
        cells += ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    return "\n".join(cells)


def test_helpers_stay_within_the_line_budget():
    lines = {p.name: len(p.read_text().splitlines()) for p in HELPERS.glob("*.py")}
    assert sum(lines.values()) <= MAX_LINES, f"{sum(lines.values())} lines: {lines}"


def test_helpers_stay_within_the_public_name_budget():
    names = {p.stem: public_names(p) for p in MODULES}
    total = sum(len(n) for n in names.values())
    assert total <= MAX_PUBLIC_NAMES, f"{total} public names: {names}"


def test_every_public_name_is_used_by_a_notebook_or_the_command_line():
    used_by = notebook_code() + (HELPERS / "cli.py").read_text()
    unused = [
        f"{path.stem}.{name}"
        for path in MODULES
        if path.name != "cli.py"
        for name in public_names(path)
        if not re.search(rf"\b{re.escape(name)}\b", used_by)
    ]
    assert not unused, f"public but used by no notebook and not by the CLI: {unused}"


@pytest.mark.parametrize("module", [p.stem for p in MODULES], ids=[p.stem for p in MODULES])
def test_importing_a_module_imports_no_tensorflow(module):
    code = f"import sys, helpers.{module}; print('tensorflow' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "False\n", f"importing helpers.{module} imports TensorFlow"
