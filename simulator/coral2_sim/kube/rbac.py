"""Authentication and RBAC for the simulated API server, as kube-apiserver runs them.

* Bearer tokens from a static token file (kube-apiserver's ``--token-auth-file``: CSV
  lines ``token,user,uid,"group1,group2"``). A request without a known token is
  ``401 Unauthorized``; a user in ``system:masters`` passes every check.
* RBAC from manifests (``--authorization-mode=RBAC``): ServiceAccounts, ClusterRoles,
  Roles, ClusterRoleBindings and RoleBindings. A request is allowed when a rule of a
  role bound to the user (or one of their groups) names its verb, API group and
  resource (``resource/subresource`` for a subresource), and its name when the rule has
  ``resourceNames``; a RoleBinding grants only within its own namespace. Otherwise it
  is ``403 Forbidden`` with kube-apiserver's message.

A ServiceAccount's user is ``system:serviceaccount:NS:NAME``, in the groups
``system:serviceaccounts``, ``system:serviceaccounts:NS`` and ``system:authenticated``.
What each user was allowed to do is kept (:meth:`Authorizer.used`), so a test can check
that a role grants exactly what its client calls.
"""

from __future__ import annotations

import csv
import io
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from coral2_sim.kube.resources import ApiError
from pipeline.model.files import load, read_text

#: the group whose members pass every authorization check
MASTERS = "system:masters"
_WRITES_BY_METHOD = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True)
class User:
    """An authenticated user."""

    name: str
    groups: frozenset[str]


@dataclass(frozen=True)
class Request:
    """What a request asks, in RBAC's terms."""

    verb: str  # get, list, watch, create, update, patch, delete, deletecollection
    group: str  # "" for the core group
    resource: str  # the plural
    subresource: str  # "status" or ""
    namespace: str | None  # None: cluster scope (a cluster-wide list or watch)
    name: str | None

    @property
    def full_resource(self) -> str:
        """``resource`` or ``resource/subresource``, as rules name it."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def request_of(
    method: str,
    *,
    group: str,
    resource: str,
    namespace: str | None,
    name: str | None,
    status: bool,
    watch: bool,
) -> Request:
    """The RBAC request an HTTP method on a resource path makes."""
    if method == "GET":
        verb = "get" if name else ("watch" if watch else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _WRITES_BY_METHOD.get(method, method.lower())
    return Request(verb, group, resource, "status" if status else "", namespace, name)


def serviceaccount_user(namespace: str, name: str) -> User:
    """The user a ServiceAccount's token authenticates as."""
    return User(
        f"system:serviceaccount:{namespace}:{name}",
        frozenset(
            {
                "system:serviceaccounts",
                f"system:serviceaccounts:{namespace}",
                "system:authenticated",
            }
        ),
    )


def token_file_users(text: str) -> dict[str, User]:
    """Parse a static token file: ``token,user,uid[,"group1,group2"]`` a line."""
    users: dict[str, User] = {}
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not row[0].strip() or row[0].startswith("#"):
            continue
        if len(row) < 3:
            raise ValueError(f"token file line {number}: want token,user,uid[,groups]")
        groups = {g.strip() for g in (row[3] if len(row) > 3 else "").split(",") if g.strip()}
        users[row[0].strip()] = User(row[1].strip(), frozenset(groups | {"system:authenticated"}))
    return users


@dataclass(frozen=True)
class _Rule:
    verbs: frozenset[str]
    groups: frozenset[str]
    resources: frozenset[str]
    names: frozenset[str]

    def allows(self, request: Request) -> bool:
        return (
            ("*" in self.verbs or request.verb in self.verbs)
            and ("*" in self.groups or request.group in self.groups)
            and (
                "*" in self.resources
                or request.full_resource in self.resources
                or f"{request.resource}/*" in self.resources
            )
            and (not self.names or request.name in self.names)
        )


@dataclass(frozen=True)
class _Binding:
    role: tuple[str, str]  # (kind, name)
    namespace: str | None  # a RoleBinding's namespace; None for a ClusterRoleBinding
    users: frozenset[str]
    groups: frozenset[str]


def _rules(document: Mapping[str, Any]) -> list[_Rule]:
    rules = []
    for raw in document.get("rules") or []:
        rules.append(
            _Rule(
                frozenset(raw.get("verbs") or ()),
                frozenset(raw.get("apiGroups") or ()),
                frozenset(raw.get("resources") or ()),
                frozenset(raw.get("resourceNames") or ()),
            )
        )
    return rules


def _binding(document: Mapping[str, Any]) -> _Binding:
    meta = document.get("metadata") or {}
    namespace = (meta.get("namespace") or "default") if document["kind"] == "RoleBinding" else None
    ref = document.get("roleRef") or {}
    users, groups = set(), set()
    for subject in document.get("subjects") or []:
        kind = subject.get("kind")
        if kind == "ServiceAccount":
            users.add(serviceaccount_user(subject.get("namespace") or "default", subject["name"]))
        elif kind == "User":
            users.add(User(subject["name"], frozenset()))
        elif kind == "Group":
            groups.add(subject["name"])
    return _Binding(
        (str(ref.get("kind")), str(ref.get("name"))),
        namespace,
        frozenset(u.name for u in users),
        frozenset(groups),
    )


class Authorizer:
    """Tokens and RBAC rules; thread-safe."""

    def __init__(self, tokens: Mapping[str, User], documents: Iterable[Mapping[str, Any]]) -> None:
        self.tokens = dict(tokens)
        self.serviceaccounts: set[tuple[str, str]] = set()
        self._roles: dict[tuple[str, str, str | None], list[_Rule]] = {}
        self._bindings: list[_Binding] = []
        for document in documents:
            kind, meta = document.get("kind"), document.get("metadata") or {}
            if kind == "ServiceAccount":
                self.serviceaccounts.add((meta.get("namespace") or "default", meta["name"]))
            elif kind == "ClusterRole":
                self._roles[("ClusterRole", meta["name"], None)] = _rules(document)
            elif kind == "Role":
                namespace = meta.get("namespace") or "default"
                self._roles[("Role", meta["name"], namespace)] = _rules(document)
            elif kind in ("ClusterRoleBinding", "RoleBinding"):
                self._bindings.append(_binding(document))
        self._lock = threading.Lock()
        self._used: dict[str, set[Request]] = {}
        self._refused: list[str] = []

    @classmethod
    def from_files(cls, token_file: str, manifests: Iterable[str]) -> Authorizer:
        """Read a static token file and RBAC manifests (YAML, several documents a file)."""
        tokens = token_file_users(read_text(token_file, "the token file"))
        documents: list[Mapping[str, Any]] = []
        for path in manifests:  # aliases bounded, FIFOs refused: the one file reader
            documents += [d for d in load(path, "the RBAC manifest", "yaml") if isinstance(d, dict)]
        return cls(tokens, documents)

    def authenticate(self, authorization: str | None) -> User:
        """The user of an ``Authorization`` header; 401 when it names none."""
        scheme, _, token = (authorization or "").partition(" ")
        user = self.tokens.get(token.strip()) if scheme.lower() == "bearer" else None
        if user is None:
            raise ApiError(401, "Unauthorized", "Unauthorized")
        return user

    def authorize(self, user: User, request: Request) -> None:
        """Raise 403 unless a rule bound to ``user`` allows ``request``."""
        if MASTERS in user.groups or self._allowed(user, request):
            key = Request(
                request.verb, request.group, request.resource, request.subresource, None, None
            )
            with self._lock:
                self._used.setdefault(user.name, set()).add(key)
            return
        message = forbidden_message(user.name, request)
        with self._lock:
            self._refused.append(message)
        raise ApiError(403, "Forbidden", message)

    def _allowed(self, user: User, request: Request) -> bool:
        for binding in self._bindings:
            if user.name not in binding.users and not (binding.groups & user.groups):
                continue
            if binding.namespace is not None and binding.namespace != request.namespace:
                continue  # a RoleBinding grants in its namespace only
            kind, name = binding.role
            rules = self._roles.get((kind, name, binding.namespace if kind == "Role" else None))
            if any(rule.allows(request) for rule in rules or ()):
                return True
        return False

    def refused(self) -> list[str]:
        """The message of every request refused so far (403), oldest first."""
        with self._lock:
            return list(self._refused)

    def used_by_user(self) -> dict[str, set[tuple[str, str, str]]]:
        """For each user, ``(api group, resource[/subresource], verb)`` of every request
        they were allowed so far."""
        with self._lock:
            return {
                user: {(r.group, r.full_resource, r.verb) for r in requests}
                for user, requests in self._used.items()
            }


def forbidden_message(user: str, request: Request) -> str:
    """kube-apiserver's message for a request RBAC refuses."""
    qualified = f"{request.resource}.{request.group}" if request.group else request.resource
    named = f' "{request.name}"' if request.name else ""
    where = (
        f'in the namespace "{request.namespace}"'
        if request.namespace is not None
        else "at the cluster scope"
    )
    return (
        f'{qualified}{named} is forbidden: User "{user}" cannot {request.verb} resource '
        f'"{request.full_resource}" in API group "{request.group}" {where}'
    )


def granted(
    documents: Iterable[Mapping[str, Any]], role_names: Iterable[str]
) -> set[tuple[str, str, str]]:
    """``(api group, resource, verb)`` that the named roles' rules spell out (no
    wildcards expanded)."""
    wanted = set(role_names)
    out: set[tuple[str, str, str]] = set()
    for document in documents:
        if document.get("kind") in ("ClusterRole", "Role") and (
            (document.get("metadata") or {}).get("name") in wanted
        ):
            for rule in _rules(document):
                out |= {(g, r, v) for g in rule.groups for r in rule.resources for v in rule.verbs}
    return out
