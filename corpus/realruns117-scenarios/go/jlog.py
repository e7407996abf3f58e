"""Shared logging set-up: the training scripts log the way services shipped to a log
collector do (JSON lines), or plainly with timestamps."""
import logging
import os
import sys


def rank_info():
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def setup(fmt, name="train"):
    rank, world = rank_info()
    if fmt == "jsonlogger":
        from pythonjsonlogger.json import JsonFormatter
        h = logging.StreamHandler(sys.stdout)
        h.setFormatter(JsonFormatter(
            "%(asctime)s %(levelname)s %(name)s %(message)s",
            rename_fields={"levelname": "level", "asctime": "ts"},
            static_fields={"rank": rank, "world_size": world, "service": "trainer"}))
        root = logging.getLogger()
        root.handlers[:] = [h]
        root.setLevel(logging.INFO)
        logging.captureWarnings(True)
        log = logging.getLogger(name)

        def hook(t, v, tb):
            log.critical("uncaught exception, exiting", exc_info=(t, v, tb))
        sys.excepthook = hook
        return log
    if fmt == "structlog":
        import structlog
        structlog.configure(
            processors=[
                structlog.contextvars.merge_contextvars,
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.processors.dict_tracebacks if os.environ.get("SL_DICT_TB") else structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(),
            ],
            logger_factory=structlog.PrintLoggerFactory(sys.stdout),
        )
        structlog.contextvars.bind_contextvars(rank=rank, world_size=world)
        log = structlog.get_logger(name)

        def hook(t, v, tb):
            log.critical("uncaught_exception", exc_info=(t, v, tb))
        sys.excepthook = hook
        return _StructAdapter(log)
    if fmt == "loguru":
        from loguru import logger
        logger.remove()
        logger.add(sys.stdout, serialize=True, level="INFO", backtrace=False, diagnose=False)
        lg = logger.bind(rank=rank, world_size=world)

        def hook(t, v, tb):
            lg.opt(exception=(t, v, tb)).critical("Uncaught exception in training loop")
        sys.excepthook = hook
        return _LoguruAdapter(lg)
    # plain stdlib logging with timestamps
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    logging.captureWarnings(True)
    return logging.getLogger(name)


class _StructAdapter:
    def __init__(self, lg):
        self.lg = lg

    def info(self, msg, *a, **kw):
        self.lg.info(msg % a if a else msg, **kw.pop("extra", {}), **kw)

    def warning(self, msg, *a, **kw):
        self.lg.warning(msg % a if a else msg, **kw.pop("extra", {}), **kw)

    def error(self, msg, *a, **kw):
        self.lg.error(msg % a if a else msg, **kw.pop("extra", {}), **kw)

    def exception(self, msg, *a, **kw):
        self.lg.exception(msg % a if a else msg, **kw.pop("extra", {}), **kw)


class _LoguruAdapter:
    def __init__(self, lg):
        self.lg = lg

    def _m(self, level, msg, a, kw):
        extra = kw.pop("extra", {})
        self.lg.bind(**extra).log(level, msg % a if a else msg)

    def info(self, msg, *a, **kw):
        self._m("INFO", msg, a, kw)

    def warning(self, msg, *a, **kw):
        self._m("WARNING", msg, a, kw)

    def error(self, msg, *a, **kw):
        self._m("ERROR", msg, a, kw)

    def exception(self, msg, *a, **kw):
        kw.pop("extra", None)
        self.lg.opt(exception=True).error(msg % a if a else msg)
