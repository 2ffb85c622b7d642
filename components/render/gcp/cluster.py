"""Access to an existing GKE cluster: look it up, check it can take gpu-platform's node pools, build a
kubeconfig that authenticates with ``gke-gcloud-auth-plugin``, and the Kubernetes provider every
Kubernetes resource uses."""

from __future__ import annotations

import json
import re
from typing import Any

import pulumi

from ...plan.gcp.cluster_create_rules import TCPX_BROKEN_FROM
from ...plan.gcp.plan import GkeClusterPlan
from ...plan.plan import Plan


def kubeconfig_of(cluster: GkeClusterPlan, endpoint: str, ca_data: str) -> str:
    """The kubeconfig of the looked-up cluster (its endpoint and CA come from the lookup)."""
    name = cluster.kubeconfig_name
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": f"https://{endpoint}", "certificate-authority-data": ca_data}}
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "users": [
            {
                "name": name,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "gke-gcloud-auth-plugin",
                        "provideClusterInfo": True,
                        "installHint": "gcloud components install gke-gcloud-auth-plugin",
                    }
                },
            }
        ],
    }
    return json.dumps(doc, sort_keys=True)


def problems_of(cluster: GkeClusterPlan, autopilot: bool | None, workload_pools: list[str]) -> list[str]:
    """Why the looked-up cluster cannot take gpu-platform's node pools; [] when it can.

    Autopilot clusters have no user node pools. Nodes run with ``workloadMetadataConfig: GKE_METADATA``
    (pods never see the node's credentials), which GKE accepts only when the cluster has Workload
    Identity Federation (a workload pool).
    """
    c = cluster
    where = f"GKE cluster {c.name} ({c.project}/{c.location})"
    out = []
    if autopilot:
        out.append(f"{where} is an Autopilot cluster; gpu-platform creates Standard node pools")
    elif c.needs_workload_identity and not any(workload_pools):
        out.append(
            f"{where} has no Workload Identity Federation; enable it "
            f"(gcloud container clusters update {c.name} --location={c.location} "
            f"--workload-pool={c.project}.svc.id.goog)"
        )
    return out


def _workload_pool(config: Any) -> str:
    """workloadIdentityConfigs[].workloadPool, whether the SDK hands the entry over as a dict or a result."""
    if isinstance(config, dict):
        return config.get("workload_pool") or config.get("workloadPool") or ""
    return getattr(config, "workload_pool", None) or ""


def _gke_version(text: str | None) -> tuple[int, ...] | None:
    """1.34.1-gke.1431000 -> (1, 34, 1, 1431000); None for anything else."""
    match = re.match(r"^(\d+)\.(\d+)\.(\d+)-gke\.(\d+)", text or "")
    return tuple(int(g) for g in match.groups()) if match else None


def tcpx_warning(cluster: GkeClusterPlan, versions: list[str | None]) -> str | None:
    """The cluster runs a version whose nodes break GPUDirect-TCPX while pools run it: ``versions`` are the control
    plane's (a new or recreated node pool starts at it) and the nodes' (GKE's lowest node version). A warning, not
    a stop: GKE's release channel upgrades the cluster whatever this program does, and the pools still run jobs,
    only without GPUDirect."""
    broken = _gke_version(TCPX_BROKEN_FROM)
    past = [v for v in versions if broken is not None and (_gke_version(v) or ()) >= broken]
    if not cluster.tcpx_pools or not past:
        return None
    return (
        f"GKE cluster {cluster.name} runs {past[0]}: pools {', '.join(cluster.tcpx_pools)} use GPUDirect-TCPX, "
        f"which nodes from {TCPX_BROKEN_FROM} on break (COS 125; GKE release note 2025-10-17), so their multi-node "
        f"jobs lose GPUDirect; move them to a3-megagpu-8g (TCPXO), or hold the cluster's minor upgrades (a "
        "maintenance exclusion) before the nodes reach it"
    )


def warn_tcpx(cluster: GkeClusterPlan, versions: list[str | None]) -> bool:
    warning = tcpx_warning(cluster, versions)
    if warning:
        pulumi.log.warn(warning)
    return True


def check_cluster(cluster: GkeClusterPlan, result: list[Any]) -> bool:
    """``result``: the lookup's enableAutopilot and workloadIdentityConfigs, then any versions it answers
    (masterVersion, nodeVersion) for the TCPX warning."""
    autopilot, identity, *versions = result
    pools = [_workload_pool(c) for c in identity or []]
    problems = problems_of(cluster, autopilot, pools)
    if problems:
        # Stops preview/up before any node pool is sent to the GKE API.
        raise pulumi.RunError("; ".join(problems))
    return warn_tcpx(cluster, versions)


def _field(entry: Any, snake: str, camel: str) -> Any:
    if isinstance(entry, dict):
        return entry.get(snake, entry.get(camel))
    return getattr(entry, snake, None)


def ports_warning(cluster: GkeClusterPlan, private_configs: list[Any] | None) -> str | None:
    """A found or referenced cluster with private nodes: GKE's control plane reaches them on 443 and 10250 only
    (GKE docs, private clusters, "Adding firewall rules for specific use cases"), so the add-ons' webhooks on other
    ports time out unless a firewall rule admits them; the warning names the ports and the rule to add."""
    configs = private_configs or []
    private = [c for c in configs if _field(c, "enable_private_nodes", "enablePrivateNodes")]
    if not cluster.control_plane_ports or not private:
        return None
    source = _field(private[0], "master_ipv4_cidr_block", "masterIpv4CidrBlock") or "CONTROL_PLANE_RANGE"
    ports = ",".join(f"tcp:{p}" for p in cluster.control_plane_ports)
    return (
        f"GKE cluster {cluster.name} has private nodes: its control plane reaches them only on tcp 443 and 10250, "
        f"and the add-ons' webhooks listen on {', '.join(map(str, cluster.control_plane_ports))}; unless a firewall "
        f"rule admits them, every webhook call times out and fail-closed ones refuse what they guard. Add one: "
        f"gcloud compute firewall-rules create {cluster.name}-master-webhooks --network=NETWORK "
        f"--source-ranges={source} --allow={ports} --target-tags=NODE_TAG (the tag of GKE's rule "
        f"gke-{cluster.name}-*-master)"
    )


def warn_ports(cluster: GkeClusterPlan, private_configs: list[Any] | None) -> bool:
    warning = ports_warning(cluster, private_configs)
    if warning:
        pulumi.log.warn(warning)
    return True


def checked(cluster: GkeClusterPlan, found: Any) -> pulumi.Output[bool]:
    """``check_cluster`` on the answer of a ``gcp.container.get_cluster_output`` lookup: a found cluster's
    (``GkeAccess``) and a referenced one's (``cluster_stack.GkeStackAccess``), and the warning on the add-ons'
    ports when its nodes are private (``ports_warning``)."""
    return pulumi.Output.all(
        found.enable_autopilot,
        found.workload_identity_configs,
        found.master_version,
        found.node_version,
        found.private_cluster_configs,
    ).apply(lambda r: check_cluster(cluster, r[:4]) and warn_ports(cluster, r[4]))


class GkeAccess(pulumi.ComponentResource):
    """The GKE cluster as looked up, and a Kubernetes provider for it."""

    TYPE = "gpu-platform:gcp:GkeAccess"

    def __init__(
        self,
        name: str,
        plan: Plan,
        opts: pulumi.ResourceOptions | None = None,
        *,
        provider: pulumi.ProviderResource | None = None,
    ):
        """``provider``: the caller's (``GpuPlatform``); the cluster is still looked up and checked (the node pools
        need its locations), but no kubeconfig or provider is made."""
        super().__init__(self.TYPE, name, None, opts)
        import pulumi_gcp as gcp

        from ..k8s import PROVIDER_OPTIONS, KubeProvider

        gke = plan.gke
        assert gke is not None  # a gcp stack's
        c = gke.cluster
        # Under GpuPlatform (a provider given) the lookup takes the GCP provider of the component's ``providers``.
        lookup = pulumi.InvokeOutputOptions(parent=self) if provider is not None else None
        self.cluster = gcp.container.get_cluster_output(
            name=c.name or "", location=c.location, project=c.project, opts=lookup
        )
        self.endpoint = self.cluster.endpoint
        # Checked when the lookup answers; every node pool waits on it through node_locations.
        self.ready = checked(c, self.cluster)
        self.node_locations = pulumi.Output.all(self.ready, self.cluster.node_locations).apply(
            lambda r: list(r[1] or [])
        )
        self.kubeconfig = pulumi.Output.all(
            self.cluster.endpoint, self.cluster.master_auths[0].cluster_ca_certificate
        ).apply(lambda a: kubeconfig_of(c, a[0], a[1]))
        if provider is not None:
            self.provider = provider
            self.register_outputs({"endpoint": self.cluster.endpoint})
            return
        self.provider = KubeProvider(
            "kubernetes",
            kubeconfig=self.kubeconfig,
            # projects/P/locations/L/clusters/N: a credential or control-plane IP rotation changes the
            # kubeconfig's CA or server, which without this replaces the provider and every Kubernetes
            # resource (pulumi-kubernetes provider.go DiffConfig); with it, only another cluster does.
            cluster_identifier=self.cluster.id,
            opts=pulumi.ResourceOptions(parent=self),
            **PROVIDER_OPTIONS,
        )
        self.register_outputs({"endpoint": self.cluster.endpoint})
