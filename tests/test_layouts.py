"""The platform layouts as a registry (:mod:`sb3_realm.export.layouts`): what the shipped layouts decide, the
registry's errors, no layout named outside its own module, and a toy layout registered from this file alone that
build-submission, its next steps and ``--check`` use without a change anywhere else."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import tomllib
import zipfile
from pathlib import Path

import pytest

from sb3_realm import games
from sb3_realm.agents.submission import own_stand_in, package_differences
from sb3_realm.export import ExportError, build_submission, layouts, next_steps
from sb3_realm.export.code_package import CodePackage, ensure_table, write_conf
from sb3_realm.submission import LAYOUTS

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("gorge15", "kaiwu2024")


# ------------------------------------------------------------------------------------------ the registry
def test_the_shipped_layouts_are_registered_with_their_data():
    assert layouts.names() == sorted(LAYOUTS) == list(SHIPPED)  # one layout per folder with a layout.toml
    for name in SHIPPED:
        layout = layouts.get(name)
        assert isinstance(layout, layouts.Layout) and layout.name == name and layout.folder == LAYOUTS[name]
        spec = tomllib.loads((LAYOUTS[name] / "layout.toml").read_text(encoding="utf-8"))
        assert layout.spec == spec and layout.title == spec["title"] and layout.algo_dirs == spec["algo_dirs"]
        assert layout.default_algo_dir in layout.algo_dirs
    for game in games.GAMES.values():  # every layout a game names can be built: shipped, or brought by the game
        assert set(game.submission.layouts) <= set(layouts.names()) | set(game.submission.layout_folders)


def test_each_shipped_layout_decides_its_weights_folder_zip_and_code_package_rule(tmp_path):
    realm = layouts.get(games.get("realm").submission.layouts[0])
    gorge = layouts.get(games.get("gorge").submission.layouts[0])
    algo_root = tmp_path / "algo"
    assert realm.weights_folder(tmp_path, algo_root) == tmp_path / "ckpt"
    assert gorge.weights_folder(tmp_path, algo_root) == algo_root / "ckpt"  # where its preload keys look
    for name in ("conf", "ckpt", "algo", "train_test.py"):
        (tmp_path / name).mkdir()
    assert realm.zip_names(tmp_path, "dqn") == ["ckpt", "conf", "dqn"]
    assert gorge.zip_names(tmp_path, "algo") == ["algo", "ckpt", "conf", "train_test.py"]  # the whole package
    assert realm.code_package_required is None
    assert "copy of your own 15.0.1 code package" in gorge.code_package_required


def test_the_next_steps_name_the_preloads_file_and_what_a_finetuning_task_saves(tmp_path):
    """The 2024 steps name the file the preload reads (inside the algorithm folder, not ckpt/) and say that the task
    dialog setting both algorithm lines is an assumption; a finetune build's steps, in both layouts, say that the
    first save is the exported policy and each save is evaluated with its own weights."""
    realm, gorge = layouts.get("kaiwu2024"), layouts.get("gorge15")
    for workflow in ("keep", "finetune"):
        manifest = {"algo_dir": "diy", "weights": {"ckpt_id": 512, "file": "ckpt/model.ckpt-512.pkl"},
                    "platform_training": workflow, "code_package": {"folder": "code"}, "game": "realm"}
        steps = realm.next_steps(manifest, tmp_path)
        assert "preloads diy/ckpt/model.ckpt-512.pkl" in steps and "preloads ckpt/" not in steps
        assert "an assumption" in steps and "The platform sets that algorithm" not in steps
        gorge_steps = gorge.next_steps({**manifest, "algo_dir": "agent_diy", "game": "gorge", "weights": {
            "ckpt_id": 64, "file": "agent_diy/ckpt/model.ckpt-64.pkl"}}, tmp_path)
        for text in (steps, gorge_steps):
            assert ("is your policy as exported" in text and "with its own weights" in text) == (workflow == "finetune")


def test_the_agent_loads_as_its_layout_data_says():
    """The submission player learns how an Agent loads from the layout's data, never from its name: a layout with
    its own stand-in of the framework hands the Agent ``env_obs``."""
    for name in SHIPPED:
        stand_in = own_stand_in(name)
        declared = tomllib.loads((LAYOUTS[name] / "layout.toml").read_text(encoding="utf-8")).get("stand_in")
        assert stand_in == (None if declared is None else LAYOUTS[name] / declared)
        assert stand_in is None or (stand_in.is_dir() and (LAYOUTS[name] / "harness.py").is_file())


def test_the_registry_refuses_unknown_names_doubles_and_non_layouts():
    with pytest.raises(ValueError, match=r"layout 'kaiwu2025' is unknown; choose one of \['gorge15', 'kaiwu2024'"):
        layouts.get("kaiwu2025")
    shipped = layouts.get("kaiwu2024")
    assert layouts.register(shipped) is shipped  # the same object again: nothing changes
    twin = type(shipped)("kaiwu2024", shipped.folder, shipped.spec)
    with pytest.raises(ValueError, match="a layout named 'kaiwu2024' is already registered"):
        layouts.register(twin)
    with pytest.raises(TypeError, match="is not a Layout"):
        layouts.register({"name": "toy"})
    with pytest.raises(ValueError, match="layout 'toy' is unknown"):
        layouts.unregister("toy")
    assert layouts.names() == list(SHIPPED)


def test_no_layout_is_named_outside_its_module():
    """Only the layouts package names a layout (and the games, which say which layouts their models go into: the
    CLI's help takes its defaults from them)."""
    allowed = {Path("sb3_realm/export/layouts"), Path("sb3_realm/games")}
    named = re.compile("|".join(SHIPPED))
    found = [f"{path.relative_to(ROOT)}:{number}" for path in sorted((ROOT / "sb3_realm").rglob("*.py"))
             if not any(path.relative_to(ROOT).is_relative_to(a) for a in allowed)
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if named.search(line)]
    assert found == []
    for path in (ROOT / "sb3_realm/games").rglob("*.py"):  # a game names its layouts in its spec only
        assert path.name == "spec.py" or not named.search(path.read_text(encoding="utf-8")), path


def test_a_build_reads_no_layout_toml(models, tmp_path, monkeypatch):
    """The layout's data is read once, when it is registered: a build asks the layout object, never the file."""
    import sb3_realm.agents.manifest as manifest
    import sb3_realm.agents.submission as player
    import sb3_realm.submission as shipped

    calls = []

    def counted(name):
        calls.append(name)
        return real(name)

    real = shipped.layout_spec
    monkeypatch.setattr(shipped, "layout_spec", counted)
    monkeypatch.setattr(player, "layout_spec", counted)
    monkeypatch.setattr(manifest, "layout_spec", counted)
    build_submission(models["ppo"], tmp_path / "out")
    assert calls == []


# ------------------------------------------------------------------------------------------ a toy layout
TOY_TEMPLATE = {
    "agent.py": "from diy.model.nets import build\nimport diy.feature.features as features\n",
    "feature/__init__.py": "",
    "model/__init__.py": "",
}


class ToyLayout(layouts.Layout):
    """A platform that keeps the weights in ``weights/``, reads the algorithm from ``toy.conf`` (or the ``[toy]``
    table of the user's ``conf/toy.toml``) and uploads the algorithm folder and the weights only."""

    def weights_folder(self, root: Path, algo_root: Path) -> Path:
        return root / "weights"

    def conf_edits(self, root: Path, algo_dir: str, ckpt_id: int, sample_dim: int,
                   package: CodePackage | None) -> dict | None:
        if package is None:
            (root / "toy.conf").write_text(f"algo={algo_dir}\nckpt={ckpt_id}\nsample_dim={sample_dim}\n",
                                           encoding="utf-8")
            return None
        write_conf(root / self.spec["app_conf"], ensure_table(package.app_conf, "toy", {"algo": algo_dir}))
        return {"settings": {"algo": algo_dir}}

    def zip_names(self, out: Path, algo_dir: str) -> list[str]:
        return [algo_dir, "weights"]

    def next_steps(self, manifest: dict, out: Path) -> str:
        return f"Upload {out} to the toy platform; it plays {manifest['weights']['file']}."

    def check(self, folder, model_path, **options) -> dict:
        differences = package_differences(folder, read_manifest_of(folder))
        return {"ok": not any(differences[k] for k in ("changed", "missing", "extra", "links")), "games": options}


def read_manifest_of(folder) -> dict:
    """The toy package's manifest, read directly (the shared reader knows the shipped layouts' folders only)."""
    (path,) = Path(folder).glob("*/manifest.json")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy layout registered, and the Realm's models allowed into it (its first layout: the default)."""
    folder = tmp_path / "toy_layout"
    for rel, text in TOY_TEMPLATE.items():
        (folder / "tpl" / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / "tpl" / rel).write_text(text, encoding="utf-8")
    spec = {"title": "Toy platform", "template": "tpl", "template_package": "diy", "algo_dirs": ["toy_algo", "other"],
            "default_algo_dir": "toy_algo", "project_code": "toy_project", "versions": ["1."],
            "app_conf": "conf/toy.toml", "app_table": "app", "algo_conf": "conf/algos.toml"}
    layout = layouts.register(ToyLayout("toy", folder, spec))
    realm = games.get("realm")
    monkeypatch.setitem(games.GAMES, "realm", dataclasses.replace(
        realm, submission=dataclasses.replace(realm.submission, layouts=("toy", *realm.submission.layouts))))
    yield layout
    layouts.unregister("toy")


def test_a_toy_layout_registered_here_is_built_without_naming_it(toy, models, tmp_path):
    out = tmp_path / "upload"
    manifest = build_submission(models["ppo"], out, ckpt_id=5)  # the game's first layout: the toy
    assert manifest["layout"] == "toy" and manifest["algo_dir"] == "toy_algo"
    algo = out / "toy_algo"
    assert (algo / "agent.py").read_text(encoding="utf-8") == ("from toy_algo.model.nets import build\n"
                                                              "import toy_algo.feature.features as features\n")
    assert (algo / "feature/features.py").is_file() and (algo / "model/nets.py").is_file()
    assert manifest["weights"]["file"] == "weights/model.ckpt-5.pkl"  # the toy's weights folder
    assert manifest["weights"]["preload_file"] == "toy_algo/ckpt/model.ckpt-5.pkl"
    assert (out / "weights/model.ckpt-5.pkl").read_bytes() == (algo / "ckpt/model.ckpt-5.pkl").read_bytes()
    assert (out / "toy.conf").read_text(encoding="utf-8") == \
        f"algo=toy_algo\nckpt=5\nsample_dim={manifest['sample_dim']}\n"
    assert not (out / "ckpt").exists() and not (out / "merge_into_configure_app.toml").exists()
    assert next_steps(manifest, out) == f"Upload {out} to the toy platform; it plays weights/model.ckpt-5.pkl."
    checked = layouts.get(manifest["layout"])  # the check of a shipped layout also needs its stand-in's folder
    assert checked.check(out, models["ppo"], games=2)["ok"]
    (out / "stray.txt").write_text("not built", encoding="utf-8")
    assert not checked.check(out, models["ppo"])["ok"]


def test_a_toy_layout_edits_a_code_package_and_zips_what_it_says(toy, models, tmp_path):
    package = tmp_path / "code"
    (package / "conf").mkdir(parents=True)
    (package / "kaiwu.json").write_text(json.dumps({"project_code": "toy_project", "version": "1.2"}),
                                        encoding="utf-8")
    (package / "conf/toy.toml").write_text("[app]\nrate = 2\n", encoding="utf-8")
    (package / "readme.txt").write_text("mine", encoding="utf-8")
    out = tmp_path / "upload"
    manifest = build_submission(models["ppo"], out, algo_dir="other", code_package=package, make_zip=True)
    assert manifest["code_package"]["edits"] == {"settings": {"algo": "other"}}
    assert tomllib.loads((out / "conf/toy.toml").read_text(encoding="utf-8")) == {"app": {"rate": 2},
                                                                                  "toy": {"algo": "other"}}
    with zipfile.ZipFile(tmp_path / "upload.zip") as archive:
        assert {name.split("/")[0] for name in archive.namelist()} == {"other", "weights"}
    with pytest.raises(ExportError, match=r"--algo-dir 'diy': the platform registers the algorithm folders "
                                          r"toy_algo, other only"):
        build_submission(models["ppo"], tmp_path / "again", algo_dir="diy")
    (package / "kaiwu.json").write_text(json.dumps({"project_code": "back_to_the_realm", "version": "10.1"}),
                                        encoding="utf-8")
    with pytest.raises(ExportError, match=r"--layout toy builds for 'toy_project' version 1\.x \(Toy platform\)"):
        build_submission(models["ppo"], tmp_path / "again", code_package=package)


def test_a_layout_that_needs_a_code_package_says_so(toy, models, tmp_path, monkeypatch):
    monkeypatch.setattr(toy, "code_package_required", "the toy platform takes whole packages only")
    with pytest.raises(ExportError, match="--layout toy needs --code-package: the toy platform takes whole packages "
                                          "only"):
        build_submission(models["ppo"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_no_layout_is_named_outside_the_registry_and_the_games_that_ship_into_it():
    """The shared builder and the submission Agent never name a layout: a layout's name appears in no string of the
    package but in its own module of :mod:`sb3_realm.export.layouts` and in the ``spec.py`` of the game whose models go
    into it (``submission.layouts``)."""
    package = Path(games.__file__).parent.parent
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, layouts.names())) + r")\b")
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel.startswith("export/layouts/") or re.fullmatch(r"games/\w+/spec\.py", rel):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and pattern.search(node.value):
                found.append(f"{rel}:{node.lineno}: {node.value[:60]!r}")
    assert found == []
