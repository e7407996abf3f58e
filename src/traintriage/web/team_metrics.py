"""Prometheus metrics of the team service: requests, latencies, diagnoses by class, quota
rejections, alert deliveries. With several workers, set PROMETHEUS_MULTIPROC_DIR (an empty
directory) and /metrics adds up every worker's figures."""

from __future__ import annotations

import os

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client import multiprocess as prometheus_multiprocess

REQUESTS = Counter("traintriage_http_requests_total", "HTTP requests answered", ["method", "route", "status"])
LATENCY = Histogram("traintriage_http_request_seconds", "Time to answer an HTTP request", ["route"],
                    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
DIAGNOSES = Counter("traintriage_diagnoses_total", "Diagnoses stored, by root cause", ["root_cause"])
QUOTA_REJECTIONS = Counter("traintriage_quota_rejections_total", "Requests refused for quota", ["caller_kind"])
ALERT_DELIVERIES = Counter("traintriage_alert_deliveries_total", "Alert deliveries, by outcome", ["status"])


def exposition() -> tuple[bytes, str]:
    """The metrics text and its content type."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        prometheus_multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST
