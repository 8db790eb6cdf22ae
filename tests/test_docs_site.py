"""The documentation site (`make docs`), opened in a real browser: the system's Chromium.

The site is built once for this module, by the README's `make docs` (into build/html),
served over HTTP on localhost, and every page is opened in headless Chromium driven by
Playwright: no console errors, every figure loads, every internal link and #anchor
resolves, the API page lists every public helper, search finds a helper by name. A
screenshot of every page goes to build/screenshots/ for review (whole pages too with
FULL_SCREENSHOTS=1). The last test breaks a
copy of the site (one figure deleted, one link and one anchor broken) and checks that the
same check functions report exactly that.

Chromium is the Debian package (`apt-get install chromium`); Playwright's own browser
downloads are not used. Without Chromium these tests fail and say how to install it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "build" / "screenshots"
# Whole-page screenshots too (.full.jpg), for a review of every page top to bottom: they
# take about as long as everything else here, so only when asked (FULL_SCREENSHOTS=1).
FULL_PAGES = os.environ.get("FULL_SCREENSHOTS") == "1"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
sys.path.insert(0, str(Path(__file__).parent))
from test_helpers_design import MODULES, public_names  # noqa: E402  (the same public names)

INSTALL_HINT = (
    "The documentation site is tested in Chromium, which is not installed (no `chromium` or "
    "`chromium-browser` on PATH). Install the Debian package: `sudo apt-get install chromium` "
    "(.ci/run does it when run as root), or point CHROMIUM at a Chromium or Chrome binary."
)


def chromium() -> str:
    """The system Chromium's path; fails (not skips) with how to install it."""
    candidates = [os.environ.get("CHROMIUM", "")] + ["chromium", "chromium-browser"]
    for candidate in filter(None, candidates):
        found = shutil.which(candidate)
        if found:
            return found
    pytest.fail(INSTALL_HINT, pytrace=False)


# ---------------------------------------------------------------- the check functions


@dataclass
class Page:
    """What one page showed in the browser."""

    path: str  # relative to the site, e.g. "notebooks/01_roundtrip_raw_bytes.html"
    title: str = ""
    ids: set[str] = field(default_factory=set)
    links: list[str] = field(default_factory=list)  # absolute URLs of every <a href>
    broken_images: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    prev: str | None = None
    next: str | None = None
    verified: list[str] = field(default_factory=list)
    text: str = ""
    code_cells: int = 0
    folded_solutions: int = 0
    wide_code: list[str] = field(default_factory=list)  # code cells that need a scroll bar


PAGE_FACTS = """() => ({
  title: document.title,
  ids: [...document.querySelectorAll("[id]")].map(e => e.id)
       .concat([...document.querySelectorAll("a[name]")].map(a => a.name)),
  links: [...document.querySelectorAll("a[href]")].map(a => a.href),
  brokenImages: [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))
                .map(i => i.getAttribute("src")),
  prev: document.querySelector("a.prev-page")?.getAttribute("href") ?? null,
  next: document.querySelector("a.next-page")?.getAttribute("href") ?? null,
  verified: [...document.querySelectorAll(".ci-verified")].map(e => e.textContent.trim()),
  text: document.querySelector("article")?.innerText ?? "",
  codeCells: document.querySelectorAll(".cell_input pre").length,
  foldedSolutions: document.querySelectorAll(".tag_solution details:not([open])").length,
  wideCode: [...document.querySelectorAll(".cell_input pre")]
            .filter(pre => pre.scrollWidth > pre.clientWidth).map(pre => pre.innerText),
})"""


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002  (the base class's name)
        pass


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        if not isinstance(sys.exception(), ConnectionError):  # the browser closed a page
            super().handle_error(request, client_address)


@contextmanager
def serve(folder: Path):
    """Serve ``folder`` over HTTP on localhost; yields the base URL (ending in '/')."""
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def site_pages(site: Path) -> list[str]:
    """Every HTML page of the site, relative to it."""
    pages = [p.relative_to(site).as_posix() for p in site.rglob("*.html")]
    return sorted(p for p in pages if not p.startswith(("_static/", "_sources/")))


@contextmanager
def tab(browser, base: str):
    """One browser tab for a run of visits, and the list its console errors go to. (A new tab
    for every page starts a renderer process every time: 2.5 times the CPU of reusing one.)"""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []

    def on_console(message):
        if message.type == "error":
            where = message.location.get("url", "").removeprefix(base)
            errors.append(f"{message.text} [{where}]")

    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(f"uncaught {error}"))
    try:
        yield page, errors
    finally:
        page.close()


def visit(reader, base: str, path: str, screenshot: Path | None = None) -> Page:
    """Open one page (path may carry a query) in ``reader`` (a :func:`tab`), wait for it to
    load, collect its facts."""
    page, errors = reader
    errors.clear()
    page.goto(base + path, wait_until="load")
    facts = page.evaluate(PAGE_FACTS)
    if screenshot is not None:  # what a reader sees first (and the whole page if asked)
        page.screenshot(path=f"{screenshot}.png")
        if FULL_PAGES:
            page.screenshot(path=f"{screenshot}.full.jpg", full_page=True, quality=80)
    return Page(
        path=path,
        title=facts["title"],
        ids=set(facts["ids"]),
        links=sorted(set(facts["links"])),
        broken_images=facts["brokenImages"],
        console_errors=list(errors),
        prev=facts["prev"],
        next=facts["next"],
        verified=facts["verified"],
        text=facts["text"],
        code_cells=facts["codeCells"],
        folded_solutions=facts["foldedSolutions"],
        wide_code=facts["wideCode"],
    )


def page_problems(page: Page) -> list[str]:
    """Console errors and figures that did not load, one line each."""
    return [f"{page.path}: console error: {e}" for e in page.console_errors] + [
        f"{page.path}: figure {src} did not load" for src in page.broken_images
    ]


def ids_in(pages: dict[str, Page], site: Path, target: str) -> set[str]:
    """The ids of an HTML page: as the browser saw them, or from its file if not opened."""
    if target in pages:
        return pages[target].ids
    if target.endswith(".html"):
        return set(re.findall(r'\bid="([^"]+)"', (site / target).read_text()))
    return set()


def link_problems(pages: dict[str, Page], site: Path, base: str) -> list[str]:
    """Every internal link must name an existing file, and its #anchor an existing id."""
    problems = []
    for page in pages.values():
        for href in page.links:
            if not href.startswith(base):
                continue  # another site: not checked (no network here)
            url = urlsplit(href)
            target = unquote(url.path).removeprefix(urlsplit(base).path)
            if target == "" or target.endswith("/"):
                target += "index.html"
            if not (site / target).is_file():
                problems.append(f"{page.path}: link to {target}: no such file")
            elif url.fragment and unquote(url.fragment) not in ids_in(pages, site, target):
                problems.append(f"{page.path}: link to {target}#{url.fragment}: no such id there")
    return problems


def shot_name(path: str) -> str:
    """notebooks/01_x.html -> notebooks__01_x (then .png and .full.jpg)."""
    return path.removesuffix(".html").replace("/", "__")


def check_site(browser, site: Path, screenshots: Path | None = None, only=None):
    """Open every page of ``site`` (or ``only`` those); return the pages and the problems."""
    pages = {}
    with serve(site) as base, tab(browser, base) as reader:
        for path in only or site_pages(site):
            shot = screenshots / shot_name(path) if screenshots else None
            pages[path] = visit(reader, base, path, shot)
        problems = [line for page in pages.values() for line in page_problems(page)]
        problems += link_problems(pages, site, base)
    return pages, problems


# ---------------------------------------------------------------- fixtures: one build, one browser


@pytest.fixture(scope="module")
def browser():
    executable = chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def site() -> Path:
    """The README's `make docs`, run once: build/html, which every test here reads."""
    done = subprocess.run(["make", "docs"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"make docs failed:\n{done.stdout}\n{done.stderr}"
    return ROOT / "build" / "html"


@pytest.fixture(scope="module")
def checked(browser, site):
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)
    SCREENSHOTS.mkdir(parents=True)
    return check_site(browser, site, SCREENSHOTS)


def notebook_tags(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return [tag for cell in cells for tag in cell["metadata"].get("tags", [])]


def notebook_title(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    first = "".join(next(c for c in cells if c["cell_type"] == "markdown")["source"])
    return re.match(r"# (.+)", first).group(1).strip()


# ---------------------------------------------------------------- the tests


def test_make_docs_writes_one_page_per_notebook(site):
    pages = sorted(p.stem for p in (site / "notebooks").glob("*.html"))
    assert pages == [p.stem for p in NOTEBOOKS]
    assert (site / "index.html").is_file() and (site / "api.html").is_file()


def test_every_page_loads_its_figures_and_links_without_console_errors(checked):
    pages, problems = checked
    assert "index.html" in pages and "api.html" in pages and "search.html" in pages
    assert problems == []
    shots = {p.name for p in SCREENSHOTS.iterdir()}
    ends = (".png", ".full.jpg") if FULL_PAGES else (".png",)
    assert {f"{shot_name(p)}{end}" for p in pages for end in ends} <= shots


def test_every_notebook_has_a_page_titled_by_its_h1_in_reading_order(checked):
    pages, _ = checked
    order = ["index.html"] + [f"notebooks/{p.stem}.html" for p in NOTEBOOKS] + ["api.html"]
    for path, notebook in zip(order[1:-1], NOTEBOOKS, strict=True):
        assert pages[path].title == f"{notebook_title(notebook)} - TFRecord tutorials"
    for before, page, after in zip(order, order[1:], order[2:], strict=False):
        folder = Path(page).parent
        assert os.path.normpath(folder / pages[page].prev) == before, page
        assert os.path.normpath(folder / pages[page].next) == after, page


def test_notebook_code_fits_the_page_without_scrolling_sideways(checked):
    """Notebook code lines are at most 100 characters: a 1280-pixel window shows them whole."""
    pages, _ = checked
    notebook_pages = [pages[f"notebooks/{p.stem}.html"] for p in NOTEBOOKS]
    assert all(page.code_cells > 10 for page in notebook_pages)
    wide = {page.path: page.wide_code for page in notebook_pages if page.wide_code}
    assert wide == {}


def test_the_landing_page_lists_every_notebook_and_the_set_up_commands(checked):
    pages, _ = checked
    links = pages["index.html"].links
    for notebook in NOTEBOOKS:
        assert any(link.endswith(f"/notebooks/{notebook.stem}.html") for link in links)
        assert notebook_title(notebook) in pages["index.html"].text
    assert "make lab" in pages["index.html"].text and "make test" in pages["index.html"].text


def test_notebook_pages_offer_the_notebook_and_its_student_copy(checked, site):
    pages, _ = checked
    for notebook in NOTEBOOKS:
        page = pages[f"notebooks/{notebook.stem}.html"]
        for kind in ("notebooks", "student"):
            assert any(link.endswith(f"/{kind}/{notebook.name}") for link in page.links), kind
        assert (site / "notebooks" / notebook.name).read_bytes() == notebook.read_bytes()
        tags = notebook_tags(site / "student" / notebook.name)
        assert "check" in tags and "solution" not in tags, notebook.name
        # On the page itself, every solution is there but folded.
        assert page.folded_solutions == notebook_tags(notebook).count("solution") >= 2


def test_every_page_says_which_tensorflow_ci_verified(checked):
    import importlib.metadata

    try:
        version = importlib.metadata.version("tensorflow-cpu")
    except importlib.metadata.PackageNotFoundError:
        version = importlib.metadata.version("tensorflow")
    pages, _ = checked
    for page in pages.values():
        assert any(
            v.startswith(f"Verified by CI with TensorFlow {version}") for v in page.verified
        ), page.path


def test_the_api_page_lists_every_public_helper(checked):
    api = checked[0]["api.html"]
    expected = [f"helpers.{m.stem}.{name}" for m in MODULES for name in public_names(m)]
    assert len(expected) > 40
    assert [name for name in expected if name not in api.ids] == []


def test_search_finds_a_helper_by_name(browser, site):
    with serve(site) as base, tab(browser, base) as (page, errors):
        page.goto(base + "search.html?q=voc_batches")
        # Sphinx shows the results one by one, then says "Search finished, found N pages".
        finished = "#search-results .search-summary:has-text('Search finished')"
        page.wait_for_selector(finished, timeout=30_000)
        found = page.eval_on_selector_all(
            "#search-results ul.search li a", "a => a.map(x => x.href)"
        )
        if SCREENSHOTS.is_dir():
            page.screenshot(path=SCREENSHOTS / "search_voc_batches.png")
    assert base + "api.html#helpers.pipeline.voc_batches" in found
    assert errors == []


def test_without_chromium_the_tests_fail_and_say_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CHROMIUM", raising=False)
    with pytest.raises(pytest.fail.Exception, match="apt-get install chromium"):
        chromium()


def break_first_link(page: Path, pattern: str, new: str) -> None:
    """Point the first <a href> of ``page`` that matches ``pattern`` at ``new``."""
    html = page.read_text()
    found = re.search(rf'<a [^>]*href="({pattern})"', html)
    page.write_text(html[: found.start(1)] + new + html[found.end(1) :])


def test_the_checks_report_a_missing_figure_and_broken_links(browser, site, tmp_path):
    broken = tmp_path / "html"
    shutil.copytree(site, broken)
    # One figure of a notebook page deleted.
    first = sorted(broken.glob("notebooks/*.html"))[0]
    src = re.search(r'<img [^>]*src="(\.\./_images/[^"]+)"', first.read_text()).group(1)
    (broken / "notebooks" / src).resolve().unlink()
    # One link to a page that does not exist, and one #anchor that does not exist.
    break_first_link(
        broken / "index.html", r"notebooks/[^\"#]+\.html", "notebooks/no_such_page.html"
    )
    break_first_link(broken / "api.html", r"#[^\"]+", "#no-such-anchor")

    # The same checks, on the pages that changed (all of them would only take longer).
    using = [p for p in site_pages(broken) if Path(src).name in (broken / p).read_text()]
    _, problems = check_site(browser, broken, only=sorted({"index.html", "api.html", *using}))

    image = src.removeprefix("../")
    expected = {
        "index.html: link to notebooks/no_such_page.html: no such file",
        "api.html: link to api.html#no-such-anchor: no such id there",
    }
    for path in using:
        expected.add(f"{path}: figure {src} did not load")
        expected.add(
            f"{path}: console error: Failed to load resource: the server responded with a "
            f"status of 404 (File not found) [{image}]"
        )
    assert using and sorted(problems) == sorted(expected)
