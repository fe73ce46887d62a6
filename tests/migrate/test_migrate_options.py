"""One options record for every migration function (:class:`MigrateOptions`), checked when it is
made, with messages that name the field, the value and what is valid; ``finish_in_place`` takes
none of them; the four functions share it."""

from __future__ import annotations

import inspect
import re

import pytest

from numcodecs_ext.cli import main
from numcodecs_ext.migrate import (
    MigrateOptions,
    finish_in_place,
    migrate,
    migrate_in_place,
    normalize,
    plan_migration,
)
from numcodecs_ext.store.errors import UsageError
from numcodecs_ext.store.verifying import VerifyPlan
from tests.helpers.migrate_helpers import build_v2

NUMPY_REPR = re.compile(r"np\.\w+\(")

#: field -> [(bad value, what the message must say besides the field's name)]
BAD = {
    "match": [("exact", "use one of decode, encode"), (None, "use one of decode, encode"),
              (1, "use one of decode, encode")],
    "wrap": [("yes", "give True or False"), (1, "give True or False"), (None, "give True or False")],
    "keep_numcodecs": [("no", "give True or False"), (0, "give True or False")],
    "rewrite": [(1.0, "give True or False"), ("True", "give True or False")],
    "progress": [("off", "give True or False"), ([], "give True or False")],
    "verify": [("most", "use full, sample:N"), ("sample:0", "N must be a whole number >= 1"),
               (True, "use full, sample:N"), (3, "use full, sample:N")],
    "nan_code": [("x", "give an integer code, 'auto', or ARRAY=CODE"), (1.5, "give an integer code"),
                 (True, "give an integer code"), ({"t": None}, "give an integer code or 'auto'"),
                 (["1", "2"], "is given twice")],
    "fill_code": [("auto!", "give an integer code, 'auto', or ARRAY=CODE"), (object, "give an integer code")],
    "storage_options": [("anon", "give a mapping"), (["anon"], "give a mapping")],
}


def test_every_field_is_checked() -> None:
    names = [p for p in inspect.signature(MigrateOptions).parameters]
    assert sorted(names) == sorted(BAD)


@pytest.mark.parametrize(("name", "value", "valid"), [(n, v, w) for n, cases in BAD.items() for v, w in cases])
def test_a_bad_value_names_the_field_the_value_and_what_is_valid(name, value, valid) -> None:
    with pytest.raises(UsageError) as caught:
        MigrateOptions(**{name: value})
    message = str(caught.value)
    assert message.startswith(f"{name}=") or message.startswith(f"{name} "), message
    assert valid in message, message
    assert len(message) <= 200 and not NUMPY_REPR.search(message), message
    shown = value.__name__ if isinstance(value, type) else repr(value) if not isinstance(value, (dict, list)) \
        else None
    if shown is not None and name not in ("verify", "nan_code", "fill_code"):
        assert shown in message, message


def test_good_values_are_kept_in_one_form() -> None:
    options = MigrateOptions(verify="sample:3", nan_code={"/t/": 7, "u": "auto"}, fill_code=["a=auto", "65535"])
    assert options.verify.mode == "sample" and options.verify.count == 3
    assert options.nan_code == {"t": 7, "u": "auto"} and options.fill_code == {"a": "auto", None: 65535}
    assert MigrateOptions(nan_code="0x10").nan_code == {None: 16}
    assert MigrateOptions().verify.complete and MigrateOptions().nan_code == {}
    plan = VerifyPlan("none")
    assert MigrateOptions(verify=plan).verify is plan
    with pytest.raises(Exception, match="cannot assign"):  # frozen
        options.wrap = True  # type: ignore[misc]


def test_keywords_build_or_replace_the_record(tmp_path) -> None:
    base = MigrateOptions(wrap=True, verify=VerifyPlan("full", seed=1))
    assert MigrateOptions.make(base) is base
    assert MigrateOptions.make(base, rewrite=True) == MigrateOptions(wrap=True, rewrite=True, verify=base.verify)
    with pytest.raises(UsageError, match="verify_result: not a migration option; the options are fill_code, "):
        MigrateOptions.make(None, verify_result=False)
    with pytest.raises(UsageError, match="options='full' is not valid; give a MigrateOptions or None"):
        MigrateOptions.make("full")  # type: ignore[arg-type]


def test_the_functions_share_the_record(tmp_path) -> None:
    src = tmp_path / "v2.zarr"
    build_v2(src)
    options = MigrateOptions(verify="none", keep_numcodecs=True)
    planned = plan_migration(src, None, options)
    assert planned.dry_run and not (tmp_path / "v3.zarr").exists()
    assert migrate(src, tmp_path / "v3.zarr", options).verification() == "not verified"
    assert migrate(src, tmp_path / "v3b.zarr", options, verify="full").verified  # a keyword replaces a field
    assert not migrate(src, tmp_path / "v3c.zarr", options=options).verified
    with pytest.raises(UsageError, match="rewrite"):
        migrate_in_place(src, options, rewrite=True)
    with pytest.raises(UsageError, match="dst=None"):
        migrate(src, None, options)
    with pytest.raises(UsageError, match="keep_numcodecs=True: not an option of normalize"):
        normalize(tmp_path / "v3.zarr", options)
    assert migrate_in_place(src, options).in_place
    assert finish_in_place(src).verified


def test_finish_in_place_takes_no_migration_option(tmp_path, capsys) -> None:
    """It has no such parameters: Python refuses them as for any function; the command line
    says that --finish takes no migration options (exit 2), and nothing is removed."""
    assert list(inspect.signature(finish_in_place).parameters) == ["src", "dry_run", "progress", "storage_options"]
    src = tmp_path / "v2.zarr"
    build_v2(src)
    migrate_in_place(src)
    for name, value in [("match", "encode"), ("wrap", True), ("keep_numcodecs", True), ("rewrite", True),
                        ("nan_code", "auto"), ("fill_code", 7), ("verify", "none"), ("options", None)]:
        with pytest.raises(TypeError, match=name):
            finish_in_place(src, **{name: value})
    with pytest.raises(TypeError):
        finish_in_place(src, MigrateOptions())  # type: ignore[misc]
    for flags in (["--wrap"], ["--match", "encode"], ["--keep-numcodecs"], ["--rewrite"], ["--nan-code", "auto"],
                  ["--fill-code", "7"]):
        assert main(["migrate", str(src), "--finish", *flags]) == 2, flags
        assert "it takes no migration options" in capsys.readouterr().err, flags
    assert (src / ".zgroup").exists()
    assert main(["migrate", str(src), "--finish", "-q"]) == 0 and not (src / ".zgroup").exists()
