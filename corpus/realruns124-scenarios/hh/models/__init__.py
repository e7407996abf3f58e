from .cnn import build_model  # noqa: F401
