"""The compressors ``convert`` can write: only codecs of the zarr specification, so that zarr's
built-ins, zarrs and every other implementation read the result.

``blosc`` (the zarr v3 core codec, with its own byte or bit shuffle over the stored type's
size), ``zstd``, ``gzip``, or ``none``. ``numcodecs.shuffle`` is not a spec codec, so a shuffle
comes only with blosc. The default, blosc with zstd inside at level 1 in blocks of 1 MiB, and the
``auto`` shuffle (a byte shuffle for types of two bytes and more, none for one-byte types, where
a byte shuffle does nothing and a bit shuffle makes noise-like data larger), keeps CF-packed
integers within 2% of the size of the netCDF file they came from, noise-like data included (zlib
level 1 to 9 with netCDF-4's shuffle). The block size, not the level, is what keeps them small:
blosc's automatic blocks at level 1 made noise-like int16 1.07 times the file, and level 7 (blosc's
zstd level 13) bought the same size as 1 MiB blocks at level 1 for 10 to 20 times the time.
``benchmarks/bench_convert.py`` measures it against the alternatives, and the table is in the docs.

Examples
--------
>>> c = Compressor.parse("blosc", level=5, shuffle="bit")
>>> c.describe(2)
'blosc(zstd, level 5, bitshuffle over 2-byte items, 1 MiB blocks)'
>>> c.v3(2).to_dict()["configuration"]["typesize"]
2
>>> DEFAULT.describe(2)
'blosc(zstd, level 1, byte shuffle over 2-byte items, 1 MiB blocks)'
>>> DEFAULT.describe(1)
'blosc(zstd, level 1, no shuffle over 1-byte items, 1 MiB blocks)'
>>> Compressor.parse("gzip", shuffle="byte")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
numcodecs_ext.store.errors.UsageError: --shuffle byte: only blosc shuffles (the zarr spec has no shuffle codec
for gzip); use --compressor blosc, or --shuffle none
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..store.errors import UsageError

__all__ = ["BLOCKSIZE", "COMPRESSORS", "DEFAULT", "SHUFFLES", "Compressor"]

#: blosc's block (bytes): large blocks find what noise-like data shares at a cheap level
BLOCKSIZE = 1 << 20

#: name -> (allowed levels, default level)
COMPRESSORS = {"blosc": (range(10), 1), "zstd": (range(-7, 23), 3), "gzip": (range(10), 1),
               "none": (range(1), 0)}
SHUFFLES = ("auto", "byte", "bit", "none")
_BLOSC_SHUFFLE = {"byte": "shuffle", "bit": "bitshuffle", "none": "noshuffle"}
_BLOSC_CNAMES = ("zstd", "lz4", "lz4hc", "blosclz", "zlib")


@dataclass(frozen=True)
class Compressor:
    """One compressor for every array: ``name`` in :data:`COMPRESSORS`, its ``level``, blosc's
    ``shuffle``, inner ``cname`` and ``blocksize`` (bytes; 0: blosc's own choice)."""

    name: str = "blosc"
    level: int = 1
    shuffle: str = "auto"
    cname: str = "zstd"
    blocksize: int = BLOCKSIZE

    @classmethod
    def parse(cls, name: str = "blosc", *, level: int | None = None, shuffle: str | None = None,
              cname: str = "zstd", blocksize: int | None = None) -> Compressor:
        """A validated choice; UsageError names the option, the value and what is valid."""
        if name not in COMPRESSORS:
            raise UsageError(f"--compressor {name!r}: valid choices are {', '.join(COMPRESSORS)}")
        levels, default = COMPRESSORS[name]
        if level is None:
            level = default
        elif name == "none":
            raise UsageError(f"--level {level}: --compressor none has no level")
        elif isinstance(level, bool) or not isinstance(level, int) or level not in levels:
            raise UsageError(f"--level {level!r}: {name} levels are {levels.start} to {levels.stop - 1}")
        if shuffle is None:
            shuffle = "auto" if name == "blosc" else "none"
        if shuffle not in SHUFFLES:
            raise UsageError(f"--shuffle {shuffle!r}: valid choices are {', '.join(SHUFFLES)}")
        if shuffle != "none" and name != "blosc":
            raise UsageError(f"--shuffle {shuffle}: only blosc shuffles (the zarr spec has no shuffle codec "
                             f"for {name}); use --compressor blosc, or --shuffle none")
        if cname not in _BLOSC_CNAMES:
            raise UsageError(f"blosc cname {cname!r}: valid names are {', '.join(_BLOSC_CNAMES)}")
        if blocksize is None:
            blocksize = BLOCKSIZE if name == "blosc" else 0
        elif name != "blosc" and blocksize:
            raise UsageError(f"blocksize {blocksize!r}: only blosc has blocks; leave it out for {name}")
        elif isinstance(blocksize, bool) or not isinstance(blocksize, int) or not (
                blocksize == 0 or (1 << 10 <= blocksize <= 1 << 30 and blocksize & (blocksize - 1) == 0)):
            raise UsageError(f"blocksize {blocksize!r}: valid are 0 (blosc's own choice) or a power of two "
                             "from 1 KiB to 1 GiB")
        return cls(name, level, shuffle, cname, blocksize)

    def shuffle_for(self, itemsize: int) -> str:
        """The shuffle for items of ``itemsize`` bytes (``auto``: byte, none for one-byte items,
        where a byte shuffle does nothing and a bit shuffle makes noise-like data larger)."""
        if self.shuffle != "auto":
            return self.shuffle
        return "none" if itemsize == 1 else "byte"

    def describe(self, itemsize: int) -> str:
        """In words, for the summary."""
        if self.name == "none":
            return "no compression"
        if self.name != "blosc":
            return f"{self.name} level {self.level}"
        how = {"byte": "byte shuffle", "bit": "bitshuffle", "none": "no shuffle"}[self.shuffle_for(itemsize)]
        size = self.blocksize
        blocks = "" if not size else (f", {size >> 20} MiB blocks" if size >= 1 << 20 else f", {size >> 10} KiB blocks")
        return f"blosc({self.cname}, level {self.level}, {how} over {itemsize}-byte items{blocks})"

    def v3(self, itemsize: int) -> Any:
        """The zarr v3 codec (None for ``none``); blosc's typesize is the stored item size."""
        from zarr.codecs import BloscCodec, GzipCodec, ZstdCodec

        if self.name == "blosc":
            return BloscCodec(cname=self.cname, clevel=self.level, shuffle=_BLOSC_SHUFFLE[self.shuffle_for(itemsize)],
                              typesize=max(1, itemsize), blocksize=self.blocksize)
        if self.name == "zstd":
            return ZstdCodec(level=self.level)
        if self.name == "gzip":
            return GzipCodec(level=self.level)
        return None

    def v2(self, itemsize: int) -> Any:
        """The numcodecs compressor for zarr v2 (None for ``none``); blosc shuffles over the item
        size of the buffer the filters hand it, the stored type's."""
        import numcodecs

        if self.name == "blosc":
            shuffle = {"byte": numcodecs.Blosc.SHUFFLE, "bit": numcodecs.Blosc.BITSHUFFLE,
                       "none": numcodecs.Blosc.NOSHUFFLE}[self.shuffle_for(itemsize)]
            return numcodecs.Blosc(cname=self.cname, clevel=self.level, shuffle=shuffle, blocksize=self.blocksize)
        if self.name == "zstd":
            return numcodecs.Zstd(level=self.level)
        if self.name == "gzip":
            return numcodecs.GZip(level=self.level)
        return None

    def encoding(self, zarr_format: int, itemsize: int) -> dict[str, Any]:
        """The ``compressors`` key of an xarray ``to_zarr`` encoding."""
        codec = self.v3(itemsize) if zarr_format == 3 else self.v2(itemsize)
        return {"compressors": () if codec is None else (codec,)}


DEFAULT = Compressor()
