"""The exact volcano-scheduler.conf text the local stack hands Volcano's chart.

``custom.scheduler_config_override`` is the whole scheduler configuration document; the chart documents it
(upstream/volcano/values.yaml, the commented ``scheduler_config_override: |`` example) as block-style YAML:
``actions`` then ``tiers``, each tier a ``- plugins:`` list of ``- name: ...`` entries with their options
below. The text below is written out by hand from that format and the plugin choices documented in
components/render/volcano.py, for the shipped ``local`` stack (one L4 pool, MPS without renameByDefault, so the only
GPU resource is nvidia.com/gpu).
"""

from __future__ import annotations

from conftest import release, rendered

LOCAL_SCHEDULER_CONF = """\
actions: enqueue, allocate, preempt, reclaim, backfill
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: resourcequota
  - name: predicates
  - name: proportion
  - name: nodeorder
    arguments:
      leastrequested.weight: 0
      balancedresource.weight: 0
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 1
      binpack.memory: 1
      binpack.resources: nvidia.com/gpu
      binpack.resources.nvidia.com/gpu: 10
"""


def test_local_stack_scheduler_conf_is_block_style_text():
    """Every mapping and list is written in block style, in the chart's documented layout (no flow-style
    ``{name: priority}`` entries), plugin options in the order Volcano's tiers list them."""
    values = release(rendered("local"), "volcano")["values"]
    assert values["custom"]["scheduler_config_override"] == LOCAL_SCHEDULER_CONF
