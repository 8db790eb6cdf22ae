"""The helper library stays used, lazy and true to its notebooks: the design card's "small
helper module", judged by what it holds rather than by a line count.

A notebook teaches; ``helpers`` remembers only what a notebook has shown. These checks keep it
that way, over every file under ``helpers/`` (sub-folders too, the sample data aside):

- scope, measured directly: every module, every public name (re-exports too) and every public
  parameter is used by a notebook or the command line, or stands in :data:`KEPT_UNUSED` with
  its reason;
- every name taken from a helpers module exists there; no module imports TensorFlow when
  imported; no underscored name crosses a module line; public functions annotate arguments;
- docstrings stay true: a notebook a docstring names uses that helper, and a section it cites
  ``(notebook 02, "Make it sturdy")`` is a heading of that notebook.

tests/test_helpers_structure.py checks the structure: the saved code is the shown code, local
limits (complexity, module length, tuple assignments), the layers, and the total as an alarm.
Each checker is a function of sources, tried on planted violations below its test.
"""

import ast
import functools
import importlib
import io
import json
import re
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPERS = ROOT / "helpers"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))


def helper_files(folder: Path = HELPERS) -> list[Path]:
    """Every Python file under ``folder``, in sub-folders too, the sample data aside."""
    return sorted(
        path for path in folder.rglob("*.py") if "sample_data" not in path.relative_to(folder).parts
    )


def module_name(path: Path, folder: Path = HELPERS) -> str:
    """``records`` for helpers/records.py, ``sub.mod`` for helpers/sub/mod.py, ``__init__`` for
    the package itself and ``sub`` for helpers/sub/__init__.py."""
    parts = path.relative_to(folder).with_suffix("").parts
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


HELPER_FILES = helper_files()
MODULES = [path for path in HELPER_FILES if path.name != "__main__.py"]
MODULE_NAMES = {module_name(path) for path in HELPER_FILES}
# An alarm on the number of public names, re-exports counted: each must also be used.
MAX_PUBLIC_NAMES = 80


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_private_module(module: str) -> bool:
    """``_framing``, ``sub._x``, and the package's ``__init__`` (every import runs it)."""
    return any(part.startswith("_") for part in module.split("."))


def public_names(path: Path) -> list[str]:
    """Module-level functions, classes and assignments whose names do not start with '_'."""
    if is_private_module(module_name(path)):
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


def reexported_names(source: str) -> list[str]:
    """Names a module imports to hand on (``# noqa: F401`` on the import): part of its API."""
    lines, found = source.splitlines(), []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                marked = {lines[alias.lineno - 1], lines[node.end_lineno - 1]}
                if any("noqa: F401" in line for line in marked):
                    found.append(alias.asname or alias.name)
    return found


def exported_names(path: Path) -> list[str]:
    """A public module's public names, its re-exports included (a notebook calls them)."""
    if is_private_module(module_name(path)):
        return []
    return public_names(path) + reexported_names(path.read_text())


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
                uses.setdefault(module, set()).update(a.name for a in node.names)
            elif package == "helpers":
                for alias in node.names:
                    uses.setdefault(alias.name, set())
                    modules[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                package, _, module = alias.name.partition(".")
                if package == "helpers" and module:
                    uses.setdefault(module, set())
                    if alias.asname:
                        modules[alias.asname] = module
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in modules:
                uses[modules[node.value.id]].add(node.attr)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
            if isinstance(node.value.value, ast.Name) and node.value.value.id == "helpers":
                uses.setdefault(node.value.attr, set()).add(node.attr)
    return uses


@functools.cache
def user_sources() -> dict[str, str]:
    """Who uses the helpers: each notebook, the command line and every helpers module."""
    found = {path.name: notebook_code(path) for path in NOTEBOOKS}
    found["the command line"] = (HELPERS / "cli.py").read_text()
    found["python -m helpers"] = (HELPERS / "__main__.py").read_text()
    for path in MODULES:
        if module_name(path) != "cli":
            found[f"helpers.{module_name(path)}"] = path.read_text()
    return found


@functools.cache
def users() -> dict[str, dict[str, set[str]]]:
    return {user: helper_uses(source) for user, source in user_sources().items()}


def users_of(module: str) -> list[str]:
    """The users that count for ``module``: notebooks and the command line; for a private
    module (``_checks``) the helpers modules, for ``cli`` ``python -m helpers``."""
    if is_private_module(module):
        return [user for user in user_sources() if user.startswith("helpers.")]
    if module == "cli":
        return ["python -m helpers"]
    return [
        user for user in user_sources() if user.endswith(".ipynb") or user == "the command line"
    ]


def outside_users(module: str) -> dict[str, dict[str, set[str]]]:
    return {user: users()[user] for user in users_of(module)}


def formatted_lines(path: Path) -> int:
    """How many lines ``ruff format`` (the project's settings) makes of ``path``."""
    ruff = [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(path), "-"]
    done = subprocess.run(ruff, input=path.read_text(), capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return len(done.stdout.splitlines())


# --- Scope, measured directly: every name and parameter is used, or says why not -------------

#: Public names (``module.name``, ``module.Class.method``) and parameters (``module.f(p)``,
#: ``module.Class(p)`` for ``__init__``) that no notebook and not the command line uses, each
#: with its reason in one line. An entry that is used, or gone, fails: the list stays true.
KEPT_UNUSED = {
    "index.RecordView(progress)": "opening unindexed shards walks them all: long work shows a bar",
    "cli.main(argv)": "the tests and an embedding program run the command line in-process",
    "beam.convert_with_beam(timeout)": "a stuck Beam runner must not hang its caller for ever",
    "notebook.work_dir(root)": "the tests make work folders under pytest's tmp_path",
    "pipeline.voc_batches(encoding)": "reads convert-voc --encoding encoded shards (README)",
    "pipeline.voc_batches(compression)": "reads convert-voc --compression shards (README)",
    "pipeline.voc_batches(drop_remainder)": "static batch shapes, as Keras on a TPU or XLA want",
    "sequences.write_day(overwrite)": "a user's existing files are replaced only when asked",
    "records.iter_records(max_record_bytes)": "the memory bound a file's length field must not pass",
    "voc_records.split_order(task)": "convert-voc --task reaches it through convert_split and beam",
}


@dataclass(frozen=True)
class Parameter:
    """One parameter of a public callable, as a call reaches it."""

    name: str
    position: int | None  # among the positional arguments; None: keyword-only, *args, **kwargs
    kind: str  # "plain" (by position or keyword), "positional" only, "keyword" only, "*", "**"
    required: bool


@dataclass(frozen=True)
class Api:
    module: str  # where it is defined
    kind: str  # "function", "class" (the parameters of its __init__) or "method"
    parameters: tuple[Parameter, ...] = ()


def signature(function: ast.FunctionDef, method: bool) -> tuple[Parameter, ...]:
    """The parameters of ``function`` a caller passes (a method's ``self`` or ``cls`` aside);
    underscored ones are private."""
    arguments = function.args
    positional = arguments.posonlyargs + arguments.args
    first_default = len(positional) - len(arguments.defaults)
    only = len(arguments.posonlyargs)
    found = [
        Parameter(a.arg, k, "positional" if k < only else "plain", k < first_default)
        for k, a in enumerate(positional)
    ]
    static = any(ast.unparse(d) == "staticmethod" for d in function.decorator_list)
    if method and not static:
        found = [Parameter(p.name, p.position - 1, p.kind, p.required) for p in found[1:]]
    defaults = arguments.kw_defaults
    found += [
        Parameter(a.arg, None, "keyword", d is None)
        for a, d in zip(arguments.kwonlyargs, defaults, strict=True)
    ]
    if arguments.vararg:
        found.append(Parameter(arguments.vararg.arg, None, "*", False))
    if arguments.kwarg:
        found.append(Parameter(arguments.kwarg.arg, None, "**", False))
    return tuple(p for p in found if not p.name.startswith("_"))


def api_of(module: str, source: str) -> dict[str, Api]:
    """The public functions and classes of ``module`` (a class's parameters: its ``__init__``'s)
    and the public methods and properties of its public classes, by entry (``index.RecordView``,
    ``index.RecordView.close``); dunder methods are reached by syntax, not by name."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and not is_private(node.name):
            found[f"{module}.{node.name}"] = Api(module, "function", signature(node, method=False))
        elif isinstance(node, ast.ClassDef) and not is_private(node.name):
            methods = [item for item in node.body if isinstance(item, ast.FunctionDef)]
            init = [signature(m, method=True) for m in methods if m.name == "__init__"]
            found[f"{module}.{node.name}"] = Api(module, "class", init[0] if init else ())
            for item in methods:
                if not item.name.startswith("_"):
                    entry = f"{module}.{node.name}.{item.name}"
                    found[entry] = Api(module, "method", signature(item, method=True))
    return found


def imported_entries(module: str, source: str, modules: set[str]) -> dict[str, str]:
    """``{"records.check_header": "_framing.check_header"}``: what a module's top-level
    ``from helpers.X import name`` makes of ``module.name``."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            package, _, source_module = node.module.partition(".")
            if package == "helpers" and source_module in modules:
                for alias in node.names:
                    local = alias.asname or alias.name
                    found[f"{module}.{local}"] = f"{source_module}.{alias.name}"
    return found


def canonical(entry: str, aliases: dict[str, str]) -> str:
    """The entry where it is defined: ``records.check_header`` is ``_framing.check_header``."""
    seen = set()
    while entry in aliases and entry not in seen:
        seen.add(entry)
        entry = aliases[entry]
    return entry


def bindings(tree: ast.Module, modules: set[str], own: str | None) -> dict[str, set[str]]:
    """What each local name stands for: ``module:M``, ``package`` (``helpers``), an entry
    (``index.RecordView``) or what calling it returns (``index.RecordView()``), from imports
    (lazy ones too), ``own`` module's definitions, assignments (``convert =
    voc_records.convert_split``, ``view = RecordView(files)``) and ``with ... as``. A name
    assigned something else stands for ``other``: none of ours."""
    bound: dict[str, set[str]] = {}

    def bind(name: str, target: str) -> None:
        bound.setdefault(name, set()).add(target)

    if own is not None:
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                bind(node.name, f"{own}.{node.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            package, _, module = node.module.partition(".")
            for alias in node.names if package == "helpers" else []:
                name = f"{module}.{alias.name}" if module else alias.name
                target = f"module:{name}" if name in modules else name
                bind(alias.asname or alias.name, target if module else f"module:{name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                package, _, module = alias.name.partition(".")
                if package == "helpers" and alias.asname:
                    bind(alias.asname, f"module:{module}" if module else "package")
                elif package == "helpers":
                    bind("helpers", "package")
    assigned = [
        (target.id, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    ]
    assigned += [
        (item.optional_vars.id, item.context_expr)
        for node in ast.walk(tree)
        if isinstance(node, (ast.With, ast.AsyncWith))
        for item in node.items
        if isinstance(item.optional_vars, ast.Name)
    ]
    for _ in range(2):  # an alias of an alias
        for name, value in assigned:
            for target in resolve(value, bound, modules, {}) or {"other"}:
                bind(name, target)
    return bound


def is_entry(target: str) -> bool:
    """Whether a :func:`resolve` result names a helper (not a module, an instance, none)."""
    return not target.startswith(("module:", "package", "other")) and not target.endswith("()")


def resolve(node: ast.expr, bound: dict, modules: set[str], methods: dict) -> set[str]:
    """The modules, entries and results of calls an expression may stand for. An attribute of
    an object the test cannot trace (a parameter, a loop variable: ``view.close``) stands for
    every public method of that name."""
    if isinstance(node, ast.Name):
        return bound.get(node.id, set())
    if isinstance(node, ast.Call):
        return {f"{t}()" for t in resolve(node.func, bound, modules, methods) if is_entry(t)}
    if not isinstance(node, ast.Attribute):
        return set()
    bases, found = resolve(node.value, bound, modules, methods), set()
    for base in bases:
        if base == "package" or base.startswith("module:"):
            inner = node.attr if base == "package" else f"{base[7:]}.{node.attr}"
            found.add(f"module:{inner}" if inner in modules else inner)
        elif base != "other":  # a class, or what calling it made: its attribute
            found.add(f"{base.removesuffix('()')}.{node.attr}")
    return found if bases else set(methods.get(node.attr, ()))


def scope_strings(tree: ast.Module) -> dict[int, set[str]]:
    """For each call (by ``id``), the string constants of the function around it (or of the
    module): the keys a ``**mapping`` built there can hold."""
    found = {}

    def visit(scope: ast.AST) -> None:
        strings = {
            n.value
            for n in ast.walk(scope)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
        }
        stack = list(ast.iter_child_nodes(scope))
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(node)
                continue
            if isinstance(node, ast.Call):
                found[id(node)] = strings
            stack.extend(ast.iter_child_nodes(node))

    visit(tree)
    return found


def arguments_used(api: Api, call: ast.Call, strings: set[str]) -> set[str]:
    """The parameters of ``api`` that ``call`` passes: by position (``*args`` at position k:
    every one from k on), by keyword, or by a ``**mapping`` whose keys are strings of the
    calling function; extra ones reach ``*`` and ``**``."""
    params = api.parameters
    positional = sorted((p for p in params if p.position is not None), key=lambda p: p.position)
    stars = {p.kind: p.name for p in params if p.kind in ("*", "**")}
    by_name = {p.name: p for p in params if p.kind in ("plain", "keyword")}
    used = set()
    for k, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            used |= {p.name for p in positional[k:]} | {stars.get("*")}
            break
        used.add(positional[k].name if k < len(positional) else stars.get("*"))
    for keyword in call.keywords:
        if keyword.arg is None:
            used |= (strings & set(by_name)) | {stars.get("**")}
        else:
            used.add(keyword.arg if keyword.arg in by_name else stars.get("**"))
    return used - {None}


def api_uses(
    source: str,
    api: dict[str, Api],
    aliases: dict[str, str],
    modules: set[str],
    own: str | None = None,
) -> set[str]:
    """The entries of ``api`` that Python ``source`` uses: names (``records.iter_records``,
    ``index.RecordView.close``) and parameters (``records.iter_records(offsets)``), each as
    defined (:func:`canonical`). A function passed as a value, not called (``ds.map(f)``),
    uses its required positional parameters: its caller passes them."""
    tree = ast.parse(source)
    methods: dict[str, list[str]] = {}
    for entry, item in api.items():
        if item.kind == "method":
            methods.setdefault(entry.rsplit(".", 1)[1], []).append(entry)
    bound = bindings(tree, modules, own)
    strings = scope_strings(tree)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    called = {id(call.func) for call in calls}
    aliased = {
        id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign) and len(n.targets) == 1
    }
    used = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
            continue
        found = resolve(node, bound, modules, methods)
        entries = {canonical(e, aliases) for e in found if is_entry(e)}
        used |= entries
        if id(node) not in called and id(node) not in aliased:
            for entry in entries:
                if entry in api and api[entry].kind == "function":
                    params = api[entry].parameters
                    used |= {
                        f"{entry}({p.name})"
                        for p in params
                        if p.required and p.position is not None
                    }
    for call in calls:
        for found in filter(is_entry, resolve(call.func, bound, modules, methods)):
            entry = canonical(found, aliases)
            if entry in api:
                passed = arguments_used(api[entry], call, strings.get(id(call), set()))
                used |= {f"{entry}({name})" for name in passed}
    return used


@functools.cache
def helpers_api() -> tuple[dict[str, Api], dict[str, str]]:
    """The public callables of every helpers module, and what each module's imports alias."""
    api, aliases = {}, {}
    for path in HELPER_FILES:
        module, source = module_name(path), path.read_text()
        api |= api_of(module, source)
        aliases |= imported_entries(module, source, MODULE_NAMES)
    return api, aliases


@functools.cache
def used_entries() -> dict[str, set[str]]:
    """What each user uses of :func:`helpers_api` (a helpers module reaches its own names)."""
    api, aliases = helpers_api()
    own = {f"helpers.{m}": m for m in MODULE_NAMES} | {"the command line": "cli"}
    return {
        user: api_uses(source, api, aliases, MODULE_NAMES, own.get(user))
        for user, source in user_sources().items()
    }


def scope_entries() -> dict[str, list[str]]:
    """Every public method and parameter the scope check holds, each with the users that count
    for it: those of the module that defines it and of each module that re-exports it."""
    api, aliases = helpers_api()
    exposing: dict[str, set[str]] = {}
    for path in MODULES:
        for name in reexported_names(path.read_text()):
            entry = canonical(f"{module_name(path)}.{name}", aliases)
            exposing.setdefault(entry, set()).add(module_name(path))
    found = {}
    for entry, item in api.items():
        counted = sorted(
            {u for m in {item.module} | exposing.get(entry, set()) for u in users_of(m)}
        )
        if item.kind == "method":
            found[entry] = counted
        for parameter in item.parameters:
            found[f"{entry}({parameter.name})"] = counted
    return found


def unused_names() -> list[str]:
    """``module.name`` of every exported name (re-exports too) no user of its module takes."""
    return [
        f"{module_name(path)}.{name}"
        for path in MODULES
        for name in exported_names(path)
        if not any(
            name in uses.get(module_name(path), ())
            for uses in outside_users(module_name(path)).values()
        )
    ]


def unused_entries() -> list[str]:
    """Every public method and parameter that none of its users passes or calls."""
    used = used_entries()
    return [
        entry
        for entry, counted in scope_entries().items()
        if not any(entry in used[user] for user in counted)
    ]


def test_every_module_is_used_by_a_notebook_or_the_command_line():
    """Every module, also one that no notebook imports (``beam``: the CLI's ``--engine beam``)."""
    unused = [
        f"helpers.{module_name(path)}"
        for path in MODULES
        if module_name(path) != "__init__"  # the package itself: every import runs it
        if not any(module_name(path) in uses for uses in outside_users(module_name(path)).values())
    ]
    assert not unused, f"imported by no notebook and not by the command line: {unused}"


def test_every_public_name_is_used_by_a_notebook_or_the_command_line():
    """Re-exports count (``records.check_header``): a notebook calls them from that module."""
    unused = [name for name in unused_names() if name not in KEPT_UNUSED]
    assert not unused, f"public but used by no notebook and not by the CLI: {unused}"


def test_every_public_parameter_and_method_is_used_by_a_notebook_or_the_command_line():
    """By keyword or by position (the k-th positional argument uses the k-th parameter), of
    functions, of classes (their ``__init__``) and of public classes' public methods."""
    unused = [entry for entry in unused_entries() if entry not in KEPT_UNUSED]
    assert not unused, (
        f"public but passed or called by no notebook and not by the CLI: {unused}; "
        "use it in the notebook that teaches it, remove it, or give KEPT_UNUSED its reason"
    )


def test_what_is_kept_unused_is_there_and_unused():
    """An entry of :data:`KEPT_UNUSED` that a notebook now uses, or that is gone, goes."""
    known = set(scope_entries()) | {
        f"{module_name(path)}.{name}" for path in MODULES for name in exported_names(path)
    }
    unused = set(unused_names()) | set(unused_entries())
    stale = [entry for entry in KEPT_UNUSED if entry not in known or entry not in unused]
    assert not stale, f"KEPT_UNUSED lists what is used or does not exist: {stale}"
    assert all(reason.strip() and "\n" not in reason for reason in KEPT_UNUSED.values())


PLANTED_HELPER = """
def write(path, payloads, compression=None, *, overwrite=False, verbose=False): ...
def walk(path, step=1): ...
class View:
    def __init__(self, paths, progress=False): ...
    def close(self): ...
    def spare(self): ...
    @property
    def nbytes(self): ...
"""


def planted_uses(user: str) -> set[str]:
    api = api_of("m", PLANTED_HELPER)
    return api_uses(user, api, {"r.write": "m.write"}, {"m", "r"})


def test_the_scope_check_sees_positions_keywords_and_methods():
    uses = planted_uses(
        "from helpers import m\nfrom helpers.m import View as V\n"
        "m.write('a', [], 'GZIP')\nview = V(['a'], progress=True)\nview.close()\n"
        "with V('b') as other:\n    other.nbytes\n"
    )
    assert {"m.write(path)", "m.write(payloads)", "m.write(compression)"} <= uses
    assert {"m.View(paths)", "m.View(progress)", "m.View.close", "m.View.nbytes"} <= uses
    assert not {"m.write(overwrite)", "m.write(verbose)", "m.View.spare", "m.walk"} & uses


def test_the_scope_check_matches_a_method_by_name_only_where_it_cannot_trace_the_object():
    traced = "from helpers.m import View\nwriter = open('x')\nwriter.spare()\nView('a').close()\n"
    assert "m.View.spare" not in planted_uses(traced)
    assert "m.View.close" in planted_uses(traced)
    assert "m.View.spare" in planted_uses("def tidy(view):\n    view.spare()\n")


def test_the_scope_check_follows_aliases_reexports_and_mappings():
    uses = planted_uses(
        "import helpers.r as r\nwrite = r.write\n"
        "def go():\n    options = {'overwrite': True}\n    write(*['a', []], **options)\n"
    )
    assert {"m.write(path)", "m.write(payloads)", "m.write(compression)"} <= uses
    assert "m.write(overwrite)" in uses and "m.write(verbose)" not in uses


def test_the_scope_check_counts_a_function_passed_as_a_value_with_its_required_arguments():
    uses = planted_uses("from helpers.m import walk\nlist(map(walk, ['a']))\n")
    assert "m.walk(path)" in uses and "m.walk(step)" not in uses


def test_the_scope_check_counts_reexports_as_public_names():
    source = "from helpers._framing import check_header, mask  # noqa: F401\nfrom os import path\n"
    assert reexported_names(source) == ["check_header", "mask"]
    assert imported_entries("records", source, {"_framing"}) == {
        "records.check_header": "_framing.check_header",
        "records.mask": "_framing.mask",
    }


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


def test_public_names_stay_few():
    """An alarm, not a target: each name must also be used (or its reason written down)."""
    names = {module_name(p): exported_names(p) for p in MODULES}
    total = sum(len(n) for n in names.values())
    assert total <= MAX_PUBLIC_NAMES, f"{total} public names: {names}"


@pytest.mark.parametrize("module", sorted(MODULE_NAMES - {"__main__"}))
def test_importing_a_module_imports_no_tensorflow(module):
    target = "helpers" if module == "__init__" else f"helpers.{module}"
    code = f"import sys, {target}; print('tensorflow' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "False\n", f"importing {target} imports TensorFlow"


# --- Internal means internal: no underscored name crosses a module line -----------------------

PROJECT_FOLDERS = ("helpers", "tests", "scripts", "benchmarks", "docs")


def project_sources() -> dict[str, str]:
    """Every Python source of the repository and the notebooks' code, by a readable name."""
    files = [ROOT / "conftest.py"] + sorted(
        path for folder in PROJECT_FOLDERS for path in (ROOT / folder).rglob("*.py")
    )
    found = {str(p.relative_to(ROOT)): p.read_text() for p in files if "sample_data" not in p.parts}
    for path in NOTEBOOKS:
        found[f"notebooks/{path.name}"] = notebook_code(path)
    return found


def project_module_names() -> set[str]:
    """Top-level names under which the project's own modules are imported."""
    names = {"helpers", "benchmarks"}
    for folder in ("tests", "scripts"):  # imported by file name (tests/ is put on sys.path)
        names |= {path.stem for path in (ROOT / folder).glob("*.py")}
    return names


def private_crossings(source: str, ours: set[str]) -> list[str]:
    """``from m import _x``, ``m._x`` and ``getattr(m, "_x")`` where ``m`` is one of ours."""
    tree, modules, found = ast.parse(source), set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in ours:
                folder = ROOT.joinpath(*node.module.split("."))
                for alias in node.names:
                    if (folder / f"{alias.name}.py").exists():  # a module (``_common`` too)
                        modules.add(alias.asname or alias.name)
                    elif is_private(alias.name):
                        found.append(f"from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ours:
                    modules.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules:
                found.append(f"{ast.unparse(node)} (line {node.lineno})")
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr":
            target, name = (node.args + [None, None])[:2]
            named = isinstance(name, ast.Constant) and isinstance(name.value, str)
            if named and is_private(name.value) and ast.unparse(target).split(".")[0] in modules:
                found.append(f"{ast.unparse(node)} (line {node.lineno})")
    return found


def test_no_underscored_name_crosses_a_module_line():
    """Package-internal code lives in underscored modules (``helpers._framing``) whose names are
    public; a name with a leading underscore is private to its module, tests included."""
    ours = project_module_names()
    crossing = {
        name: found
        for name, source in project_sources().items()
        if (found := private_crossings(source, ours))
    }
    assert not crossing, f"underscored names used outside their module: {crossing}"


def test_the_crossing_check_sees_each_way_in():
    ours = {"helpers"}
    source = (
        "from helpers.records import _commit, write_records\n"
        "from helpers import records\nimport helpers.index as index\n"
        "records._mask(1)\nindex.RecordView._open\ngetattr(records, '_temp_name')\n"
        "from helpers._framing import check_header\nrecords.__name__\n"
    )
    found = private_crossings(source, ours)
    assert sorted(f.split(" (")[0] for f in found) == [
        "from helpers.records import _commit",
        "getattr(records, '_temp_name')",
        "index.RecordView._open",
        "records._mask",
    ]


# --- Docstrings that stay true ----------------------------------------------------------------

NOTEBOOK_MENTION = re.compile(
    r"\bnotebooks? (\d\d[a-z]?(?:(?:,? and |, )\d\d[a-z]?)*)\b", re.IGNORECASE
)


def docstrings(path: Path) -> list[tuple[str, str, str]]:
    """``(kind, name, docstring)`` of the module, its top-level functions and classes (a
    method counts as its class: a notebook that uses the class reaches it)."""
    tree = ast.parse(path.read_text())
    found = [("module", module_name(path), ast.get_docstring(tree) or "")]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            inner = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            texts = [ast.get_docstring(n) or "" for n in ast.walk(node) if isinstance(n, inner)]
            found.append(("name", node.name, "\n".join(t for t in texts if t)))
    return found


RUNS_THE_COMMAND_LINE = re.compile(r'python -m helpers|"-m", "helpers"')


def notebook_uses(notebook_number: str) -> list[dict[str, set[str]]]:
    """What notebook ``NN`` uses of helpers; one that runs ``python -m helpers`` also uses
    the command line and what it uses."""
    found = []
    for path in [p for p in NOTEBOOKS if p.name.startswith(f"{notebook_number}_")]:
        uses = {module: set(names) for module, names in users()[path.name].items()}
        if RUNS_THE_COMMAND_LINE.search(notebook_code(path)):
            for module, names in users()["the command line"].items():
                uses.setdefault(module, set()).update(names)
            uses.setdefault("cli", set()).add("main")
        found.append(uses)
    return found


def public_importers(internal: str) -> list[str]:
    """The public helpers modules that import the internal module ``internal``."""
    return [
        user.removeprefix("helpers.")
        for user, uses in users().items()
        if user.startswith("helpers.") and internal in uses
        if not is_private_module(user.removeprefix("helpers."))
    ]


def uses_helper(notebook: dict[str, set[str]], module: str, kind: str, name: str) -> bool:
    """Whether a notebook's uses reach ``module.name`` (``kind`` "module": the module itself)."""
    if is_private_module(module):  # internal: through a public module that imports it
        return any(importer in notebook for importer in public_importers(module))
    if kind == "module" or is_private(name):  # a private function: its module is used
        return module in notebook
    return name in notebook.get(module, ())


def test_every_notebook_a_docstring_names_uses_that_helper():
    """ "notebook 04" in ``index.build_index``'s docstring: notebook 04 uses ``index.build_index``
    (a module's docstring: uses the module; an internal module's: a module that imports it)."""
    wrong = []
    for path in HELPER_FILES:
        for kind, name, text in docstrings(path):
            numbers = {
                n
                for found in NOTEBOOK_MENTION.findall(text)
                for n in re.findall(r"\d\d[a-z]?", found)
            }
            for number in sorted(numbers):
                if not any(
                    uses_helper(u, module_name(path), kind, name) for u in notebook_uses(number)
                ):
                    wrong.append(
                        f"helpers/{path.relative_to(HELPERS)}: {name} names notebook {number}"
                    )
    assert not wrong, f"docstrings name notebooks that do not use the helper: {wrong}"


# A cited section: notebook NN, then "Section" (after a comma, "'s" or "section"), quoted
# "straight" or “curly”; the text may run over lines of a docstring.
CITATION = re.compile(
    r"\bnotebook (\d\d[a-z]?)(?:,|'s)?\s+(?:section\s+)?(?:\"([^\"]+)\"|“([^”]+)”)", re.IGNORECASE
)


def plain(text: str) -> str:
    """Text as compared: backticks and Markdown emphasis dropped, white space made single."""
    return " ".join(re.sub(r"[`*]", "", text).split())


def citations(source: str) -> list[tuple[int, str, str]]:
    """``(line, notebook number, section)`` of every section cited in the docstrings (of the
    module, of every class and function, nested ones too) and the comments of ``source``."""
    tree, texts = ast.parse(source), []
    for node in ast.walk(tree):
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(node, kinds) and ast.get_docstring(node, clean=False):
            texts.append((node.body[0].lineno, node.body[0].value.value))
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            texts.append((token.start[0], token.string))
    return [
        (line + text[: found.start()].count("\n"), found[1], plain(found[2] or found[3]))
        for line, text in texts
        for found in CITATION.finditer(text)
    ]


def headings(notebook: dict) -> set[str]:
    """The Markdown headings of a notebook, and each one's part before a colon ("Make it
    sturdy" of "Make it sturdy: shards, atomic files, deterministic bytes")."""
    found = set()
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if heading := re.match(r"#{1,6}\s+(.+?)\s*#*\s*$", line):
                    text = plain(heading[1])
                    found |= {text, text.split(":")[0].strip()}
    return found


def unresolved_citations(source: str, notebooks: dict[str, dict]) -> list[str]:
    """The citations of ``source`` that name no heading of their notebook (``{"02": json}``)."""
    return [
        f'line {line}: notebook {number}, "{section}"'
        + ("" if number in notebooks else f" (there is no notebook {number})")
        for line, number, section in citations(source)
        if section not in headings(notebooks.get(number, {"cells": []}))
    ]


def test_every_cited_section_is_a_heading_of_its_notebook():
    notebooks = {path.name.split("_")[0]: json.loads(path.read_text()) for path in NOTEBOOKS}
    wrong = [
        f"helpers/{path.relative_to(HELPERS)} {found}"
        for path in HELPER_FILES
        for found in unresolved_citations(path.read_text(), notebooks)
    ]
    assert not wrong, f"docstrings cite sections their notebook does not have: {wrong}"


def test_the_citation_check_reads_every_form_and_fails_on_a_wrong_one():
    notebook = {"cells": [{"cell_type": "markdown", "source": ["## Make it sturdy: shards\n"]}]}
    source = (
        '"""Write (notebook 02, "Make it\n    sturdy"), read (notebook 02, "Read it")."""\n'
        "def f():\n    '''See notebook 02's “Make it sturdy: shards”.'''\n"
        '# notebook 07, section "Make it sturdy"\n'
        '# notebook 02b, "Make it sturdy"\n'
    )
    assert [c[1:] for c in citations(source)] == [
        ("02", "Make it sturdy"),
        ("02", "Read it"),
        ("02", "Make it sturdy: shards"),
        ("07", "Make it sturdy"),
        ("02b", "Make it sturdy"),
    ]
    assert unresolved_citations(source, {"02": notebook}) == [
        'line 2: notebook 02, "Read it"',
        'line 5: notebook 07, "Make it sturdy" (there is no notebook 07)',
        'line 6: notebook 02b, "Make it sturdy" (there is no notebook 02b)',
    ]


# --- Typed public functions ----------------------------------------------------------------------


def untyped_arguments(path: Path) -> list[str]:
    """Non-underscored functions and methods (``__init__`` and the like too) with an argument
    that has no annotation (``self`` and ``cls`` aside). Ruff checks their return types."""
    tree, found = ast.parse(path.read_text()), []
    scopes = [(node, "") for node in tree.body]
    scopes += [
        (item, f"{node.name}.")
        for node in tree.body
        if isinstance(node, ast.ClassDef) and not is_private(node.name)
        for item in node.body
    ]
    for node, owner in scopes:
        if not isinstance(node, ast.FunctionDef) or is_private(node.name):
            continue
        arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        arguments += [a for a in (node.args.vararg, node.args.kwarg) if a]
        missing = [
            a.arg for a in arguments if a.annotation is None and a.arg not in ("self", "cls")
        ]
        if missing:
            found.append(
                f"helpers/{path.relative_to(HELPERS)}: {owner}{node.name}({', '.join(missing)})"
            )
    return found


def test_public_functions_annotate_every_argument():
    untyped = [found for path in HELPER_FILES for found in untyped_arguments(path)]
    assert not untyped, f"arguments without a type: {untyped}"
