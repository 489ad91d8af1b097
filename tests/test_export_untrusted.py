"""build-submission and a built folder on untrusted input: a code package's links and special files are refused by
name and never followed, bytecode planted in a built folder never runs in ``eval DIR`` / ``replay DIR``, every path
a manifest or a conf names stays inside the folder, a build touches only its own leftovers, and a damaged model file
is named before the code package is read."""

from __future__ import annotations

import importlib.util
import json
import marshal
import os
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
from helpers import make_code_package, make_gorge_code_package

from sb3_realm.agents import SubmissionPolicy
from sb3_realm.agents.submission import package_differences, read_manifest
from sb3_realm.atomic import OutsideFolder
from sb3_realm.cli import main
from sb3_realm.export import ExportError, build_submission
from sb3_realm.export.build import RecoveredBuildWarning, recover_interrupted_build

needs_links = pytest.mark.skipif(sys.platform == "win32", reason="symbolic links need privileges on Windows")


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` (links not followed) -> its bytes, to compare before and after a command."""
    return {p.relative_to(folder).as_posix(): (b"->" + os.readlink(p).encode() if p.is_symlink() else p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_symlink() or p.is_file()}


@pytest.fixture
def victim(tmp_path) -> Path:
    """A folder outside every package and output, with a file and a folder of secrets."""
    root = tmp_path / "elsewhere"
    (root / "secrets").mkdir(parents=True)
    (root / "victim.txt").write_text("SECRET-FILE", encoding="utf-8")
    (root / "secrets" / "key.txt").write_text("SECRET-FOLDER", encoding="utf-8")
    return root


# ------------------------------------------------------------------------------------------ the code package
@needs_links
@pytest.mark.parametrize("entry, target", [("conf/notes.txt", "victim.txt"), ("extras", "secrets")])
def test_a_link_out_of_the_code_package_is_refused_and_never_copied(models, tmp_path, victim, entry, target):
    package = make_code_package(tmp_path / "package")
    (package / entry).symlink_to(victim / target)
    before = _tree(tmp_path)
    with pytest.raises(ExportError, match=rf"--code-package .*{entry!r} is a symbolic link to .*outside the code "
                                          "package.*never copies"):
        build_submission(models["ppo"], tmp_path / "upload", code_package=package, make_zip=True)
    assert _tree(tmp_path) == before  # no folder, no zip, no leftover: nothing written anywhere


@needs_links
def test_a_link_to_a_file_inside_the_package_is_copied_as_that_file(models, tmp_path):
    package = make_code_package(tmp_path / "package")
    (package / "conf" / "same.py").symlink_to(package / "conf" / "usr_conf.py")
    out = tmp_path / "upload"
    build_submission(models["ppo"], out, code_package=package, make_zip=True)
    assert not (out / "conf" / "same.py").is_symlink()
    assert (out / "conf" / "same.py").read_bytes() == (package / "conf" / "usr_conf.py").read_bytes()
    with zipfile.ZipFile(tmp_path / "upload.zip") as archive:
        assert "conf/same.py" in archive.namelist()


@needs_links
def test_a_dangling_link_or_a_named_pipe_in_the_code_package_is_named(models, tmp_path):
    package = make_code_package(tmp_path / "package")
    (package / "conf" / "gone.toml").symlink_to(tmp_path / "nowhere.toml")
    with pytest.raises(ExportError, match=r"'conf/gone.toml' is a symbolic link to .*nowhere.toml', which does not "
                                          r"exist \(a dangling link\)"):
        build_submission(models["ppo"], tmp_path / "upload", code_package=package)
    (package / "conf" / "gone.toml").unlink()
    os.mkfifo(package / "diy" / "pipe")
    before = _tree(tmp_path)
    out = subprocess.run([sys.executable, "-m", "sb3_realm.cli", "build-submission", str(models["ppo"]), "--out",
                          str(tmp_path / "upload"), "--code-package", str(package), "--zip"],
                         capture_output=True, text=True, stdin=subprocess.DEVNULL)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr[-2000:]
    assert "'diy/pipe' is a named pipe (FIFO), not a file or a folder; remove it" in lines[0]
    assert _tree(tmp_path) == before
    os.unlink(package / "diy" / "pipe")
    os.mkfifo(tmp_path / "upload.zip")  # where --zip would write: refused, never opened
    with pytest.raises(ExportError, match=r"upload.zip', which is not a package archive"):
        build_submission(models["ppo"], tmp_path / "upload", code_package=package, make_zip=True, force=True)



@needs_links
@pytest.mark.parametrize("copied, swapped, how", [("conf/usr_conf.py", "conf/usr_conf.py", "link"),
                                                  ("conf/__init__.py", "conf", "link"),
                                                  ("conf/usr_conf.py", "conf/usr_conf.py", "hard link")])
def test_an_entry_swapped_for_a_link_out_between_check_and_copy_is_refused(models, tmp_path, victim, monkeypatch,
                                                                           copied, swapped, how):
    """The race of a file (or a folder above it) replaced by a link to a file outside after the copy checked it and
    before it opened it: what is opened is compared with what was checked, so the outside file never reaches the
    upload, its zip or its manifest. A hard link, which no path check can see, is caught by that comparison alone
    (as a symbolic link is where the system cannot open without following links)."""
    from sb3_realm.export import code_package

    package = make_code_package(tmp_path / "package")
    outside = victim / "conf"
    shutil.copytree(package / "conf", outside)
    (outside / "usr_conf.py").write_text("SECRET-FILE\n", encoding="utf-8")
    checked, calls = code_package._entry_problem, []

    def check_then_swap(real_root, path):  # the check passes, then the entry is swapped before it is opened
        problem = checked(real_root, path)
        calls.append(path)
        if path == package / copied and calls.count(path) == 2:  # the copy's own check (the first: the listing's)
            os.replace(package / swapped, tmp_path / "aside")
            if how == "hard link":
                os.link(outside / "usr_conf.py", package / swapped)
            else:
                (package / swapped).symlink_to(outside / "usr_conf.py" if swapped.endswith(".py") else outside)
        return problem

    monkeypatch.setattr(code_package, "_entry_problem", check_then_swap)
    with pytest.raises(ExportError, match=rf"--code-package .*'{copied}' changed while the package was "
                                          r"copied.*copies only what it checked.*nothing was built"):
        build_submission(models["ppo"], tmp_path / "upload", code_package=package, make_zip=True)
    assert calls.count(package / copied) == 2  # the swap happened
    assert sorted(p.name for p in tmp_path.iterdir()) == ["aside", "elsewhere", "package"]  # no upload, no zip

# ------------------------------------------------------------------------------------------ bytecode in a built folder
def _plant_bytecode(module: Path, marker: Path) -> Path:
    """A ``__pycache__`` entry beside ``module`` whose header matches it (its mtime and size), holding the module's own
    code with one more line: it writes ``marker``. Python runs it instead of the source unless told otherwise."""
    code = compile(f"open({str(marker)!r}, 'w').close()\n" + module.read_text(encoding="utf-8"), str(module), "exec")
    st = module.stat()
    stamp = (int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF)  # what the import system compares
    header = importlib.util.MAGIC_NUMBER + b"\0\0\0\0" + b"".join(n.to_bytes(4, "little") for n in stamp)
    cache = module.parent / "__pycache__" / f"{module.stem}.{sys.implementation.cache_tag}.pyc"
    cache.parent.mkdir(exist_ok=True)
    cache.write_bytes(header + marshal.dumps(code))
    return cache


def _would_run(folder: Path, module: str, marker: Path) -> bool:
    """Whether a plain import of ``module`` from ``folder`` runs the planted bytecode (the control of the tests)."""
    subprocess.run([sys.executable, "-B", "-c", f"import sys; sys.path.insert(0, {str(folder)!r}); import {module}"],
                   capture_output=True, check=False)
    ran = marker.exists()
    marker.unlink(missing_ok=True)
    return ran


def test_planted_bytecode_never_runs_in_eval_or_replay_of_a_2024_folder(models, tmp_path):
    folder = tmp_path / "upload"
    build_submission(models["ppo"], folder)
    marker = tmp_path / "bytecode_ran"
    _plant_bytecode(folder / "diy" / "algorithm" / "agent.py", marker)
    assert _would_run(folder, "diy.algorithm.agent", marker)  # the plant works on a plain import
    out = subprocess.run([sys.executable, "-m", "sb3_realm.cli", "eval", str(folder), "--games", "2", "--no-yardstick",
                          "--max-step", "30"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert not marker.exists()
    assert main(["replay", str(folder), "--out", str(tmp_path / "replay.gif"),
                 "--usr-conf", '{"treasure_num": 2, "max_step": 20}']) == 0
    assert not marker.exists() and (tmp_path / "replay.gif").is_file()
    assert package_differences(folder, read_manifest(folder))["bytecode"] == [  # reported, never run
        f"diy/algorithm/__pycache__/agent.{sys.implementation.cache_tag}.pyc"]


def test_planted_bytecode_never_runs_in_eval_of_a_gorge15_folder(tmp_path, capsys):
    from sb3_contrib import MaskablePPO

    from sb3_realm.games.gorge.env import GorgeEnv
    from sb3_realm.games.gorge.features import FEATURE_VERSION
    from sb3_realm.models.extractors import GorgeExtractor

    model = MaskablePPO("MultiInputPolicy", GorgeEnv(), n_steps=32, batch_size=32, n_epochs=1, seed=0, device="cpu",
                        policy_kwargs={"features_extractor_class": GorgeExtractor,
                                       "features_extractor_kwargs": {"features_dim": 16, "cnn_channels": (4, 4, 4)}})
    model.feature_version = FEATURE_VERSION  # as sb3-realm's runs record it
    model.save(tmp_path / "model.zip")
    folder = tmp_path / "upload"
    build_submission(tmp_path / "model.zip", folder, code_package=make_gorge_code_package(tmp_path / "package"),
                     game="gorge", trust_pickle=True)
    marker = tmp_path / "bytecode_ran"
    _plant_bytecode(folder / "agent_diy" / "agent.py", marker)
    assert _would_run(folder, "agent_diy.agent", marker)
    assert main(["eval", str(folder), "--game", "gorge", "--protocol", "maps", "--maps", "own_1", "--games", "2",
                 "--no-yardstick", "--max-step", "30"]) == 0
    assert not marker.exists()


def test_sourceless_bytecode_links_and_pipes_in_a_built_folder_are_refused(models, tmp_path, victim):
    folder = tmp_path / "upload"
    build_submission(models["ppo"], folder)
    evil = folder / "diy" / "algorithm" / "helper.pyc"  # importable as diy.algorithm.helper, with no source
    shutil.copyfile(_plant_bytecode(folder / "diy" / "config.py", tmp_path / "m"), evil)
    with pytest.raises(ValueError, match=r"extra diy/algorithm/helper.pyc"):
        SubmissionPolicy(folder)
    evil.unlink()
    if sys.platform != "win32":
        (folder / "diy" / "notes.txt").symlink_to(victim / "victim.txt")
        os.mkfifo(folder / "diy" / "pipe")
        with pytest.raises(ValueError, match=r"extra diy/pipe; symbolic links diy/notes.txt"):
            SubmissionPolicy(folder)
        with pytest.raises(ExportError, match=r"holds files build-submission did not write \(diy/pipe, "
                                              r"diy/notes.txt\)"):
            build_submission(models["ppo"], folder, force=True)
        assert (victim / "victim.txt").read_text(encoding="utf-8") == "SECRET-FILE"


# ------------------------------------------------------------------------------------------ paths a manifest names
def test_a_manifest_naming_weights_outside_the_folder_is_refused(models, tmp_path):
    folder = tmp_path / "upload"
    build_submission(models["ppo"], folder)
    outside = tmp_path / "elsewhere" / "ckpt"
    outside.mkdir(parents=True)
    shutil.copyfile(folder / "ckpt" / "model.ckpt-512.pkl", outside / "model.ckpt-512.pkl")
    manifest_path = folder / "diy" / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    for bad in ("../elsewhere/ckpt/model.ckpt-512.pkl", str(outside / "model.ckpt-512.pkl")):
        manifest["weights"]["file"] = bad
        manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
        with pytest.raises(OutsideFolder, match=r"the manifest .* names .*must stay inside"):
            SubmissionPolicy(folder)
    manifest["weights"]["file"], manifest["algo_dir"] = "ckpt/model.ckpt-512.pkl", "../diy"
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ValueError, match=r"names the algorithm folder '../diy'"):
        read_manifest(folder)


def test_a_conf_selecting_a_folder_outside_is_refused(models, tmp_path):
    folder = tmp_path / "upload"
    build_submission(models["ppo"], folder, code_package=make_code_package(tmp_path / "package"))
    shutil.copytree(folder / "diy", tmp_path / "outside")  # a manifest that a conf could lead to
    conf = folder / "conf" / "configure_app.toml"
    conf.write_text(conf.read_text(encoding="utf-8").replace('algo = "diy"', 'algo = "../outside"'), encoding="utf-8")
    with pytest.raises(OutsideFolder, match=r"configure_app.toml' \(its algo\) names '../outside/manifest.json'"):
        read_manifest(folder)


# ------------------------------------------------------------------------------------------ leftovers of neighbours
def test_a_build_touches_only_its_own_leftovers(models, tmp_path):
    neighbours = {".sub.v2.abcdefgh.tmp": "another output's unfinished build", ".a.old-5": "a's old package",
                  ".b.abcdefgh.tmp": "b's unfinished build", ".sub.old-12.bak": "a user's backup"}
    for name, text in neighbours.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "file.txt").write_text(text, encoding="utf-8")
    (tmp_path / ".sub.old-13").write_text("a file, not a package set aside", encoding="utf-8")
    before = _tree(tmp_path)
    own = [".sub.abcd1234.tmp", ".sub.zip.abcd_234.tmp", ".[ab].q1w2e3r4.tmp"]
    (tmp_path / own[0]).mkdir()
    (tmp_path / own[1]).write_bytes(b"half a zip")
    (tmp_path / own[2]).mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveredBuildWarning)
        build_submission(models["ppo"], tmp_path / "sub")
        build_submission(models["ppo"], tmp_path / "[ab]")  # '[ab]' as a glob would match '.a.old-5'
    after = _tree(tmp_path)
    assert {k: v for k, v in after.items() if not k.startswith(("sub/", "[ab]/"))} == before
    assert not any((tmp_path / name).exists() for name in own)
    os.replace(tmp_path / "[ab]", tmp_path / ".[ab].old-77")  # as a kill mid-swap leaves it
    assert "restored" in recover_interrupted_build(tmp_path / "[ab]")
    assert (tmp_path / "[ab]" / "diy" / "manifest.json").is_file() and (tmp_path / ".a.old-5").is_dir()


# ------------------------------------------------------------------------------------------ a damaged model file
def test_a_damaged_model_or_a_run_folder_is_named_before_the_code_package(models, tmp_path):
    package = make_gorge_code_package(tmp_path / "gorge_package")  # another game's package: read later, if at all
    cut = tmp_path / "cut.zip"
    cut.write_bytes(models["ppo"].read_bytes()[:4000])
    empty = tmp_path / "empty.zip"
    empty.write_bytes(b"")
    run = models["ppo"].parent
    for model, fragment in ((cut, r"model file '.*cut.zip' is truncated: it starts as a zip archive but its end, "
                                  r"which lists the members, is missing \(4000 bytes; a save or copy that was cut "
                                  r"short\)"),
                            (empty, r"model file '.*empty.zip' is empty \(0 bytes\)"),
                            (run, r"is a folder, not an SB3 checkpoint file; it is a training run: pass one of its "
                                  r"models, .*final_model.zip")):
        with pytest.raises(ExportError, match=fragment) as caught:
            build_submission(model, tmp_path / "upload", code_package=package)
        assert "code package" not in str(caught.value)
    assert not (tmp_path / "upload").exists()


# ------------------------------------------------------------------------------------------ --ckpt-id
@pytest.mark.parametrize("ckpt_id", ["1000000000000000000000000000000", str(2**63), "²", "\u0663", "\uff11"])
def test_a_ckpt_id_the_conf_or_the_platform_cannot_hold_is_refused_before_any_work(models, tmp_path, capsys, ckpt_id):
    """TOML integers are 64-bit and the platform reads the id with int() of ASCII digits: anything else is one clear
    line (never int()'s own message), and nothing is written."""
    package = make_code_package(tmp_path / "package")
    before = _tree(tmp_path)
    code = main(["build-submission", str(models["ppo"]), "--out", str(tmp_path / "upload"), "--code-package",
                 str(package), "--zip", "--ckpt-id", ckpt_id])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "invalid literal" not in err, err
    assert f"--ckpt-id {ckpt_id!r} must be an integer >= 1 and at most {2**63 - 1}" in err and "0-9" in err
    assert _tree(tmp_path) == before


def test_the_largest_ckpt_id_toml_holds_is_built(models, tmp_path):
    import tomllib

    package = make_code_package(tmp_path / "package")
    manifest = build_submission(models["ppo"], tmp_path / "upload", code_package=package, ckpt_id=str(2**63 - 1))
    assert manifest["weights"]["ckpt_id"] == 2**63 - 1
    app = tomllib.loads((tmp_path / "upload" / "conf" / "configure_app.toml").read_text(encoding="utf-8"))["app"]
    assert app["eval_model_id"] == app["preload_model_id"] == 2**63 - 1
