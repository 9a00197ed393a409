"""The named errors of coral2-pipeline.

Every failure the pipeline reasons about has a name here. Third-party
exceptions (kubernetes ``ApiException``, redis and httpx errors) are
translated into these types at the client boundary (``pipeline/clients``)
and nowhere else, so the rest of the code catches narrow, named errors.

The tree::

    PipelineError
    ├── PermanentError                  retrying cannot help; record and stop
    │   ├── ConfigError                 the settings file or environment is wrong
    │   ├── InputError (+ValueError)    a user or admin gave malformed input
    │   │   ├── IdsetError              an RFC 22 idset string does not parse
    │   │   ├── HostlistError           an RFC 29 hostlist string does not parse
    │   │   ├── ResourceSetError        an RFC 20 R object is invalid
    │   │   ├── JobspecError            jobspec resources are invalid
    │   │   ├── EventlogError           an RFC 18 eventlog line is invalid
    │   │   ├── DirectiveError          a #DW directive is malformed (DWS's message)
    │   │   │   └── PersistentCreationForbidden
    │   │   ├── RabbitMappingError      a rabbitmapping file is inconsistent
    │   │   └── BreakdownError          a DirectiveBreakdown cannot be applied
    │   │       ├── UnknownAllocationLabel
    │   │       ├── ResourceLimitExceeded
    │   │       ├── DaemonNotAllowed
    │   │       └── PlacementError
    │   ├── NotFound, AlreadyExists, Forbidden, Invalid, ApiVersionNotFound   (KubeError)
    │   ├── VniError                    the VNI pool refuses (flux-coral2's vnipool messages)
    │   ├── CxiError                    a NIC refused a CXI service operation
    │   │   └── CxiNoSpace              the NIC lacks the resources a service asks for
    │   └── FabricManagerError          the fabric manager refused a request
    └── TemporaryError(delay_s)         try again later
        ├── BreakdownNotReady
        ├── Conflict, Gone, Unavailable (KubeError: 409 race, 410, outages)
        ├── StoreUnavailable            Redis cannot be reached
        ├── StoreConflict               an optimistic update kept losing the race
        ├── FluxUnreachable             Flux cannot be reached; deliver again later
        ├── CxiBusy                     a CXI service is still in use; destroy it later
        └── FabricManagerUnavailable    the fabric manager is down, slow or failing (5xx)
    FluxError                           Flux answered a request with an error (PermanentError)

``InputError`` subclasses ``ValueError`` so that code written against
flux-coral2 (which raises ``ValueError``) keeps working, and so that the
messages, which are flux-coral2's and DWS's own texts, reach the user as-is.
"""

from __future__ import annotations


class PipelineError(Exception):
    """Raised for any failure that coral2-pipeline names; the root of the tree."""


class PermanentError(PipelineError):
    """Raised when retrying the same operation cannot succeed."""


class TemporaryError(PipelineError):
    """Raised when the same operation may succeed if retried after ``delay_s`` seconds."""

    def __init__(self, message: str, *, delay_s: float = 1.0) -> None:
        super().__init__(message)
        self.delay_s = delay_s


class ConfigError(PermanentError):
    """Raised when the configuration file or an environment override is invalid."""


class InputError(PermanentError, ValueError):
    """Raised when input from a user, an admin or Flux is malformed."""


class IdsetError(InputError):
    """Raised when a string is not an RFC 22 idset."""


class HostlistError(InputError):
    """Raised when a string is not an RFC 29 hostlist."""


class ResourceSetError(InputError):
    """Raised when an RFC 20 resource set (R) is invalid."""


class JobspecError(InputError):
    """Raised when jobspec resources (RFC 14/25) are invalid."""


class EventlogError(InputError):
    """Raised when a line of an RFC 18 eventlog is invalid."""


class DirectiveError(InputError):
    """Raised when a #DW directive is malformed; the message is DWS's own text."""


class PersistentCreationForbidden(DirectiveError):
    """Raised when a user other than the instance owner asks for create_persistent."""


class RabbitMappingError(InputError):
    """Raised when a rabbitmapping document is malformed or inconsistent."""


class BreakdownError(InputError):
    """Raised when DirectiveBreakdowns cannot be applied to a job (flux-coral2's message)."""


class UnknownAllocationLabel(BreakdownError):
    """Raised when an allocation set carries a label that no strategy is known for."""


class ResourceLimitExceeded(BreakdownError):
    """Raised when a job asks for more storage per node than ``rabbit.policy.maximums``."""


class DaemonNotAllowed(BreakdownError):
    """Raised when a breakdown requires a daemon missing from ``rabbit.allowed_daemons``."""


class PlacementError(BreakdownError):
    """Raised when Servers allocations cannot honour a breakdown's constraints."""


class BreakdownNotReady(TemporaryError, ValueError):
    """Raised when a DirectiveBreakdown's ``status.ready`` is not yet true."""


class StoreUnavailable(TemporaryError):
    """Raised when Redis cannot be reached or answers with a connection error."""


class StoreRefused(StoreUnavailable):
    """Raised when Redis refuses this process's user (a wrong password, a command or key its
    ACL does not grant): the settings or the ACL file, not the network. A task retries it
    (an ACL reloaded mid-upgrade heals it); a command exits 3 (the settings) on it."""


class StoreConflict(TemporaryError):
    """Raised when a record kept changing under an optimistic update; retry later."""


class KubeError(PipelineError):
    """Raised for an answer of the Kubernetes API server (base of the kube errors)."""

    def __init__(self, message: str, *, status: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


class NotFound(KubeError, PermanentError):
    """Raised when the object does not exist (HTTP 404); a delete counts it as done."""


class AlreadyExists(KubeError, PermanentError):
    """Raised when creating an object that exists (409 AlreadyExists); creates count it done."""


class Conflict(KubeError, TemporaryError):
    """Raised when a write lost an optimistic-concurrency race (409 Conflict); re-read, retry."""


class Forbidden(KubeError, PermanentError):
    """Raised when the API server or a webhook refuses the request (401/403), saying why."""


class Invalid(KubeError, PermanentError):
    """Raised when the request is malformed for the API server (HTTP 400/405/415/422)."""


class Gone(KubeError, TemporaryError):
    """Raised when a watch's resourceVersion is too old (HTTP 410); relist and watch again."""


class Unavailable(KubeError, TemporaryError):
    """Raised when the API server cannot be reached or is overloaded (connection, 429, 5xx)."""


class ApiVersionNotFound(KubeError, PermanentError):
    """Raised when no candidate API version of a group is served."""


class FluxError(PermanentError):
    """Raised when Flux answers a request with an error (the text is Flux's error string)."""


class FluxUnreachable(TemporaryError):
    """Raised when Flux cannot be reached; the message is delivered again later."""

    def __init__(self, message: str, *, delay_s: float = 1.0) -> None:
        super().__init__(message, delay_s=delay_s)


class VniError(PermanentError):
    """Raised when the VNI pool cannot do what is asked; the text is flux-coral2's."""


class CxiError(PermanentError):
    """Raised when a NIC refuses a CXI service operation (the text is the driver's)."""


class CxiNoSpace(CxiError):
    """Raised when a NIC lacks what a service asks for; ``available``: resource → free."""

    def __init__(self, message: str, available: dict[str, int] | None = None) -> None:
        super().__init__(message)
        self.available = dict(available or {})


class CxiBusy(TemporaryError):
    """Raised when a CXI service cannot be destroyed yet: something still uses it."""

    def __init__(self, message: str, *, delay_s: float = 1.0) -> None:
        super().__init__(message, delay_s=delay_s)


class FabricManagerError(PermanentError):
    """Raised when the fabric manager refuses a request (a 4xx other than a 404 it means)."""


class FabricManagerUnavailable(TemporaryError):
    """Raised when the fabric manager cannot be reached, answers too slowly, or fails (5xx)."""
