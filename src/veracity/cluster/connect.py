"""Connecting this process to a Ray cluster (ray.init), with one-line errors a user can act on."""

from __future__ import annotations

import logging
import re
import socket
from types import ModuleType

from ..errors import UserError

INSTALL_HINT = "pip install 'veracity[ray]'"


def import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise UserError(f"--ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def connect(address: str | None) -> bool:
    """Connect to the cluster at `address`; None: the cluster started on this machine with `ray start --head`
    (or RAY_ADDRESS), else a new one-machine cluster for this run. True when this call connected (so the caller
    disconnects at the end), False when this process was connected already."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    if address:
        reachable(address)
    try:
        ray.init(address=address or None, log_to_driver=False, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as e:
        detail = " ".join(str(e).split())[:300]
        hint = (
            "; if the cluster uses a token, export RAY_AUTH_MODE=token (the token is read from "
            "~/.ray/auth_token, RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN)"
            if address
            else ""
        )
        raise UserError(
            f"cannot connect to the Ray cluster{f' at {address}' if address else ''}: {detail}{hint}"
        ) from None
    return True


def reachable(address: str, timeout: float = 5.0) -> None:
    """A one-line UserError unless something listens at HOST:PORT (Ray itself would retry for minutes)."""
    found = re.fullmatch(r"\[?([^\]]+?)\]?:(\d+)", address.strip())
    if not found:
        return  # an address form Ray knows and this check does not (e.g. "auto"): left to ray.init
    try:
        with socket.create_connection((found.group(1), int(found.group(2))), timeout=timeout):
            pass
    except OSError as e:
        raise UserError(
            f"nothing answers at the Ray address {address} ({e.strerror or e}): start the head with "
            "`ray start --head` and give the address it prints"
        ) from None


def node_cpus() -> dict[str, float]:
    """CPUs of each live node of the connected cluster, by node id."""
    return {n["NodeID"]: float(n.get("Resources", {}).get("CPU", 0.0)) for n in import_ray().nodes() if n.get("Alive")}
