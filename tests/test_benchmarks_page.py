"""The benchmarks pages equal what their JSON files give, and the JSON files hold no private absolute paths."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

_spec = importlib.util.spec_from_file_location("benchmarks_page", ROOT / "tools" / "benchmarks_page.py")
page = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(page)


def _existing_pages() -> list[tuple[str, Path]]:
    return [(lang, path) for lang, path in page.PAGES.items() if path.exists()]


def test_the_pages_equal_their_data(capsys):
    assert page.main(["--check"]) == 0, capsys.readouterr().out


@pytest.mark.parametrize("lang,path", _existing_pages())
def test_every_table_name_is_known_and_every_region_is_filled(lang, path):
    text = path.read_text(encoding="utf-8")
    names = [m.group("name") for m in page.REGION.finditer(text)]
    assert names, f"{path} marks no generated table"
    assert set(names) <= set(page.TABLES)
    # every opening marker has its closing marker
    assert text.count("<!-- table: ") == text.count("<!-- /table -->") == len(names)


@pytest.mark.parametrize("lang,path", _existing_pages())
def test_an_altered_figure_in_a_table_is_caught(lang, path, tmp_path, capsys):
    text = path.read_text(encoding="utf-8")
    # the oracle's mean score over all sets, as the table prints it
    figure = f"{page.load('oracle_refined_real_map.json')['all_sets']['mean_score']:.2f}"
    start = text.index("<!-- table: oracle-real-map -->")
    at = text.index(figure, start)
    altered = text[:at] + "1111.11" + text[at + len(figure) :]
    copy = tmp_path / "benchmarks.md"
    copy.write_text(altered, encoding="utf-8")
    others = [f"{other}={tmp_path / 'absent.md'}" for other in page.PAGES if other != lang]
    args = ["--check", "--page", f"{lang}={copy}"] + [f"--page={o}" for o in others]
    assert page.main(args) == 1
    out = capsys.readouterr().out
    assert "1111.11" in out and figure in out
    # without --check the copy is rewritten to the figures of the data
    assert page.main(["--page", f"{lang}={copy}"] + [f"--page={o}" for o in others]) == 0
    assert copy.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("lang,path", _existing_pages())
def test_an_altered_figure_in_the_prose_is_caught(lang, path, tmp_path, capsys):
    figures = [f() for plang, f in page.PROSE if plang == lang]
    assert figures, f"no prose figure of the {lang} page is checked"
    text = path.read_text(encoding="utf-8")
    copy = tmp_path / "benchmarks.md"
    # one digit of the figure changed
    at = next(i for i, ch in enumerate(figures[0]) if ch.isdigit())
    altered = figures[0][:at] + str((int(figures[0][at]) + 1) % 10) + figures[0][at + 1 :]
    copy.write_text(text.replace(figures[0], altered), encoding="utf-8")
    others = [f"--page={o}={tmp_path / 'absent.md'}" for o in page.PAGES if o != lang]
    assert page.main(["--check", "--page", f"{lang}={copy}", *others]) == 1
    assert figures[0] in capsys.readouterr().out


def test_a_changed_json_changes_the_table(monkeypatch):
    real = page.load

    def load(name):
        data = real(name)
        if name == "tune_study_default_map.json":
            data["study"]["values"] = [400.0] * len(data["study"]["values"])
        return data

    monkeypatch.setattr(page, "load", load)
    out = page.TABLES["tune-study-default"](page.WORDS["en"])
    n = len(real("tune_study_default_map.json")["study"]["values"])
    assert f"{n} of the {n} score above 300" in out


def test_a_benchmark_file_with_the_old_yardstick_keys_reads(tmp_path, monkeypatch):
    """The docs/*.json written before the yardstick's rename (``oracle_mean_score``, ...) read under the new keys, at
    any depth; a file with the new keys reads the same."""
    old = {
        "held_out_oracle_mean_score": 380.5,
        "exhaustive_9": {"oracle_mean_score": 390.0, "mean_gap_to_oracle": 2.0, "max_gap_to_oracle": 9.0},
        "games": [{"score": 1.0, "oracle_score": 3.0, "oracle_steps": 40}],
    }
    new = {
        "held_out_yardstick_mean_score": 380.5,
        "exhaustive_9": {"yardstick_mean_score": 390.0, "mean_gap_to_yardstick": 2.0, "max_gap_to_yardstick": 9.0},
        "games": [{"score": 1.0, "yardstick_score": 3.0, "yardstick_steps": 40}],
    }
    (tmp_path / "old.json").write_text(json.dumps(old), encoding="utf-8")
    (tmp_path / "new.json").write_text(json.dumps(new), encoding="utf-8")
    monkeypatch.setattr(page, "DOCS", tmp_path)
    assert page.load("old.json") == page.load("new.json") == new


ABSOLUTE = re.compile(r"^(/|[A-Za-z]:[\\/]|~)")


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


@pytest.mark.parametrize("path", sorted(DOCS.glob("*.json")), ids=lambda p: p.name)
def test_no_json_under_docs_holds_an_absolute_path(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    bad = [s for s in _strings(data) if ABSOLUTE.match(s) or re.search(r"(^|\s)/(work|tmp|home|root|Users)/", s)]
    assert not bad, f"{path.name} records absolute paths: {bad[:5]}"
    outside = [s for s in _strings(data) if s.startswith("../")]
    assert not outside, f"{path.name} records paths outside the repository: {outside[:5]}"


def test_the_absolute_path_check_can_fail():
    assert any(ABSOLUTE.match(s) for s in _strings({"model": "/tmp/exp/r6.zip"}))
    assert not any(ABSOLUTE.match(s) for s in _strings({"model": "runs/quick/final_model.zip"}))
