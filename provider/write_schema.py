"""Write schema.json: the schema this provider serves, inferred from ``GpuPlatform``'s typed arguments and outputs
(``pulumi.provider.experimental``'s analyzer, the same code ``component_provider_host`` runs). ``make
component-schema`` runs it; tests/test_component_package.py asks the running provider for its schema over gRPC and
compares it with the committed file, so a change of the arguments or outputs fails until this is rerun."""

import json
import sys
from pathlib import Path

from gpu_platform_package import NAMESPACE, PACKAGE, GpuPlatform
from pulumi.provider.experimental.component import ComponentProvider
from source import package_version

SCHEMA = Path(__file__).resolve().parent / "schema.json"


def schema() -> dict:
    provider = ComponentProvider([GpuPlatform], PACKAGE, NAMESPACE, package_version())
    return json.loads(provider.schema or "{}")


def text() -> str:
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    SCHEMA.write_text(text())
    sys.stdout.write(f"wrote {SCHEMA}\n")
