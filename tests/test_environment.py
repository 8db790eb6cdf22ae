"""environment.yml (conda) must install what requirements.txt + the `dev` extra install."""

import tomllib
from pathlib import Path

import pytest
import yaml
from lock_imports import LOCKED, require, wheel_for
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def _requirements(lines):
    """Map 'name; marker' -> specifier for requirement lines (comments, -e lines skipped)."""
    found = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        req = Requirement(line)
        key = (req.name.lower(), str(req.marker) if req.marker else "")
        assert key not in found, f"{req.name} listed twice"
        found[key] = str(req.specifier)
    return found


def _pip_section():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    sections = [dep["pip"] for dep in env["dependencies"] if isinstance(dep, dict) and "pip" in dep]
    assert len(sections) == 1, "environment.yml needs exactly one pip section"
    return env, sections[0]


def test_environment_yml_pins_the_same_packages_as_requirements_and_dev_tools():
    runtime = _requirements((ROOT / "requirements.txt").read_text().splitlines())
    dev = _requirements(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][
            "dev"
        ]
    )
    _, pip = _pip_section()
    assert _requirements(pip) == {**runtime, **dev}


def test_environment_yml_uses_python_311_and_installs_the_helpers():
    env, pip = _pip_section()
    assert "python=3.11" in env["dependencies"]
    assert "-e ." in pip


def test_every_pin_is_compatible_release():
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            assert "~=" in line, f"use a compatible-release pin (~=) in requirements.txt: {line}"


def _locked():
    """name -> exact version from requirements.lock (made by `make lock`, never by hand)."""
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"requirements.lock pins exactly: {line}"
            pins[req.name.lower()] = spec.version
    return pins


def test_the_lock_satisfies_every_pin_for_the_platform_ci_runs_on():
    locked = _locked()
    linux = {"sys_platform": "linux", "platform_machine": "x86_64", "python_version": "3.11"}
    wanted = list((ROOT / "requirements.txt").read_text().splitlines())
    wanted += tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["dev"]
    for line in wanted:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        if req.marker and not req.marker.evaluate(linux):
            continue
        assert req.name.lower() in locked, (
            f"{req.name} is missing from requirements.lock: run make lock"
        )
        assert req.specifier.contains(locked[req.name.lower()], prereleases=True), (
            f"requirements.lock has {req.name}=={locked[req.name.lower()]}, outside {req.specifier}: run make lock"
        )


def test_a_missing_package_fails_where_the_lock_applies_and_elsewhere_skips_naming_its_wheel():
    with pytest.raises(pytest.fail.Exception, match="requirements.lock installs no_such_pkg on"):
        require("no_such_pkg", locked=True)
    with pytest.raises(pytest.skip.Exception, match=r"^no no_such_pkg wheel installed for \S+"):
        require("no_such_pkg", locked=False)
    assert require("yaml", locked=True) is yaml


def test_the_skip_names_the_wheel_requirements_txt_installs_on_this_platform():
    tensorflow = "tensorflow-cpu~=" if LOCKED else "tensorflow~="
    assert wheel_for("tensorflow").startswith(tensorflow)
    assert wheel_for("apache_beam").startswith("apache-beam~=")
