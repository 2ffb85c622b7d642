"""The ECR pull-through cache as the AL2023 nodes' containerd mirror (issue 39.2, ``images.mirror: pull-through`` on
aws): a node pulling ``docker.io/library/python:3.12`` fetches it from
``<account>.dkr.ecr.<region>.amazonaws.com/docker.io/library/python:3.12``, so a workload keeps the reference its
authors wrote and still pulls through the cache.

containerd (the AMI's 2.*: awslabs/amazon-eks-ami v20260724 templates/al2023/variables-default.json
``containerd_version``) reads a ``hosts.toml`` per registry under its registry ``config_path``, which nodeadm's
template sets to ``/etc/containerd/certs.d:/etc/docker/certs.d`` (nodeadm/internal/containerd/config2.template.toml,
and config.template.toml for containerd 1.7 on 1.28/1.29). One file per upstream that has a pull-through rule, in the
format of containerd's docs/hosts.md (v2.1): ``server`` the upstream (tried last: the fallback when the cache fails),
one ``[host]`` the cache with the rule's prefix in its path (``override_path = true``: the URL path is the API root,
so requests go to ``/v2/<prefix>/<repository>/manifests/<ref>``, the repository ECR's rule creates), capabilities
``pull`` and ``resolve`` (a private mirror may resolve tags: the table in hosts.md), and a ``header``
``Authorization``.

Why the header: containerd signs in to a mirror with the credentials the kubelet found for the image's *own*
registry (none for docker.io, or its pull secret), so a plain mirror entry gets 401 from ECR
(bottlerocket-os/bottlerocket#2427, awslabs/amazon-ecr-credential-helper#947). A header in hosts.toml is sent on every
request to that host, and containerd's authorizer only replaces it after a 401 challenge (containerd#8186: static
credentials go in the header). ECR takes its authorization token as HTTP Basic directly (ECR user guide, "Private
registry authentication": ``curl -H "Authorization: Basic $TOKEN" https://<registry>/v2/...``); the token lives
12 hours. So the node fetches one with its instance role and rewrites the files: a shell part of the user data
(cloud-init runs it before ``nodeadm-run.service``, which is ``After=cloud-final.service``: amazon-eks-ami v20260724
templates/al2023/runtime/rootfs/etc/systemd/system/nodeadm-run.service, so before containerd and the kubelet pull)
installs a refresher, runs it once, and a systemd timer runs it every hour (eleven failures in a row still leave a
valid token) and at each boot before nodeadm. The refresher calls the AWS CLI, which the AMI installs at /bin/aws
(templates/al2023/provisioners/install-worker.sh, "awscli"), with ``AWS_EC2_METADATA_V1_DISABLED=true``: the instance
role's credentials come from IMDSv2 only (the launch templates and EC2NodeClasses require session tokens anyway). The
token goes from the CLI's stdout into a shell variable and from there, by ``printf`` (a builtin: no argv, no temp
file), only into the hosts.toml files, mode 0600 in a root-only directory, replaced atomically (``mv``). The node role
may call ecr:GetAuthorizationToken: ``AmazonEC2ContainerRegistryPullOnly`` (``iam.WORKER_NODE_POLICIES``) grants it.

When the token lapses or the cache fails, containerd tries the next host, the upstream (``server``): the node pulls
as it would without a mirror. The platform's own chart images keep naming the cache (``mirror.py``): their pods also
run on nodes without this file (Bottlerocket pools, a found cluster's nodes) and the kubelet's ECR credential provider
signs such a reference with no refresher at all. Bottlerocket and GKE nodes keep rewritten references
(docs/concepts/images.md says why).

Pure: the spec in, strings out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...spec.model import StackSpec
from .. import mirror as mirrors

HOSTS_DIR = "/etc/containerd/certs.d"  # the first entry of nodeadm's config_path (config2.template.toml)
REFRESHER = "/usr/local/sbin/gpu-platform-ecr-mirror"
UNIT = "gpu-platform-ecr-mirror"
CAPABILITIES = ("pull", "resolve")
REFRESH_EVERY = "1h"  # the token lives 12 h (ECR GetAuthorizationToken: expiresAt)
SHELL_PART = 'text/x-shellscript; charset="us-ascii"'  # Karpenter v1.14.1 bootstrap/mime/mime.go ContentTypeShellScript
# containerd's default server for Docker Hub's namespace (docs/hosts.md, "Simple (default) Host Config for Docker")
_SERVERS = {mirrors.DOCKER_HUB: "https://registry-1.docker.io"}


@dataclass(frozen=True)
class MirrorHost:
    """One registry namespace the node's containerd sends to the cache."""

    host: str  # the upstream (the image's registry host: the directory under HOSTS_DIR)
    prefix: str  # the pull-through rule's repository prefix
    server: str  # the upstream's URL (containerd's fallback)


def mirror_hosts(hosts: Iterable[str]) -> list[MirrorHost]:
    """The upstreams the nodes' containerd sends to the cache (``images.containerd_mirror_hosts``: those with a
    pull-through rule), each under its rule's prefix, the upstream's host (``mirror.py``)."""
    return [MirrorHost(h, h, _SERVERS.get(h, f"https://{h}")) for h in hosts]


def pulls_text(registry: str | None, hosts: tuple[str, ...], soci: bool) -> str:
    """``gpu-platform plan``'s words for how a pool's nodes reach the cloud's cache."""
    if hosts:
        return f"containerd mirror: {', '.join(hosts)} through {registry} (the image's own reference)"
    why = " (FastImagePull's SOCI snapshotter reads no hosts.toml)" if soci else ""
    return f"references rewritten to {registry}{why}"


def _registry(spec: StackSpec) -> str:
    m = mirrors.mirror_of(spec)
    assert m is not None and m.kind == "ecr"
    return m.registry


def hosts_toml_format(registry: str, h: MirrorHost) -> str:
    """The hosts.toml of one upstream as a printf format: ``%s`` where the token goes (the only conversion)."""
    url = f"https://{registry}/v2/{h.prefix}"
    caps = ", ".join(f'"{c}"' for c in CAPABILITIES)
    return (
        f'server = "{h.server}"\n\n'
        f'[host."{url}"]\n'
        f"  capabilities = [{caps}]\n"
        "  override_path = true\n\n"
        f'[host."{url}".header]\n'
        '  Authorization = "Basic %s"\n'
    )


def hosts_toml(registry: str, h: MirrorHost, token: str) -> str:
    return hosts_toml_format(registry, h) % token


def _shell_quote(s: str) -> str:
    return "'" + s.replace("'", "'\"'\"'") + "'"


def refresher_script(spec: StackSpec, hosts: Iterable[str], hosts_dir: str = HOSTS_DIR, retry_seconds: int = 5) -> str:
    """The refresher (bash): an ECR token with the instance role (IMDSv2 only), written into each upstream's
    hosts.toml. Exits non-zero, leaving the files as they were, when no token comes."""
    region = spec.cluster.region or ""
    registry = _registry(spec)
    writes = "\n".join(
        f"write {_shell_quote(h.host)} {_shell_quote(hosts_toml_format(registry, h))}" for h in mirror_hosts(hosts)
    )
    return f"""#!/bin/bash
# gpu-platform: the ECR pull-through cache {registry} as containerd's mirror (components/plan/aws/ecr_mirror.py).
set -o errexit -o nounset -o pipefail
umask 077
export AWS_EC2_METADATA_V1_DISABLED=true
hosts_dir={_shell_quote(hosts_dir)}
token=""
for attempt in 1 2 3 4 5; do
  if token=$(aws ecr get-authorization-token --region {_shell_quote(region)} --output text \\
      --query 'authorizationData[0].authorizationToken'); then
    break
  fi
  token=""
  sleep $((attempt * {retry_seconds}))
done
if [[ ! "$token" =~ ^[A-Za-z0-9+/]+=*$ ]]; then
  echo "gpu-platform-ecr-mirror: no ECR authorization token; hosts.toml left as it was" >&2
  exit 1
fi
write() {{
  local dir="$hosts_dir/$1" tmp
  mkdir -p "$dir"
  tmp=$(mktemp "$dir/.hosts.toml.XXXXXX")
  printf "$2" "$token" >"$tmp"
  chmod 0600 "$tmp"
  mv -f "$tmp" "$dir/hosts.toml"
}}
{writes}
"""


def _unit_files() -> str:
    service = f"""[Unit]
Description=gpu-platform: ECR authorization for containerd's pull-through mirror ({HOSTS_DIR})
Wants=network-online.target
After=network-online.target
Before=nodeadm-run.service kubelet.service

[Service]
Type=oneshot
ExecStart={REFRESHER}

[Install]
WantedBy=multi-user.target
"""
    timer = f"""[Unit]
Description=gpu-platform: refresh the ECR authorization in containerd's hosts.toml every {REFRESH_EVERY}

[Timer]
OnActiveSec={REFRESH_EVERY}
OnUnitActiveSec={REFRESH_EVERY}
RandomizedDelaySec=5min

[Install]
WantedBy=timers.target
"""
    return (
        f"cat >/etc/systemd/system/{UNIT}.service <<'UNIT'\n{service}UNIT\n"
        f"cat >/etc/systemd/system/{UNIT}.timer <<'UNIT'\n{timer}UNIT\n"
    )


def install_script(spec: StackSpec, hosts: Iterable[str]) -> str:
    """The user data's shell part: installs the refresher and its timer, then runs it once before nodeadm starts
    containerd (a failure is logged; containerd then pulls from the upstreams until the timer's next run)."""
    return (
        "#!/bin/bash\n"
        "# gpu-platform: containerd pulls through the ECR pull-through cache (docs/concepts/images.md)\n"
        "set -o errexit -o nounset -o pipefail\n"
        f"install -d -m 0755 {HOSTS_DIR}\n"
        f"cat >{REFRESHER} <<'REFRESHER'\n{refresher_script(spec, hosts)}REFRESHER\n"
        f"chmod 0700 {REFRESHER}\n"
        f"{_unit_files()}"
        "systemctl daemon-reload\n"
        f"systemctl enable {UNIT}.service\n"
        f"systemctl enable --now {UNIT}.timer\n"
        f'{REFRESHER} || echo "gpu-platform: the ECR mirror has no token yet; the timer retries" >&2\n'
    )


def mime_user_data(config_yaml: str | None, script: str | None) -> str:
    """MIME multi-part user data (boundary "//", as Karpenter v1.14.1 writes it: bootstrap/mime/mime.go) with a
    NodeConfig part (``application/node.eks.aws``) and/or the shell part; EKS managed node groups and Karpenter keep
    both kinds and add their own NodeConfig (Karpenter: nodeadm.go parseUserData)."""
    parts = []
    if config_yaml is not None:
        parts.append(f"--//\nContent-Type: application/node.eks.aws\n\n---\n{config_yaml}\n")
    if script is not None:
        parts.append(f"--//\nContent-Type: {SHELL_PART}\n\n{script}\n")
    return 'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n' + "".join(parts) + "--//--\n"
