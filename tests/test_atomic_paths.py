"""The two guards every caller shares: a path read from a file stays inside its folder (:func:`inside`), and a
command removes only what it made (:func:`temp_names`, :func:`own_leftovers`, :func:`remove_made`)."""

from __future__ import annotations

import os
import tempfile

import pytest

from sb3_realm.atomic import OutsideFolder, hold_folder, inside, own_leftovers, remove_made, temp_names


@pytest.fixture()
def room(tmp_path):
    """``tmp_path/room`` with a file in it, a victim beside it, and links out of it (to a file and to a folder)."""
    room = tmp_path / "room"
    (room / "sub").mkdir(parents=True)
    (room / "sub" / "shard.npz").write_bytes(b"x")
    (tmp_path / "victim.txt").write_text("keep", encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "victim.txt", room / "file_link")
    os.symlink(tmp_path / "elsewhere", room / "folder_link")
    os.symlink(room / "sub", room / "inner_link")
    return room


def test_a_plain_relative_name_is_joined(room):
    assert inside(room, "sub/shard.npz") == room / "sub" / "shard.npz"
    assert inside(room, "inner_link/shard.npz") == room / "inner_link" / "shard.npz"  # a link that stays inside
    assert inside(room, "new.npz") == room / "new.npz"  # need not exist yet


@pytest.mark.parametrize("name", ["../victim.txt", "sub/../../victim.txt", "/etc/passwd", "C:\\victim.txt",
                                  "C:victim.txt", "sub\\..\\..\\victim.txt", "\\\\server\\share\\x", "", "  ",
                                  "file_link", "folder_link/anything"])
def test_a_name_that_leaves_the_folder_is_refused_naming_it_and_the_source(room, name):
    with pytest.raises(OutsideFolder) as caught:
        inside(room, name, "meta.json")
    message = str(caught.value)
    assert message.startswith("meta.json names ") and repr(name) in message and str(room) in message
    assert "\n" not in message


def test_temp_names_match_only_this_targets_own_temporaries(tmp_path):
    target = tmp_path / "up[ab]*"
    fd, mine = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=tmp_path)
    os.close(fd)
    made = tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=tmp_path)
    neighbours = [".up[ab]*.v2.abcdefgh.tmp", ".upa*.abcdefgh.tmp", ".up[ab]*.abcdefgh.tmp.keep",
                  ".up[ab]*.abc.tmp", "up[ab]*.abcdefgh.tmp"]
    for name in neighbours:
        (tmp_path / name).write_text("theirs", encoding="utf-8")
    os.symlink(tmp_path / neighbours[0], tmp_path / ".up[ab]*.zzzzzzzz.tmp")  # a link is never ours
    found = own_leftovers(tmp_path, temp_names(target.name))
    assert sorted(p.name for p in found) == sorted([os.path.basename(mine), os.path.basename(made)])
    assert own_leftovers(tmp_path / "missing", temp_names("x")) == []
    assert temp_names("ckpt", prefix=".tmp-", suffix="").fullmatch(".tmp-a1b2c3d_")
    assert not temp_names("ckpt", prefix=".tmp-", suffix="").fullmatch(".tmp-mine")


def test_remove_made_removes_inside_and_never_follows_a_link(room, tmp_path):
    (room / "sub" / "deeper").mkdir()
    os.symlink(tmp_path / "elsewhere", room / "sub" / "deeper" / "out")
    (tmp_path / "elsewhere" / "theirs.txt").write_text("keep", encoding="utf-8")
    remove_made(room / "folder_link", room)  # the link goes, not what it points to
    remove_made(room / "file_link", room)
    remove_made(room / "sub", room)  # a tree holding a link out: the link is unlinked, its target kept
    remove_made(room / "never_made", room)  # missing: no error
    assert sorted(p.name for p in room.iterdir()) == ["inner_link"]
    assert (tmp_path / "victim.txt").read_text(encoding="utf-8") == "keep"
    assert (tmp_path / "elsewhere" / "theirs.txt").read_text(encoding="utf-8") == "keep"


@pytest.mark.parametrize("outside", ["../victim.txt", "../elsewhere", ".", "folder_link/x"])
def test_remove_made_refuses_a_path_outside_its_folder(room, tmp_path, outside):
    (tmp_path / "elsewhere" / "x").write_text("keep", encoding="utf-8")
    with pytest.raises(OutsideFolder, match="refusing to remove"):
        remove_made(room / outside, room)
    assert (tmp_path / "victim.txt").exists() and (tmp_path / "elsewhere" / "x").exists() and room.is_dir()


def test_a_link_to_a_folder_and_the_folder_share_one_lock(tmp_path):
    from sb3_realm.atomic import FolderInUse

    (tmp_path / "run").mkdir()
    os.symlink(tmp_path / "run", tmp_path / "alias")
    with hold_folder(tmp_path / "run"), pytest.raises(FolderInUse, match="alias"), hold_folder(tmp_path / "alias"):
        pass
    with hold_folder(tmp_path / "alias"):  # released: it can be held again
        pass
