"""Grafana dashboards, built in code so their queries use the same recording-rule names and thresholds as
the alerts (``components.render.monitoring``)."""
