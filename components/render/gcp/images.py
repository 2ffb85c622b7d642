"""Artifact Registry remote repositories (``Plan.images`` with ``mirrorKind: artifact-registry``): one Docker remote
repository per upstream the stack's images come from, in the cluster's region and project, its id the upstream's
host with '-' for '.' (``components/plan/mirror.py``): Docker Hub through the ``DOCKER_HUB`` preset, any other
registry (nvcr.io included) as a custom upstream URI (pulumi_gcp 10.2.0 ``artifactregistry.Repository``
``remoteRepositoryConfig``: ``commonRepository.uri`` replaces the deprecated ``dockerRepository.customRepository``).
An upstream credential is a Secret Manager secret version the stack references, with its user name; the secret
never passes through the program. The GKE node service account reads them (``roles/artifactregistry.reader``,
``components/plan/gcp/plan.py`` NODE_ROLES), which is all a pull through a remote repository needs."""

from __future__ import annotations

import pulumi

from ...plan.gcp.gke import region_of
from ...plan.plan import Plan


def remote_repositories(parent: pulumi.Resource, plan: Plan) -> list[str]:
    import pulumi_gcp as gcp

    images, gke = plan.images, plan.gke
    assert images is not None and gke is not None
    ar = gcp.artifactregistry
    c = gke.cluster
    made = []
    for u in images.upstreams:
        if u.how != "pull-through" or u.repository_id is None:
            continue
        docker = (
            ar.RepositoryRemoteRepositoryConfigDockerRepositoryArgs(public_repository="DOCKER_HUB")
            if u.docker_hub
            else None
        )
        common = (
            None if u.docker_hub else ar.RepositoryRemoteRepositoryConfigCommonRepositoryArgs(uri=f"https://{u.host}")
        )
        credentials = (
            ar.RepositoryRemoteRepositoryConfigUpstreamCredentialsArgs(
                username_password_credentials=ar.RepositoryRemoteRepositoryConfigUpstreamCredentialsUsernamePasswordCredentialsArgs(
                    username=u.username, password_secret_version=u.credential
                )
            )
            if u.credential is not None
            else None
        )
        ar.Repository(
            f"remote-{u.repository_id}",
            repository_id=u.repository_id,
            project=c.project,
            location=region_of(c.location or ""),
            format="DOCKER",
            mode="REMOTE_REPOSITORY",
            description=f"gpu-platform: {u.host} pulled through for cluster {c.name}",
            remote_repository_config=ar.RepositoryRemoteRepositoryConfigArgs(
                description=f"{u.host}",
                docker_repository=docker,
                common_repository=common,
                upstream_credentials=credentials,
            ),
            opts=pulumi.ResourceOptions(parent=parent),
        )
        made.append(u.repository_id)
    return made
