"""Starts moto's server (the EC2 emulator) with the fixes the real Karpenter needs, then serves.

Usage: <moto venv>/bin/python launch_moto.py -H 127.0.0.1 -p <port>   (the arguments of moto_server)

Each fix closes one gap between moto and EC2 that the real karpenter-provider-aws runs into, and is
pinned to the moto version in tools/cluster/versions.env (MOTO_VERSION): on another version the launcher
refuses to start, so a moto upgrade re-checks every fix (packages/testkit/test/integration/moto-gaps.int.test.ts
covers each one through the API).

1. CreateFleet security groups. moto 5.2.5 gives fleet instances the groups of a launch-template field
   (`GroupSet`) that CreateLaunchTemplate never fills, so every instance lands in the VPC's default group.
   EC2 takes them from `SecurityGroupIds` or from the primary network interface's `Groups`, where
   Karpenter puts them; otherwise Karpenter sees SecurityGroupDrift and replaces the node forever.
"""

import os
import re
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
VERSIONS_ENV = os.path.join(HERE, "..", "..", "..", "tools", "cluster", "versions.env")


def pinned_moto_version() -> str:
    with open(VERSIONS_ENV, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^MOTO_VERSION=(\S+)$", line.strip())
            if m:
                return m.group(1)
    raise SystemExit(f"launch_moto: MOTO_VERSION is not set in {VERSIONS_ENV}")


def template_groups(data: dict[str, Any]) -> list[str]:
    """The security groups EC2 gives an instance launched from this launch-template data."""
    groups = list(data.get("SecurityGroupIds") or [])
    for nic in data.get("NetworkInterfaces") or []:
        if str(nic.get("DeviceIndex", 0)) == "0":
            groups += [g for g in nic.get("Groups") or [] if g not in groups]
    return groups


def fix_fleet_security_groups() -> None:
    from moto.ec2.models.fleets import Fleet

    def with_template_groups(original):  # type: ignore[no-untyped-def]
        def run(self: Fleet, *args: Any, **kwargs: Any) -> Any:
            for spec in self.launch_specs:
                lt = spec.launch_template_spec or {}
                if spec.group_set or "LaunchTemplateId" not in lt:
                    continue
                template = self.ec2_backend.get_launch_template(template_id=lt["LaunchTemplateId"])
                version = lt.get("Version", template.default_version_number)
                spec.group_set = template_groups(template.get_version(version).data)
            return original(self, *args, **kwargs)

        return run

    Fleet.create_on_demand_requests = with_template_groups(Fleet.create_on_demand_requests)
    Fleet.create_spot_requests = with_template_groups(Fleet.create_spot_requests)


def main() -> None:
    import moto
    from moto.server import main as moto_server

    pinned = pinned_moto_version()
    if moto.__version__ != pinned:
        raise SystemExit(
            f"launch_moto: moto {moto.__version__} is installed but its fixes are pinned to {pinned} "
            "(tools/cluster/versions.env): run `npm run setup`, or re-check each fix against the new version"
        )
    fix_fleet_security_groups()
    moto_server(sys.argv[1:])


if __name__ == "__main__":
    main()
