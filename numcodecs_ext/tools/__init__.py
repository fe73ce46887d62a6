"""The tools that report on stores, above ``cf`` and ``migrate``: ``inspect`` (what a store holds,
codecs in words, who reads them, what an interrupted run left), ``info`` and the ``demo``.

Each is a Python function first; :mod:`numcodecs_ext.cli` gives them their command lines.
"""
