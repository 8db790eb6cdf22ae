"""scripts/build_docs.py empties only folders it made: never the checkout, never a user's folder.

(The site itself is built and opened in Chromium by tests/test_docs_site.py.)
"""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_docs  # noqa: E402  (a script, not a package)


@pytest.mark.parametrize("folder", [ROOT, ROOT.parent, ROOT / "."])
def test_the_checkout_and_the_folders_holding_it_are_refused(folder):
    with pytest.raises(build_docs.RefusedFolder, match="is this checkout or holds it"):
        build_docs.fresh_folder(folder)
    assert (ROOT / "README.md").is_file()


def test_a_folder_the_script_did_not_make_is_refused_and_kept(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(build_docs.RefusedFolder, match=r"not made by this script"):
        build_docs.fresh_folder(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_folder_it_made_is_emptied_and_a_new_or_empty_one_is_used(tmp_path):
    made = build_docs.fresh_folder(tmp_path / "html")
    (made / "old.html").write_text("old page")
    again = build_docs.fresh_folder(tmp_path / "html")
    assert again == made and [p.name for p in again.iterdir()] == [build_docs.MARKER]
    (tmp_path / "empty").mkdir()
    assert (build_docs.fresh_folder(tmp_path / "empty") / build_docs.MARKER).is_file()


def test_the_command_refuses_a_bad_out_folder_and_builds_nothing(tmp_path, monkeypatch, capsys):
    staging = tmp_path / "src"
    argv = ["build_docs.py", "--out", str(ROOT), "--staging", str(staging)]
    monkeypatch.setattr(sys, "argv", argv)
    assert build_docs.main() == 2
    assert "is this checkout or holds it" in capsys.readouterr().err
    assert [p.name for p in staging.iterdir()] == [build_docs.MARKER]  # staging: checked first
