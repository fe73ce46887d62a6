"""numcodecs codec classes: thin layers over :mod:`numcodecs_ext.core`."""
