"""The generated parts of the documentation site (a Sphinx extension loaded by conf.py).

Nothing here is typed twice: the landing page takes its introduction and set-up commands
from README.md and its notebook table from the notebooks' H1 titles and first paragraphs;
the API page lists every public module of ``helpers``; the TensorFlow version comes from the
installed package. Notebook pages get links to download the notebook and its student copy.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ConfigError

import helpers

NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"


def jupyter_slug(title: str) -> str:
    """The anchor Jupyter gives a heading: spaces become hyphens, case is kept."""
    return title.strip().replace(" ", "-")


def tensorflow_version() -> str:
    """The installed TensorFlow's version (the CPU build or the full one)."""
    for distribution in ("tensorflow-cpu", "tensorflow"):
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    raise ConfigError("TensorFlow is not installed: the site says which version CI verified")


def verified_line() -> str:
    return f"Verified by CI with TensorFlow {tensorflow_version()}"


def readme_parts(readme: str) -> tuple[str, str]:
    """README's introduction (before its first section) and its Quick start section up to
    and including the first code block: what the suite is, and the two set-up commands."""
    intro = re.search(r"^# .*?\n(.*?)^## ", readme, re.S | re.M)
    setup = re.search(r"^## Quick start\n(.*?^```.*?^```\n)", readme, re.S | re.M)
    if not intro or not setup:
        raise ConfigError("README.md has no introduction or no '## Quick start' code block")
    return intro.group(1).strip(), setup.group(1).strip()


def title_and_summary(path: Path) -> tuple[str, str]:
    """A notebook's H1 title and the first paragraph after it (joined into one line)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    first = next(("".join(c["source"]) for c in cells if c["cell_type"] == "markdown"), "")
    found = re.match(r"\s*# (.+)\n+((?:.+\n?)+)", first)
    if not found:
        raise ConfigError(f"{path.name}: the first markdown cell has no H1 title and paragraph")
    return found.group(1).strip(), " ".join(found.group(2).split())


def notebook_table(srcdir: Path) -> str:
    """A MyST list-table of every notebook: number, linked title, first paragraph."""
    rows = ["* - \\#\n  - Notebook\n  - What it is about"]
    for path in sorted((srcdir / "notebooks").glob(NOTEBOOK_GLOB)):
        title, summary = title_and_summary(path)
        # Links in the paragraph are relative to the notebook: make them so from here.
        summary = re.sub(r"\]\(#", f"](notebooks/{path.name}#", summary)
        summary = re.sub(r"\]\((?![a-z]+:|/|notebooks/)", "](notebooks/", summary)
        link = f"[{title}](notebooks/{path.name})"
        rows.append(f"* - {path.name[:2]}\n  - {link}\n  - {summary}")
    if len(rows) == 1:
        raise ConfigError(f"no notebooks/{NOTEBOOK_GLOB} in {srcdir}")
    options = ":header-rows: 1\n:widths: 4 28 68\n:class: notebook-table"
    return "```{list-table}\n" + options + "\n\n" + "\n".join(rows) + "\n```"


def helper_modules() -> list[str]:
    """Every public module of the helpers package, in alphabetical order."""
    folder = Path(helpers.__file__).parent
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))


def api_overview() -> str:
    """The package docstring's introduction, then a table of the modules, each with the first
    sentence of its docstring (in reStructuredText, the docstrings' markup)."""
    intro = helpers.__doc__.split("Modules:")[0].strip()
    rows = ["   * - Module\n     - What it holds"]
    for module in helper_modules():
        doc = " ".join((importlib.import_module(f"helpers.{module}").__doc__ or "").split())
        if not doc:
            raise ConfigError(f"helpers/{module}.py has no module docstring")
        sentence = re.match(r"(.+?\.)(?:\s|$)", doc)
        summary = sentence.group(1) if sentence else doc
        rows.append(f"   * - :py:mod:`helpers.{module}`\n     - {summary}")
    table = "```{eval-rst}\n.. list-table::\n   :header-rows: 1\n   :widths: 25 75\n\n"
    return f"{intro}\n\n{table}" + "\n".join(rows) + "\n```"


def api_sections() -> str:
    """One section per helpers module, its public names documented from their docstrings."""
    sections = []
    for module in helper_modules():
        # eval-rst: autodoc's output is reStructuredText (MyST would read it as Markdown).
        sections.append(
            f"## `helpers.{module}`\n\n```{{eval-rst}}\n.. automodule:: helpers.{module}\n"
            "   :members:\n   :undoc-members:\n   :show-inheritance:\n```\n"
        )
    return "\n".join(sections)


def collapse_solutions(notebook_json: str) -> str:
    """Tag every solution cell ``hide-cell``: the page shows it folded, behind a button."""
    notebook = json.loads(notebook_json)
    for cell in notebook["cells"]:
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if "solution" in tags:
            tags.append("hide-cell")
    return json.dumps(notebook)


def fill_in(app: Sphinx, docname: str, source: list[str]) -> None:
    """Put the generated parts into the pages (Sphinx's source-read event). In notebooks,
    the last one's link back to the README leads to the landing page instead."""
    srcdir = Path(app.srcdir)
    if docname == "index":
        intro, setup = readme_parts((srcdir / "README.md").read_text(encoding="utf-8"))
        source[0] = (
            source[0]
            .replace("<!-- readme-intro -->", intro)
            .replace("<!-- readme-setup -->", setup)
            .replace("<!-- notebook-table -->", notebook_table(srcdir))
            .replace("<!-- verified -->", verified_line())
        )
    elif docname == "api":
        source[0] = (
            source[0]
            .replace("<!-- api-overview -->", api_overview())
            .replace("<!-- api-sections -->", api_sections())
        )
    elif docname.startswith("notebooks/"):
        source[0] = collapse_solutions(source[0].replace("](../README.md)", "](../index.md)"))


def add_notebook_box(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Under a notebook page's title: the CI fact and links to the two downloads."""
    if not docname.startswith("notebooks/"):
        return
    name = docname.split("/", 1)[1] + ".ipynb"
    html = (
        '<div class="notebook-box">'
        f'<p class="ci-verified">{verified_line()}: the outputs below are the ones stored in '
        "the notebook, which CI re-runs and compares cell by cell.</p>"
        '<p class="downloads">Download '
        f'<a class="download-notebook" href="{name}" download>the notebook</a> or '
        f'<a class="download-student" href="../student/{name}" download>the student copy</a> '
        "(the exercises without their solutions).</p></div>"
    )
    section = doctree.next_node(nodes.section)
    section.insert(1, nodes.raw("", html, format="html"))


def page_context(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    context["ci_verified"] = verified_line()
    context["notebook_page"] = pagename.startswith("notebooks/")


def setup(app: Sphinx) -> dict:
    app.connect("source-read", fill_in)
    app.connect("doctree-resolved", add_notebook_box)
    app.connect("html-page-context", page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
