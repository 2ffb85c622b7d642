"""A fleet of GPU clusters behind one queue (issue 43): Kueue's MultiKueue, configured from the stack files.

Two sections, one per role:

* ``gpu-platform:fleet`` on the **manager** stack: its worker stacks (by Pulumi stack name, read through a
  ``StackReference``), which tenants dispatch to which workers (in order of preference), and the MultiKueue
  settings of the manager's Kueue (``multiKueue`` of kueue v0.19.2 apis/config/v1beta2/configuration_types.go).
* ``gpu-platform:fleetWorker`` on each **worker** stack: which manager may dispatch to it, and the lifetime of
  the credential it gives that manager.

Part of the spec layer: imports only ``base``, ``validation`` and ``options``. What follows from these (quotas,
objects, the worker's RBAC) is decided in ``components/plan/fleet.py``; the rules across the stacks are there too.
The worker stacks' own specs are read by the loader (``components/cli/loader.py``) from their stack files and
attached here (``Fleet.worker_spec``), so every rule sees the whole fleet before anything is deployed.
"""

from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr

from .base import Duration, Model, Name
from .options import StackName
from .validation import count

# the kinds a fleet can dispatch (Kueue's MultiKueue adapters), named as the stack file's kueueIntegrations are
FleetKind = Literal["batch/job", "jobset.x-k8s.io/jobset"]
IsoDate = Annotated[str, Field(pattern=r"^20[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$")]
StackFileName = Annotated[str, Field(pattern=r"^Pulumi\.[A-Za-z0-9_.-]+\.yaml$", max_length=200)]


class FleetWorker(Model):
    """A worker cluster: another gpu-platform stack whose cluster runs what the manager dispatches."""

    name: Name = Field(description="the worker's name in the fleet (its MultiKueueCluster)")
    stack: StackName = Field(description="organization/project/stack of the worker's Pulumi stack")
    stack_file: StackFileName | None = Field(
        default=None,
        description="the worker's stack file beside this one (default Pulumi.<stack>.yaml, the stack name's last "
        "part): read before deploy so every fleet rule sees the worker's tenants, pools and add-ons",
    )

    @property
    def file_name(self) -> str:
        return self.stack_file or f"Pulumi.{self.stack.rsplit('/', 1)[-1]}.yaml"


class FleetTenant(Model):
    """A tenant whose jobs are submitted to the manager and run on the workers listed."""

    name: Name = Field(description="the tenant, as named in each of its workers' stacks")
    workers: list[Name] = Field(
        min_length=1, description="the workers it dispatches to, most preferred first (each must have the tenant)"
    )
    gpu_quota: dict[str, count(0, 100_000)] | None = Field(
        default=None,
        description="fleet-wide quota on the manager per resource (nvidia.com/gpu ...); default the sum of the "
        "tenant's nominal quota on its workers; never above it",
    )


class Fleet(Model):
    """The manager's side: its workers, who dispatches where, and MultiKueue's settings."""

    workers: list[FleetWorker] = Field(min_length=1, description="the worker clusters, each from its stack")
    tenants: list[FleetTenant] = Field(
        min_length=1, description="the tenants whose jobs the manager dispatches, and to which workers"
    )
    kinds: list[FleetKind] = Field(
        default_factory=lambda: ["batch/job"],
        description="the workload kinds dispatched; each worker installs its operator and grants the manager "
        "exactly these",
    )
    dispatcher: Literal["all-at-once", "incremental"] = Field(
        default="incremental",
        description="all-at-once: a workload is copied to every worker and the first to admit it wins; incremental: "
        "workers are tried in the tenant's order, a few at a time",
    )
    worker_lost_timeout: Duration = Field(
        default="15m",
        description="how long a workload stays admitted while its worker is unreachable before it is evicted "
        "and dispatched again (Kueue's default 15m)",
    )
    reset_lost_jobs: bool = Field(
        default=True,
        description="on the manager, a CronJob (every minute) resets the status of a job whose worker was lost once "
        "Kueue has evicted it (after workerLostTimeout), so Kueue dispatches it again: Kueue 0.19 waits for that "
        "status, which only the lost worker could write; false: do it by hand (docs/concepts/fleet.md)",
    )
    gc_interval: Duration = Field(default="1m", description="how often orphaned objects on workers are removed")
    origin: Name = Field(
        default="multikueue",
        description="the label value marking what this manager created on the workers (distinct per manager "
        "when several share a worker)",
    )
    retired_workers: list[Name] = Field(
        default_factory=lambda: [],
        description="workers being removed: kept connected, dispatched nothing new, until their workloads finish; "
        "then delete the entry (a worker dropped from a tenant without passing through here is refused by the "
        "manager's API server, a ValidatingAdmissionPolicy, and its MultiKueueCluster and Secret are protected)",
    )

    _workers: dict[str, Any] = PrivateAttr(default_factory=dict)  # worker name -> its validated StackSpec

    def attach(self, specs: dict[str, Any]) -> None:
        """The workers' validated specs, read by the loader from their stack files."""
        self._workers = dict(specs)

    def worker_spec(self, name: str) -> Any:
        """The worker's ``StackSpec`` (None when its stack file was not read: its own problems are reported)."""
        return self._workers.get(name)

    def worker(self, name: str) -> FleetWorker:
        return next(w for w in self.workers if w.name == name)


class FleetCredential(Model):
    """The manager's credential on this worker: a ServiceAccount token in a Secret, rotated by generation."""

    generation: count(1, 10_000) = Field(
        default=1,
        description="bump to rotate: a new token Secret is made, the manager's next deploy takes it, and the old "
        "Secret (and with it its token) is deleted",
    )
    rotate_by: IsoDate = Field(
        description="the date the credential must be rotated by (at most 90 days after it was issued); the "
        "platform warns from 14 days before and refuses to deploy the manager with a credential past it"
    )


class FleetWorkerRole(Model):
    """The worker's side: the manager that dispatches here and its credential."""

    manager: StackName = Field(description="organization/project/stack of the manager's stack")
    endpoint: Annotated[str, Field(pattern=r"^https://[A-Za-z0-9.:\[\]-]+(/.*)?$", max_length=300)] | None = Field(
        default=None,
        description="the API server URL the manager dials (default the cluster's endpoint; required on existing "
        "clusters)",
    )
    credential: FleetCredential = Field(description="the manager's token on this worker and when to rotate it")
    draining: bool = Field(
        default=False,
        description="admit nothing new from the manager (its tenants' LocalQueues hold); what runs finishes and "
        "its status reaches the manager. The step before the manager retires the worker (fleet.retiredWorkers)",
    )
