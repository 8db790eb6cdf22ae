"""The helper library stays small, lazy and used: the design card's "small helper module".

A notebook teaches; ``helpers`` remembers only what a notebook has shown. These checks
keep it that way: a line budget, a budget of public names, every module and every public name
used by a notebook or the command line (matched by module, not by name alone), every name taken
from a module present in it, and no TensorFlow imported by importing any module.
"""

import ast
import functools
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPERS = ROOT / "helpers"
MODULES = sorted(p for p in HELPERS.glob("*.py") if p.name != "__main__.py")
# Lines as `ruff format` writes helpers/ (no `fmt:` markers allowed): new code pays for itself
# with structure, never with density (CONTRIBUTING.md, "Helpers", names what we do not write).
MAX_LINES, MAX_PUBLIC_NAMES = 2800, 80


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


def notebook_code(path: Path) -> str:
    """The code cells as Python: a ``%%writefile`` cell's file, other magics as IPython's calls."""
    from IPython.core.inputtransformer2 import TransformerManager

    notebook, python = json.loads(path.read_text()), TransformerManager().transform_cell
    sources = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    written = [s.partition("\n")[2] for s in sources if s.startswith("%%writefile")]
    return "\n".join([python(s) for s in sources] + written)


def helper_uses(source: str) -> dict[str, set[str]]:
    """The helpers modules that Python ``source`` imports, each with the names it takes from it.

    ``from helpers.M import a`` takes ``a`` from ``M``; after ``from helpers import M`` (or
    ``import helpers.M``) every ``M.x`` (``helpers.M.x``) takes ``x``. Matching by module and
    name, not by name alone: ``beam.convert_split`` is not ``voc_records.convert_split``.
    """
    tree = ast.parse(source)
    uses: dict[str, set[str]] = {}
    modules = {}  # local name -> helpers module, after `from helpers import M [as name]`
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            package, _, module = node.module.partition(".")
            if package == "helpers" and module:
                uses.setdefault(module.split(".")[0], set()).update(a.name for a in node.names)
            elif package == "helpers":
                for alias in node.names:
                    uses.setdefault(alias.name, set())
                    modules[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                package, _, module = alias.name.partition(".")
                if package == "helpers" and module:
                    uses.setdefault(module.split(".")[0], set())
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in modules:
                uses[modules[node.value.id]].add(node.attr)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
            if isinstance(node.value.value, ast.Name) and node.value.value.id == "helpers":
                uses.setdefault(node.value.attr, set()).add(node.attr)
    return uses


@functools.cache
def users() -> dict[str, dict[str, set[str]]]:
    """Who uses the helpers: each notebook, the command line and every helpers module."""
    found = {
        path.name: notebook_code(path) for path in sorted((ROOT / "notebooks").glob("*.ipynb"))
    }
    found["the command line"] = (HELPERS / "cli.py").read_text()
    found["python -m helpers"] = (HELPERS / "__main__.py").read_text()
    for path in MODULES:
        if path.name != "cli.py":
            found[f"helpers.{path.stem}"] = path.read_text()
    return {user: helper_uses(source) for user, source in found.items()}


def outside_users(module: str) -> dict[str, dict[str, set[str]]]:
    """The users that count for ``module``: notebooks and the command line; for a private
    module (``_checks``) the other helpers modules, for ``cli`` ``python -m helpers``."""
    if module.startswith("_"):
        return {user: uses for user, uses in users().items() if user.startswith("helpers.")}
    wanted = ("python -m helpers",) if module == "cli" else ("the command line",)
    return {u: uses for u, uses in users().items() if u.endswith(".ipynb") or u in wanted}


def formatted_lines(path: Path) -> int:
    """How many lines ``ruff format`` (the project's settings) makes of ``path``."""
    ruff = [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(path), "-"]
    done = subprocess.run(ruff, input=path.read_text(), capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return len(done.stdout.splitlines())


def test_helpers_carry_no_formatter_markers():
    """``# fmt: skip`` / ``off`` would let a line budget be met by cramming."""
    marked = [
        f"{path.name}:{number}"
        for path in sorted(HELPERS.glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "fmt:" in line
    ]
    assert not marked, f"formatter markers in helpers/: {marked}"


def test_helpers_stay_within_the_line_budget():
    lines = {p.name: formatted_lines(p) for p in sorted(HELPERS.glob("*.py"))}
    assert sum(lines.values()) <= MAX_LINES, f"{sum(lines.values())} lines: {lines}"


def test_helpers_stay_within_the_public_name_budget():
    names = {p.stem: public_names(p) for p in MODULES}
    total = sum(len(n) for n in names.values())
    assert total <= MAX_PUBLIC_NAMES, f"{total} public names: {names}"


def test_every_module_is_used_by_a_notebook_or_the_command_line():
    """Every module, also one that no notebook imports (``beam``: the CLI's ``--engine beam``)."""
    unused = [
        f"helpers.{path.stem}"
        for path in MODULES
        if path.name != "__init__.py"  # the package itself: every import runs it
        if not any(path.stem in uses for uses in outside_users(path.stem).values())
    ]
    assert not unused, f"imported by no notebook and not by the command line: {unused}"


def test_every_public_name_is_used_by_a_notebook_or_the_command_line():
    unused = [
        f"{path.stem}.{name}"
        for path in MODULES
        for name in public_names(path)
        if not any(name in uses.get(path.stem, ()) for uses in outside_users(path.stem).values())
    ]
    assert not unused, f"public but used by no notebook and not by the CLI: {unused}"


def test_every_name_taken_from_a_helpers_module_exists():
    """An attribute that a notebook, the CLI or another module takes from a module is there
    (``voc.load_pair`` in ``voc_records``): a renamed helper fails here, not in a lesson."""
    missing = [
        f"{user}: helpers.{module}.{name}"
        for user, uses in users().items()
        for module, names in uses.items()
        for name in sorted(names)
        if not hasattr(importlib.import_module(f"helpers.{module}"), name)
    ]
    assert not missing, f"taken from a module that has no such name: {missing}"


@pytest.mark.parametrize("module", [p.stem for p in MODULES], ids=[p.stem for p in MODULES])
def test_importing_a_module_imports_no_tensorflow(module):
    code = f"import sys, helpers.{module}; print('tensorflow' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "False\n", f"importing helpers.{module} imports TensorFlow"
