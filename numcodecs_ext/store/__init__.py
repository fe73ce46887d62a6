"""The store layer every tool stands on: where data lives and how it is written safely.

:mod:`~numcodecs_ext.store.storage` (a local path, an fsspec URL or a zarr store object as one
``Location``, made of what :mod:`~numcodecs_ext.store.targets` reads in it, with the storage
options of :mod:`~numcodecs_ext.store.options`, over the backends of
:mod:`~numcodecs_ext.store.backends` and :mod:`~numcodecs_ext.store.zarrstores`, which share
:mod:`~numcodecs_ext.store.base`), :mod:`~numcodecs_ext.store.staging` (metadata last),
:mod:`~numcodecs_ext.store.journal` (what a resumable write has finished),
:mod:`~numcodecs_ext.store.parallel` (chunk-wise work on a dask cluster or this process),
:mod:`~numcodecs_ext.store.progress`, :mod:`~numcodecs_ext.store.verifying` (``--verify``) and
the errors every tool raises (:mod:`~numcodecs_ext.store.errors`,
:mod:`~numcodecs_ext.store.faults`). Above :mod:`numcodecs_ext.zarr3`, below ``cf`` and ``migrate``.

Imports within it run one way, bottom up: ``errors`` < ``faults``, ``progress``, ``base``,
``options``, ``prefixed`` < ``backends``, ``zarrstores`` < ``targets`` < ``storage`` <
``staging``, ``journal``; ``parallel`` and ``verifying`` stand on ``errors``, ``faults`` and
``progress`` only.
"""
