"""Pulumi entry point: stack config -> one validated spec -> components. Keep it this thin."""

from components.cli.config import spec_from_pulumi_config
from components.render.program import run

run(spec_from_pulumi_config())
