"""Location on every backend: a local disk, fsspec's memory://, S3 (moto's server on
127.0.0.1), zarr's MemoryStore, zarr's ObjectStore over S3 (obstore), and ZipStore (read)."""

from __future__ import annotations

import os
import pickle
import uuid
import zipfile

import numpy as np
import pytest
import zarr

from numcodecs_ext.store.errors import ToolError, UsageError
from numcodecs_ext.store.staging import StagedStore
from numcodecs_ext.store.storage import Location, ObjectNotFound, StorageError

KINDS = ["local", "memory-url", "s3", "zarr-memory", "obstore-s3"]


@pytest.fixture(params=KINDS)
def place(request, tmp_path):
    """A factory of empty Locations of one kind: ``place(name)``."""
    kind = request.param
    if kind == "local":
        return lambda name: Location.parse(tmp_path / name)
    if kind == "memory-url":
        prefix = f"memory://t-{uuid.uuid4().hex[:8]}"
        return lambda name: Location.parse(f"{prefix}/{name}")
    bucket = request.getfixturevalue("s3")
    if kind == "s3":
        return lambda name: Location.parse(bucket.url(name))
    if kind == "zarr-memory":
        return lambda name: Location.parse(zarr.storage.MemoryStore()).child(name)
    import obstore.store as obstore  # the test extra installs it: never skipped
    return lambda name: Location.parse(zarr.storage.ObjectStore(obstore.S3Store(
        bucket.name, prefix=name, client_options={"allow_http": True})))


def test_write_read_walk(place):
    loc = place("store")
    loc.write("a/zarr.json", b"{}")
    loc.write("a/c/0/0", b"x" * 10)
    loc.write("b", b"yy")
    assert loc.read("a/c/0/0") == b"x" * 10
    assert loc.walk().files == {"a/zarr.json": 2, "a/c/0/0": 10, "b": 2}
    assert loc.walk("a/c").files == {"a/c/0/0": 10}  # keys stay relative to the location
    assert loc.child("a").walk().files == {"zarr.json": 2, "c/0/0": 10}
    assert loc.size("b") == 2
    loc.write("b", b"zzz")  # replaced whole
    assert loc.read("b") == b"zzz"
    many = loc.read_many(["b", "a/zarr.json", "nothing"])
    assert many["b"] == b"zzz" and many["a/zarr.json"] == b"{}"
    assert isinstance(many["nothing"], ObjectNotFound)


def test_prefixes_are_directories(place):
    """On object stores a store root is a prefix: isdir says whether objects lie below it,
    and a sibling that merely starts with the same letters is another thing."""
    base = place("root")
    base.write("store/a/zarr.json", b"{}")
    base.write("store2/x", b"1")
    base.write("sto", b"1")
    store = base.child("store")
    assert store.exists() and store.isdir() and not store.isfile()
    assert base.child("sto").isfile() and not base.child("sto").isdir()
    assert not base.child("st").exists()
    assert sorted(store.walk().files) == ["a/zarr.json"]
    assert not base.child("nothing").exists() and base.child("nothing").walk().files == {}


def test_missing_object(place):
    loc = place("m")
    loc.write("k", b"1")
    with pytest.raises(ObjectNotFound) as e:
        loc.read("absent/zarr.json")
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, ToolError)
    assert str(e.value).startswith(f"{loc.display}/absent/zarr.json: no such object")


def test_copy_remove(place):
    loc = place("c")
    loc.write("a", b"abc")
    loc.copy_to("a", loc, "b/a")
    other = place("d")
    loc.copy_to("a", other, "x")
    loc.copy_many(["a", "b/a"], other, ["y/1", "y/2"])
    assert other.walk().files == {"x": 3, "y/1": 3, "y/2": 3}
    other.remove("x")
    other.remove("x")  # gone already: nothing to do
    assert sorted(other.walk().files) == ["y/1", "y/2"]
    other.remove_tree("y")
    assert other.walk().files == {}
    assert loc.read("b/a") == b"abc"


def test_copy_across_backends(place, tmp_path):
    """Between two kinds of storage the bytes pass through this process, whole."""
    src = Location.parse(tmp_path / "src")
    src.write("k/0", bytes(range(256)))
    dst = place("dst")
    assert not src.server_side(dst) or dst.is_local
    src.copy_to("k/0", dst, "k/0")
    dst.copy_to("k/0", src, "back")
    assert dst.read("k/0") == src.read("back") == bytes(range(256))


def test_overlaps(place, tmp_path):
    a = place("ov")
    a.write("x/zarr.json", b"{}")
    assert a.overlaps(a) and a.child("x").overlaps(a) and a.overlaps(a.child("x"))
    assert not a.child("x").overlaps(a.child("xy"))
    assert not a.overlaps(Location.parse(tmp_path / "elsewhere")) or a.is_local


def test_zarr_through_staged_store(place):
    """zarr writes through the staged store (chunks at once, metadata at commit) and reads
    back through the location's own zarr store."""
    loc = place("z.zarr")
    staged = StagedStore(loc)
    z = zarr.create_array(staged, name="v", shape=(6, 4), chunks=(3, 2), dtype="int16", fill_value=-1)
    z[:] = np.arange(24, dtype="int16").reshape(6, 4)
    assert not any(k.endswith("zarr.json") for k in loc.walk().files)
    assert staged.commit() == ["v/zarr.json", "zarr.json"]
    got = zarr.open_array(loc.zarr_store(read_only=True), path="v", mode="r")[:]
    assert np.array_equal(got, np.arange(24, dtype="int16").reshape(6, 4))
    assert len([k for k in loc.walk().files if "/c/" in k]) == 4


def test_pickle(place):
    loc = place("p")
    loc.write("k", b"v")
    again = pickle.loads(pickle.dumps(loc.child("k")))
    assert again.display == loc.child("k").display and repr(again) == repr(loc.child("k"))
    if loc.is_shared:
        assert again.read("") == b"v" if again.kind == "zarr" else True
        assert pickle.loads(pickle.dumps(loc)).read("k") == b"v"


# -- local specifics --------------------------------------------------------------------------


def test_local_walk_survives_loops_and_dangling_links(tmp_path):
    root = tmp_path / "s"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f").write_bytes(b"1")
    os.symlink(root, root / "a" / "loop")
    os.symlink(tmp_path / "nowhere", root / "dangling")
    listing = Location.parse(root).walk()
    assert listing.files == {"a/f": 1}
    assert {why for _, why in listing.problems} == {"a dangling link",
                                                   "a link back into the store (a loop): skipped"}


def test_local_overlap_through_a_link(tmp_path):
    (tmp_path / "src").mkdir()
    os.symlink(tmp_path / "src", tmp_path / "link")
    assert Location.parse(tmp_path / "link" / "sub").overlaps(Location.parse(tmp_path / "src"))


def test_memory_store_from_python():
    """zarr's MemoryStore as a source or destination: the location sees what zarr wrote, and
    overlapping uses of one store are recognised (read-only views share its contents)."""
    store = zarr.storage.MemoryStore()
    zarr.create_array(store, name="a", shape=(4,), chunks=(2,), dtype="f4", fill_value=0)[:] = 1.5
    loc = Location.parse(store)
    assert loc.kind == "zarr" and not loc.is_shared
    assert sorted(loc.walk().files) == ["a/c/0", "a/c/1", "a/zarr.json", "zarr.json"]
    assert loc.overlaps(Location.parse(store.with_read_only(True)).child("a"))
    assert not loc.overlaps(Location.parse(zarr.storage.MemoryStore()))
    assert loc.child("a").zarr_store(read_only=True) is not None
    assert zarr.open_array(loc.child("a").zarr_store(), mode="r")[:].tolist() == [1.5] * 4
    with pytest.raises(UsageError, match="read-only"):
        Location.parse(store.with_read_only(True)).zarr_store(read_only=False)


def test_zip_store_reads(tmp_path):
    path = tmp_path / "s.zip"
    with zarr.storage.ZipStore(path, mode="w") as store:
        zarr.create_array(store, shape=(3,), dtype="i4", fill_value=0)[:] = [1, 2, 3]
    assert zipfile.is_zipfile(path)
    with zarr.storage.ZipStore(path, mode="r") as store:
        loc = Location.parse(store)
        assert sorted(loc.walk().files) == ["c/0", "zarr.json"]
        assert loc.isfile("zarr.json") and loc.isdir() and loc.overlaps(Location.parse(store))
        assert zarr.open_array(loc.zarr_store(), mode="r")[:].tolist() == [1, 2, 3]
        with pytest.raises(StorageError):
            loc.write("x", b"1")


def test_store_path_and_fsspec_store(tmp_path):
    store = zarr.storage.MemoryStore()
    loc = Location.parse(zarr.storage.StorePath(store, "a/b"))
    loc.write("k", b"1")
    assert Location.parse(store).walk().files == {"a/b/k": 1}
    fss = zarr.storage.FsspecStore.from_url(f"memory://fss-{uuid.uuid4().hex[:6]}/x")
    floc = Location.parse(fss)
    floc.write("k", b"2")
    assert floc.kind == "fsspec" and floc.read("k") == b"2"


def test_unknown_things_refused():
    with pytest.raises(UsageError, match="unknown URL scheme 'nosuch'"):
        Location.parse("nosuch://x/y")
    with pytest.raises(UsageError, match="not a path, URL or zarr store"):
        Location.parse(42)


# -- overlap with store objects whose place must be worked out (review3) ---------------------------


def _v2_source(path) -> None:
    import numcodecs

    a = zarr.create_array(str(path), name="t", shape=(20,), chunks=(10,), dtype="f8", fill_value=0.0,
                          zarr_format=2, filters=[numcodecs.FixedScaleOffset(offset=10, scale=100, dtype="f8",
                                                                             astype="i2")])
    a[:] = 10 + np.arange(20) / 7


@pytest.mark.parametrize("inner", ["sub", ".", "t"])
def test_migrate_refuses_an_obstore_local_store_inside_the_source(tmp_path, inner):
    """A zarr ObjectStore over obstore's LocalStore is a place on the local disk: at the source,
    or inside it, migrate refuses it (and writes nothing there)."""
    import obstore.store as obstore

    from numcodecs_ext.migrate import migrate

    src = tmp_path / "s.zarr"
    _v2_source(src)
    (src / "sub").mkdir()
    before = sorted(p.relative_to(src) for p in src.rglob("*"))
    dst = zarr.storage.ObjectStore(obstore.LocalStore(str(src / inner)))
    with pytest.raises(UsageError, match="overlap"):
        migrate(str(src), dst)
    assert sorted(p.relative_to(src) for p in src.rglob("*")) == before


def test_obstore_local_and_zip_stores_are_places_on_the_disk(tmp_path):
    import obstore.store as obstore

    (tmp_path / "src" / "sub").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    os.symlink(tmp_path / "src", tmp_path / "link")
    src = Location.parse(tmp_path / "src")
    inside = Location.parse(zarr.storage.ObjectStore(obstore.LocalStore(str(tmp_path / "link" / "sub"))))
    assert inside.overlaps(src) and src.overlaps(inside)
    assert not Location.parse(zarr.storage.ObjectStore(obstore.LocalStore(str(tmp_path / "other")))).overlaps(src)
    # a ZipStore is the zip file on the disk: inside a source directory, it overlaps it
    with zarr.storage.ZipStore(tmp_path / "src" / "out.zip", mode="w") as zipped:
        zarr.create_array(zipped, shape=(1,), dtype="i1", fill_value=0)
        assert Location.parse(zipped).overlaps(src)
        assert not Location.parse(zipped).overlaps(Location.parse(tmp_path / "other"))
    # an in-memory store is nowhere else
    memory = Location.parse(zarr.storage.ObjectStore(obstore.MemoryStore()))
    assert not memory.overlaps(src) and memory.overlaps(memory.child("x"))


def test_a_wrapped_store_is_seen_through(tmp_path):
    import obstore.store as obstore

    (tmp_path / "src").mkdir()
    wrapped = zarr.storage.LoggingStore(zarr.storage.ObjectStore(obstore.LocalStore(str(tmp_path / "src"))))
    assert Location.parse(wrapped).overlaps(Location.parse(tmp_path / "src"))


def test_a_store_whose_place_cannot_be_known_is_refused(tmp_path):
    """A store class the tools do not know could keep its objects anywhere: overlaps refuses
    to answer (a UsageError saying to give a path or URL), never assumes "elsewhere"."""
    from zarr.abc.store import Store

    opaque = type("Opaque", (Store,), {name: (lambda *a, **k: None) for name in Store.__abstractmethods__})
    store = opaque(read_only=False)
    with pytest.raises(UsageError, match=r"cannot tell whether .* overlaps .*path or URL"):
        Location.parse(store).overlaps(Location.parse(tmp_path))
    with pytest.raises(UsageError, match="cannot tell"):
        Location.parse(tmp_path).overlaps(Location.parse(store))
    assert Location.parse(store).overlaps(Location.parse(store).child("a")), "one store overlaps itself"
