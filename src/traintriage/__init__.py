"""traintriage: why did this training run die? Root cause, first failed rank, collateral, fix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Diagnosis", "__version__", "diagnose", "load_kb"]

if TYPE_CHECKING:
    from traintriage.kb.loader import load_kb
    from traintriage.pipeline import diagnose
    from traintriage.report.model import Diagnosis


def __getattr__(name: str) -> Any:
    """Deferred imports keep `import traintriage` and `traintriage --help` instant."""
    if name == "diagnose":
        from traintriage.pipeline import diagnose

        return diagnose
    if name == "Diagnosis":
        from traintriage.report.model import Diagnosis

        return Diagnosis
    if name == "load_kb":
        from traintriage.kb.loader import load_kb

        return load_kb
    raise AttributeError(name)
