"""The counters behind ``GET /metrics`` (Prometheus text format 0.0.4)."""

from __future__ import annotations

import threading

__all__ = ["Metrics", "ROUTES", "count"]


def count(metrics: "Metrics | None", kind: str) -> None:
    """Count a refusal of ``kind`` (nothing without metrics)."""
    if metrics is not None:
        metrics.refuse(kind)


ROUTES = ("/v1/check", "/v1/add", "/v1/check-and-add", "/v1/stats", "/healthz", "/readyz", "/metrics",
          "/openapi.json", "/docs")


class Metrics:
    """Counters for ``GET /metrics`` (Prometheus text format 0.0.4), updated from any thread."""

    #: Upper bounds (seconds) of the latency histogram's buckets.
    BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

    def __init__(self):
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, int], int] = {}
        self.latency: dict[str, list] = {}   # route -> [bucket counts..., sum, count]
        self.errors: dict[str, int] = {}

    @staticmethod
    def route(path: str) -> str:
        if path in ROUTES:
            return path
        if path.startswith("/v1/documents/"):
            return "/v1/documents/{id}"
        return "other"  # unknown paths would otherwise make one series each

    def observe(self, path: str, status: int, seconds: float) -> None:
        route = self.route(path)
        with self._lock:
            key = (route, status)
            self.requests[key] = self.requests.get(key, 0) + 1
            h = self.latency.get(route)
            if h is None:
                h = self.latency[route] = [0] * len(self.BUCKETS) + [0.0, 0]
            for i, bound in enumerate(self.BUCKETS):
                if seconds <= bound:
                    h[i] += 1
                    break
            h[-2] += seconds
            h[-1] += 1

    def refuse(self, kind: str) -> None:
        with self._lock:
            self.errors[kind] = self.errors.get(kind, 0) + 1

    def render(self, gauges: dict) -> str:
        lines = ["# HELP neardup_requests_total HTTP requests answered, by route and status.",
                 "# TYPE neardup_requests_total counter"]
        with self._lock:
            requests = sorted(self.requests.items())
            latency = sorted((r, list(h)) for r, h in self.latency.items())
            errors = sorted(self.errors.items())
        for (route, status), n in requests:
            lines.append(f'neardup_requests_total{{route="{route}",status="{status}"}} {n}')
        lines += ["# HELP neardup_request_duration_seconds Time from the request's arrival to its answer.",
                  "# TYPE neardup_request_duration_seconds histogram"]
        for route, h in latency:
            total = 0
            for bound, n in zip(self.BUCKETS, h):
                total += n
                lines.append(f'neardup_request_duration_seconds_bucket{{route="{route}",le="{bound:g}"}} {total}')
            lines.append(f'neardup_request_duration_seconds_bucket{{route="{route}",le="+Inf"}} {h[-1]}')
            lines.append(f'neardup_request_duration_seconds_sum{{route="{route}"}} {h[-2]:.6f}')
            lines.append(f'neardup_request_duration_seconds_count{{route="{route}"}} {h[-1]}')
        lines += ["# HELP neardup_errors_total Requests refused or failed, by kind.",
                  "# TYPE neardup_errors_total counter"]
        for kind, n in errors:
            lines.append(f'neardup_errors_total{{kind="{kind}"}} {n}')
        for name, (help_text, value) in gauges.items():
            lines += [f"# HELP neardup_{name} {help_text}", f"# TYPE neardup_{name} gauge", f"neardup_{name} {value}"]
        return "\n".join(lines) + "\n"
