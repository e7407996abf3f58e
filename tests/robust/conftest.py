"""Hypothesis profiles for the hostile-input properties: a short run in `make test`, a long
one in `make fuzz` (HYPOTHESIS_PROFILE=fuzz). Time bounds are per MB and generous: they
catch quadratic or exponential work, not a loaded machine."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
           "derandomize": False, "print_blob": True}
settings.register_profile("robust-ci", max_examples=6, **_COMMON)  # type: ignore[arg-type]
settings.register_profile("fuzz", max_examples=300, **_COMMON)  # type: ignore[arg-type]
PROFILE = "fuzz" if os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" else "robust-ci"
