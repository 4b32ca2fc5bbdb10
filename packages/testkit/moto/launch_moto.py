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

Speed fixes: they change how fast moto answers, never what it answers (the same XML for the same state;
moto-gaps.int.test.ts compares the bodies against a moto launched without them, and check_speed_fixes.py
does the same in one process). They keep the emulator from being the bottleneck of a burst of
DescribeInstances calls (the csr-burst benchmark), which real EC2 answers in well under a second.

2. Tags of one resource. moto 5.2.5 reads an EC2 resource's tags (once per instance, ENI, volume... in
   every response that lists them, and in every `tag:` filter) through `describe_tags`, which matches a
   regular expression against the resource id of every tag in the backend: O(resources x all tags) per
   DescribeInstances. The tag store is already a dict keyed by resource id, so a lookup of one literal id
   reads that entry and returns the same list in the same order; other filters take moto's own path.

3. Serializer key lookups. moto 5.2.5's response serializer asks, for every member of every structure it
   writes (~150 per instance), six alias providers which attribute names to try, then tests the member's
   key path against every response transformer (`endswith`): the same answers for every instance of a
   response. The picker of one response remembers them per (object class, shape, parent shape, key) and
   per key path. Objects whose aliases could differ from their class's (an instance-level `Meta`, or a
   class with `__getattr__`) are asked every time.

4. XML element names. moto 5.2.5 writes its XML with xmltodict (1.0.4 when checked), which validates
   every element name of every response character by character (~100 per instance). The check depends
   on the name alone, so a name found valid once is not checked again; invalid names still raise each
   time. Applied only to the xmltodict version it was checked against (a note on stderr otherwise).
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


def fix_tags_of_one_resource() -> None:
    from moto.ec2.models.tags import TagBackend
    from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix

    scan = TagBackend.describe_tags

    def describe_tags(self: TagBackend, filters: dict[str, list[str]] | None = None) -> list[dict[str, str]]:
        ids = filters.get("resource-id") if filters is not None and len(filters) == 1 else None
        # Only a literal id: a pattern (*, ?, [...], or an escape) keeps moto's regular-expression scan.
        if not ids or len(ids) != 1 or not isinstance(ids[0], str) or any(c in ids[0] for c in "*?[\\"):
            return scan(self, filters)
        resource_id = ids[0]
        # .get, not [], so that the lookup does not add an empty entry to the defaultdict.
        tags = self.tags.get(resource_id) or {}
        resource_type = EC2_PREFIX_TO_RESOURCE.get(get_prefix(resource_id), "")
        return [
            {"resource_id": resource_id, "key": key, "value": value, "resource_type": resource_type}
            for key, value in tags.items()
        ]

    TagBackend.describe_tags = describe_tags  # type: ignore[method-assign]


def fix_serializer_key_lookups() -> None:
    from moto.core.serialize import AttributePicker, AttributePickerContext
    from moto.core.utils import MISSING, get_value

    missing = object()  # "not cached yet" (a cached transform may be None)

    def possible_keys(self: AttributePicker, context: AttributePickerContext) -> list[str] | tuple[str, ...]:
        obj, shape = context.obj, context.shape
        cls = type(obj)
        if hasattr(cls, "__getattr__") or "Meta" in (getattr(obj, "__dict__", None) or ()):
            return tuple(self.get_possible_keys(context))
        cache = self.__dict__.setdefault("_launch_moto_keys", {})
        # botocore shapes hash by identity; the key holds them, so no other shape can take their place.
        key = (cls, obj.__class__, shape, getattr(shape, "parent", None), context.key)
        keys = cache.get(key)
        if keys is None:
            keys = cache[key] = tuple(self.get_possible_keys(context))
        return keys

    def transform_for(self: AttributePicker, key_path: str) -> Any:
        cache = self.__dict__.setdefault("_launch_moto_transforms", {})
        found = cache.get(key_path, missing)
        if found is missing:
            found = next((path for path in self.response_transformers if key_path.endswith(path)), None)
            cache[key_path] = found
        return found

    def pick(self: AttributePicker, context: AttributePickerContext) -> Any:
        obj = context.obj
        for possible_key in possible_keys(self, context):
            value = get_value(obj, possible_key, MISSING)
            if value is not MISSING:
                break
        else:
            value = None
        path = transform_for(self, f"{context.key_path}.{context.key}")
        if path is not None:
            value = self.response_transformers[path](value)
        return value

    AttributePicker.__call__ = pick  # type: ignore[method-assign]


XMLTODICT_CHECKED = "1.0.4"


def fix_xml_name_checks() -> None:
    import importlib.metadata

    import xmltodict

    installed = importlib.metadata.version("xmltodict")
    if installed != XMLTODICT_CHECKED:
        print(f"launch_moto: fix 4 skipped: xmltodict {installed} is not {XMLTODICT_CHECKED}", file=sys.stderr)
        return
    validate = xmltodict._validate_name
    valid: set[tuple[str, str]] = set()

    def validate_name(value: Any, kind: str) -> None:
        if type(value) is str and (value, kind) in valid:
            return
        validate(value, kind)  # raises on an invalid name, every time
        if type(value) is str and len(valid) < 10_000:  # bounded: names come from the API models
            valid.add((value, kind))

    xmltodict._validate_name = validate_name


def apply_fixes(speed: bool = True) -> None:
    """Every gap fix; and the speed fixes unless `speed` is False (to compare answers without them)."""
    fix_fleet_security_groups()
    if speed:
        fix_tags_of_one_resource()
        fix_serializer_key_lookups()
        fix_xml_name_checks()


def main() -> None:
    import moto
    from moto.server import main as moto_server

    pinned = pinned_moto_version()
    if moto.__version__ != pinned:
        raise SystemExit(
            f"launch_moto: moto {moto.__version__} is installed but its fixes are pinned to {pinned} "
            "(tools/cluster/versions.env): run `npm run setup`, or re-check each fix against the new version"
        )
    apply_fixes(speed=os.environ.get("LAUNCH_MOTO_SPEED_FIXES", "1") != "0")
    moto_server(sys.argv[1:])


if __name__ == "__main__":
    main()
