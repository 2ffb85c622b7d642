"""The Grafana dashboard's document level and its Health row, as Grafana reads them (dashboard JSON model:
https://grafana.com/docs/grafana/latest/dashboards/build-dashboards/view-dashboard-json-model/), written by hand.

A wrong top-level key is not an error in Grafana: it is silently ignored (a time range that never applies, a
schemaVersion Grafana migrates from the wrong base), so each key is pinned by name and value.
"""

from __future__ import annotations

from conftest import stack_config

from components.dashboards import gpu
from components.loader import load_spec


def _board(stack: str = "prod-aws") -> dict:
    return gpu.dashboard(load_spec(stack_config(stack)))


def test_document_level_keys():
    """Everything but the panels and the variables: a read-only board with a stable uid (links and the
    provisioning sidecar find it by uid), schemaVersion 39 (Grafana 10.x's model, so no migration runs), the last
    24 hours refreshed every minute, shared crosshair tooltips, the browser's timezone, no annotations."""
    board = _board()
    top = {k: v for k, v in board.items() if k not in ("panels", "templating")}
    assert top == {
        "uid": "gpu-platform-gpus",
        "title": "GPU platform: utilization, allocation and health",
        "tags": ["gpu", "dcgm", "gpu-platform"],
        "editable": False,
        "schemaVersion": 39,
        "version": 1,
        "refresh": "1m",
        "time": {"from": "now-24h", "to": "now"},
        "timezone": "",
        "graphTooltip": 1,
        "annotations": {"list": []},
    }
    assert [v["name"] for v in board["templating"]["list"]] == ["datasource", "pool", "namespace"]


def _health(board: dict) -> list[dict]:
    panels = board["panels"]
    start = next(i for i, p in enumerate(panels) if p["type"] == "row" and p["title"] == "Health")
    return panels[start + 1 :]


def test_health_row_panels_as_grafana_draws_them():
    """The Health row's four panels: framebuffer use in percent up to 100 with the alert's line, temperature in
    Celsius with the alert's line, power stacked per pool in watts, and the last XID as an instant table."""
    board = _board()
    got = []
    for p in _health(board):
        d = p["fieldConfig"]["defaults"]
        custom = d.get("custom", {})
        got.append(
            (
                p["type"],
                p["title"],
                d["unit"],
                d.get("max"),
                custom.get("stacking", {}).get("mode"),
                custom.get("thresholdsStyle", {}).get("mode"),
                [(t["refId"], t.get("instant"), t.get("format")) for t in p["targets"]],
            )
        )
    assert got == [
        ("timeseries", "Framebuffer memory used", "percent", 100, "none", "line", [("A", None, None)]),
        ("timeseries", "GPU temperature", "celsius", None, "none", "line", [("A", None, None)]),
        ("timeseries", "Power draw per pool", "watt", None, "normal", "off", [("A", None, None)]),
        ("table", "Last XID per GPU", "none", None, None, None, [("A", True, "table")]),
    ]
