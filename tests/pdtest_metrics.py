"""Reading GET /metrics the way Prometheus does (its official parser)."""

from __future__ import annotations

from typing import Any

import httpx2
from prometheus_client.parser import text_string_to_metric_families


def scrape(url: str, token: str | None = None) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The samples of `url`'s GET /metrics (`token`: the operator's credential, where client tokens are set)."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    response = httpx2.get(url.removesuffix("/mcp") + "/metrics", timeout=10, headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)
