"""The game registry and each game's spec: what the shared layers read of a game, and the config key that names it."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest
from helpers import SMALL_RUN

from sb3_realm import games
from sb3_realm.evaluation import EvalReport, GameResult
from sb3_realm.games.gorge import rewards as gorge_rewards
from sb3_realm.games.realm import rewards as realm_rewards
from sb3_realm.games.realm.core import DIRECTIONS
from sb3_realm.imitation.config import ImitationConfig
from sb3_realm.submission import LAYOUTS
from sb3_realm.training.config import config_to_dict, load_config, read_config_file

CONFIGS = Path(__file__).resolve().parents[1] / "configs"

#: the games the package ships (a game installed from a package of its own, such as robot_vacuum, is checked by
#: check_game and its own tests: it brings its own layout and results)
SPECS = sorted((spec for spec in games.GAMES.values() if spec.env.entry_point.startswith("sb3_realm.")),
               key=lambda spec: spec.name)


def test_the_registry_knows_the_realm_and_refuses_an_unknown_game():
    assert games.get("realm") is games.get(games.LEGACY_GAME) is games.GAMES["realm"]
    with pytest.raises(ValueError, match=r"^no game given: name the game to play, one of \['realm', 'gorge'"):
        games.get(None)  # there is no default game
    with pytest.raises(ValueError, match=r"game = 'gorge2' is not a game of this package; choose one of \['realm'"):
        games.get("gorge2")


#: what a game may leave empty: the treasure counts of the Realm's parity games (Gorge Chase's check plays more games
#: of its protocol's maps)
NOT_YET = {"parity_treasure_counts"}
#: parts a game may leave out by design: a search around the network's action (Gorge Chase has one, the Realm not)
OPTIONAL = {"search", "searched", "layout_folders"}  # layout_folders: a game's own layouts (the shipped use shared)


def filled(value) -> bool:
    return value is not None and value != "" and value != () and value != {}


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_every_field_of_a_spec_is_filled(spec):
    for field in dataclasses.fields(spec):
        value = getattr(spec, field.name)
        assert filled(value), field.name
        if dataclasses.is_dataclass(value):  # a part: every field of it
            for inner in dataclasses.fields(value):
                if (inner.name in NOT_YET and spec.name != "realm") or inner.name in OPTIONAL:
                    continue
                if inner.name == "folder_variable" and "maps_dir" not in spec.env.options:
                    continue  # a game that reads no map from a folder names no variable for one
                assert filled(getattr(value, inner.name)), f"{field.name}.{inner.name}"
    assert spec.experts.options is not None  # the game's experts label games for imitation
    assert spec.submission.layouts and all(layout in LAYOUTS for layout in spec.submission.layouts)  # it ships
    assert spec.evaluation.protocols and spec.evaluation.yardstick in spec.experts
    assert set(spec.env.reward_ranges) <= set(spec.env.reward_terms)
    assert spec.submission.protocol_file.is_file()
    assert (spec.submission.search is None) == (spec.submission.searched is None)  # a search ships with its reference


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_a_spec_states_the_env_options_its_env_takes(spec):
    """The shared layers read a game's env options from its spec, never from the env's signature: each option the
    spec lists is a parameter of its env, and only a game whose env takes a maps folder reads map names from one."""
    takes = inspect.signature(spec.env.make).parameters
    assert spec.env.options <= {"mask_wall_moves", "map_names", "maps_dir"}
    assert all(option in takes for option in spec.env.options), sorted(spec.env.options - set(takes))
    if "maps_dir" not in spec.env.options:
        assert not any(spec.maps.in_folder(name) for name in ("open_5", "default", *spec.maps.builtin))


def test_only_gorge_chases_open_maps_are_read_from_the_maps_folder():
    gorge, realm = games.get("gorge"), games.get("realm")
    assert gorge.maps.in_folder("open_5") and gorge.maps.in_folder("open_12")
    assert not any(gorge.maps.in_folder(name) for name in ("default", "open_", "open_x", "own_1", "maps/open_5.json"))
    assert not realm.maps.in_folder("open_5")
    assert realm.env.options == {"mask_wall_moves"} and gorge.env.options == {"map_names", "maps_dir"}


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_a_summary_holds_the_success_figures_the_spec_names(spec):
    """The keys of :attr:`GameSpec.evaluation.success` are figures of the game's evaluation summary, and its per-game
    test counts the games the summary counts."""
    common = {"treasure_ids": [1, 2], "flash_used": 0, "buff_used": 0, "caught_after_speedup": False}
    won = {**common, "score": 100.0, "steps": 90, "win": True, "treasures": 2, "treasures_missed": [], "caught": False}
    lost = {**common, "score": 10.0, "steps": 50, "win": False, "treasures": 1, "treasures_missed": [2],
            "caught": True, "free_neighbours": 2}
    played = [GameResult.from_summary(info, index=i, game=spec) for i, info in enumerate((won, lost))]
    summary = EvalReport(policy="p", protocol=spec.evaluation.protocols[0], map="m", seed=0, games=played,
                         game=spec.name).summary()
    success = spec.evaluation.success
    assert summary[success.count] == sum(success.of_game(g) for g in played) == 1
    assert summary[success.rate] == 0.5 and summary[success.reached] == 1
    assert success.verb in ("won", "survived")
    assert [g.success for g in played] == [True, False]
    cut = GameResult.from_summary({**won, "win": False}, index=0, game=spec, cut=True)  # a rollout stopped short
    assert not success.of_game(cut) and not cut.success


@pytest.mark.parametrize("weights", [realm_rewards, gorge_rewards], ids=["realm", "gorge"])
def test_reward_weights_are_their_terms_in_order(weights):
    """Each game's weights class checks, reads and lists its weights by the same terms its env reports."""
    assert weights.RewardWeights.terms() == weights.TERMS
    default = weights.RewardWeights()
    assert default.as_list() == [default.to_dict()[t] for t in weights.TERMS]
    term = weights.TERMS[0]
    assert weights.RewardWeights.from_dict({term: 0.5}).to_dict()[term] == 0.5
    with pytest.raises(ValueError, match=r"unknown reward weight keys \['nope'\]; valid keys are"):
        weights.RewardWeights.from_dict({"nope": 1.0})
    with pytest.raises(ValueError, match=rf"RewardWeights.{term} must be a finite number, got nan"):
        weights.RewardWeights(**{term: float("nan")})


def test_the_realms_directions_are_its_cores_and_action_2_is_plus_z():
    realm = games.get("realm")
    assert realm.episodes.directions == tuple((round(dx), round(dz)) for dx, dz in DIRECTIONS)
    directions = realm.episodes.directions
    assert directions[2] == (0, 1) and directions[6] == (0, -1) and directions[0] == (1, 0)
    assert len(set(realm.episodes.directions)) == 8


def test_gorge_chase_directions_are_its_rules_and_action_2_is_minus_z():
    from sb3_realm.games.gorge.rules import DIRECTIONS as GORGE_DIRECTIONS

    gorge = games.get("gorge")
    assert gorge.episodes.directions == GORGE_DIRECTIONS and gorge.episodes.directions[2] == (0, -1)
    assert gorge.config_runs and games.get("realm").config_runs


def test_the_realms_expert_options_match_the_imitation_defaults():
    """The imitation section's refine_* defaults are literals (a config class cannot ask a game); they must be the
    refined oracle's own."""
    options = games.get("realm").experts.options
    section = ImitationConfig()
    assert dict(section.refine_settings(games.get("realm"))) == dict(options.defaults)
    assert section.changed_refine_settings(games.get("realm")) == {}
    assert section.tie_break == options.tie_breaks[0] and section.expert == games.get("realm").evaluation.yardstick


def test_the_realms_protocols_are_the_evaluations():
    realm = games.get("realm")
    assert len(realm.evaluation.configs("exhaustive")) == 715
    assert realm.evaluation.describe("exhaustive", None) == "every set of 9 treasures out of the 13 slots (715 games)"
    episode = realm.episodes.config.from_usr_conf({"treasure_random": 0, "treasure_id": [3, 4]})
    starts = realm.episodes.random_starts(episode)
    assert {"start": 2, "end": 1} in starts and all(s["end"] == 1 and s["start"] not in (1, 3, 4) for s in starts)
    with pytest.raises(ValueError, match="evaluation configs need start 2, end 1"):
        realm.evaluation.check_configs([{"start": 3, "end": 1, "treasure_random": 0, "treasure_id": [4]}])


def test_a_config_names_its_game_and_one_without_the_key_is_a_realm_config(tmp_path):
    config = load_config("configs/realm/tiny.yaml", SMALL_RUN)
    assert config.game == "realm" and config.spec is games.get("realm")
    assert next(iter(config_to_dict(config))) == "game"  # config.yaml says which game first
    old = tmp_path / "old.yaml"
    old.write_text("out: runs/old\nenv:\n  map_name: small\n", encoding="utf-8")
    assert load_config(old).game == "realm"
    with pytest.raises(ValueError, match=r"game = 'gorge2' is not a game of this package; choose one of"):
        load_config(old, ["game=gorge2"])



@pytest.mark.parametrize("path", sorted(CONFIGS.rglob("*.yaml")), ids=lambda p: p.relative_to(CONFIGS).as_posix())
def test_every_recipe_names_the_game_of_its_folder(path):
    game = path.relative_to(CONFIGS).parts[0]
    assert game in games.GAMES and read_config_file(path).get("game") == game


def test_a_file_that_names_no_game_is_the_realms_with_a_one_line_note():
    """Configs, checkpoints and packages made before the package had a second game name none: they read as the
    Realm's, and say so in one line."""
    with pytest.warns(games.LegacyGameNote, match=r"^config 'old\.yaml' names no game: read as Back to the Realm's "
                      r"\(realm\), the game of everything made before there were two; add game: realm"):
        assert games.recorded(None, "config 'old.yaml'") is games.GAMES["realm"]
    assert games.recorded("gorge", "config 'new.yaml'") is games.GAMES["gorge"]


def test_a_game_registered_from_elsewhere_is_a_game_until_unregistered():
    toy = dataclasses.replace(games.get("realm"), name="toy_registry", title="Toy")
    assert games.register(toy) is toy and games.get("toy_registry") is toy and "toy_registry" in games.names()
    try:
        with pytest.raises(ValueError, match="is already registered"):
            games.register(dataclasses.replace(toy, title="Other"))
    finally:
        games.unregister("toy_registry")
    assert "toy_registry" not in games.names()
    with pytest.raises(ValueError, match="ships with the package"):
        games.unregister("realm")
