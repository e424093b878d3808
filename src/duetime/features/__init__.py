"""Features: each a package behind the seam of :mod:`duetime.features.base` (what it declares
at start, the listeners and loops it adds to a worker), which the worker iterates without naming
any of them."""
