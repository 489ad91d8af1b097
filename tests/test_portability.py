"""What differs on Windows (where the competition client runs) and macOS, checked by design on any system: names
Windows cannot create, drive-letter storage URLs, Optuna's journal lock without symlinks, POSIX paths in manifests."""

from __future__ import annotations

from pathlib import Path

import pytest
from optuna.storages.journal import JournalFileOpenLock

from sb3_realm.atomic import check_output_file, check_portable_path, check_writable_folder
from sb3_realm.training.config import load_config
from sb3_realm.tuning.storage import make_storage, storage_path


@pytest.mark.parametrize("path", ["runs/a", "runs/ppo-v1.2_x", "C:/runs/x", "C:\\runs\\x", "/tmp/x/y", ".", "../x"])
def test_portable_paths_pass(path):
    assert check_portable_path(path) == Path(path)


@pytest.mark.parametrize("path, match", [
    ("runs/con", "'con' is a reserved device name"),
    ("runs/NUL.txt", "'NUL.txt' is a reserved device name"),
    ("runs/com3", "'com3' is a reserved device name"),
    ("runs/a:b", "'a:b' holds ':'"),
    ("runs/what?", "'what\\?' holds '\\?'"),
    ("runs/x<y>", "holds '<', '>'"),
    ('runs/"q"', "holds '\"'"),
    ("runs/a|b", "holds '\\|'"),
    ("runs/trail.", "ends with a dot or a space"),
    ("runs/trail ", "ends with a dot or a space"),
])
def test_names_windows_cannot_create_are_refused(path, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        check_portable_path(path, "out")
    with pytest.raises(ValueError, match=match):  # every output check of the package goes through it
        check_writable_folder(tmp_path / path)
    with pytest.raises(ValueError, match=match):
        check_output_file(tmp_path / path / "report.json")
    with pytest.raises(ValueError, match=f"out '{path[:4]}.*{match}"):
        load_config("configs/realm/tiny.yaml", [f"out={path!r}"])
    assert not (tmp_path / "runs").exists()


def test_a_study_name_windows_cannot_create_is_refused():
    from sb3_realm.tuning import StudyConfig

    base = load_config("configs/realm/tiny.yaml")
    with pytest.raises(ValueError, match=r"--study-name 'aux'.*reserved device name"):
        StudyConfig(kind="rewards", base=base, name="aux", storage="sqlite:///runs/s.db", out="runs/s").validate()
    with pytest.raises(ValueError, match=r"--study-name 'a:b'.*holds ':'"):
        StudyConfig(kind="rewards", base=base, name="a:b", storage="sqlite:///runs/s.db", out="runs/s").validate()


@pytest.mark.parametrize("url, path", [
    ("journal:///C:/runs/study.log", "C:/runs/study.log"),
    ("journal:///c:\\runs\\study.log", "c:\\runs\\study.log"),
    ("sqlite:///C:/runs/study.db", "C:/runs/study.db"),
    ("sqlite:///D:\\studies\\s.db", "D:\\studies\\s.db"),
    ("journal://runs/study.log", "runs/study.log"),
    ("journal:///srv/study.log", "/srv/study.log"),
    ("sqlite:///runs/study.db", "runs/study.db"),
    ("sqlite:////srv/study.db", "/srv/study.db"),
    ("runs/study.log", "runs/study.log"),
])
def test_storage_urls_with_drive_letters_name_the_right_file(url, path):
    assert storage_path(url) == Path(path)


def test_the_journal_locks_with_an_open_file_not_a_symlink(tmp_path):
    storage = make_storage(f"journal://{tmp_path / 'study.log'}", max_retry=0)
    assert isinstance(storage._backend._lock, JournalFileOpenLock)
