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

5. Structure member reads. After fix 3, moto 5.2.5 still spends most of a DescribeInstances answer
   (~130 members per instance, most of them absent) in the layers around each member read: a context
   object and the joined key path built per member, fix 3's cache keys, and moto's `get_value` helpers
   around a plain `getattr`. The structure writer now joins the key path once per structure, looks up
   the names and the response transformer of all its members at once (per object class, structure
   shape and key path, for one response), and reads a plain name with the same `getattr` (or `[]` for
   an object with `__getitem__`) that moto's helper ends in; a dotted name still takes the helper. The
   members are read in the same order, with the same names, transformers and `None` skipping. An
   object fix 3 does not cache (an instance-level `Meta`, a class with `__getattr__`) has its names
   asked per member, as before; a serializer that overrides the member or value step, or a picker
   other than fix 3's, keeps moto's own walk.

6. XML writing. moto 5.2.5 turns each answer into XML with xmltodict's `unparse`, which goes through
   a SAX generator call by call (~80 elements per instance). For what moto passes (a dict, UTF-8, no
   pretty printing, no output stream) a direct writer emits the same text: the same declaration, the
   same escaping (saxutils' `escape` and `quoteattr`), the same `<x/>` for an element with nothing
   written inside, the same value-to-text conversion, empty lists skipped. Anything else (comments,
   namespace maps, several roots, an iterator, an invalid name...) goes to xmltodict itself, from the
   start, so it writes the same or raises its own error. Applied only to the xmltodict version it was
   checked against (a note on stderr otherwise).
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

    def pick(self: AttributePicker, context: AttributePickerContext) -> Any:
        obj = context.obj
        for possible_key in picker_keys(self, obj, context.shape, context.key, lambda: context):
            value = get_value(obj, possible_key, MISSING)
            if value is not MISSING:
                break
        else:
            value = None
        path = picker_transform(self, f"{context.key_path}.{context.key}")
        if path is not None:
            value = self.response_transformers[path](value)
        return value

    AttributePicker.__call__ = pick  # type: ignore[method-assign]


_NOT_CACHED = object()  # "not cached yet" (a cached transform may be None)


def picker_keys(picker: Any, obj: Any, shape: Any, key: str, context: Any) -> tuple[str, ...]:
    """Fix 3: the attribute names `picker` tries for member `key` of `obj`; `context()` builds moto's context."""
    cls = type(obj)
    if hasattr(cls, "__getattr__") or "Meta" in (getattr(obj, "__dict__", None) or ()):
        return tuple(picker.get_possible_keys(context()))
    cache = picker.__dict__.setdefault("_launch_moto_keys", {})
    # botocore shapes hash by identity; the key holds them, so no other shape can take their place.
    cache_key = (cls, obj.__class__, shape, getattr(shape, "parent", None), key)
    keys = cache.get(cache_key)
    if keys is None:
        keys = cache[cache_key] = tuple(picker.get_possible_keys(context()))
    return keys


def picker_transform(picker: Any, key_path: str) -> Any:
    """Fix 3: the response transformer moto applies at `key_path` (None for none)."""
    cache = picker.__dict__.setdefault("_launch_moto_transforms", {})
    found = cache.get(key_path, _NOT_CACHED)
    if found is _NOT_CACHED:
        found = next((path for path in picker.response_transformers if key_path.endswith(path)), None)
        cache[key_path] = found
    return found


def plain_names(names: tuple[Any, ...]) -> tuple[tuple[Any, bool], ...]:
    """Each name with whether moto's get_value reads it as one attribute or key (a str without a dot)."""
    return tuple((name, type(name) is str and "." not in name) for name in names)


def fix_structure_member_reads() -> None:
    from moto.core.serialize import AttributePicker, AttributePickerContext, ResponseSerializer
    from moto.core.utils import MISSING, get_value

    walk = ResponseSerializer._serialize_type_structure
    member_of = ResponseSerializer._serialize_structure_member
    get_value_of = ResponseSerializer.get_value
    pick = AttributePicker.__call__  # fix 3's, which this inlines: applied after it

    def serialize_structure(self: ResponseSerializer, serialized: Any, value: Any, shape: Any, key: str) -> None:
        cls = type(self)
        picker = self._value_picker
        if cls._serialize_structure_member is not member_of or cls.get_value is not get_value_of or type(picker).__call__ is not pick:
            return walk(self, serialized, value, shape, key)
        if value is None:
            return
        wrapper = self.MAP_TYPE() if key else serialized
        # self.path is the same for every member: _serialize pushes and pops around each one.
        key_path = ".".join(self.path)
        operation_model = self.operation_model

        def context(member_key: str, member_shape: Any) -> AttributePickerContext:
            return AttributePickerContext(
                obj=value,
                key=member_key,
                shape=member_shape,
                operation_model=operation_model,
                service_model=operation_model.service_model,
                key_path=key_path,
            )

        # The names to try and the transformer of every member, worked out once per (object class,
        # structure, key path) with fix 3's caches; per member for an object fix 3 does not cache.
        # Whether the object is cached and has __getitem__ is asked once per structure, not per member:
        # reading a member does not add `Meta`, `__getattr__` or `__getitem__` to the object.
        obj_cls = type(value)
        plan: list[tuple[str, Any, Any, Any]] | None = None
        if not (hasattr(obj_cls, "__getattr__") or "Meta" in (getattr(value, "__dict__", None) or ())):
            plans = picker.__dict__.setdefault("_launch_moto_plans", {})
            plan = plans.get((obj_cls, value.__class__, shape, key_path))
            if plan is None:
                plan = []
                for member_key, member_shape in shape.members.items():
                    member_shape.parent = shape
                    names = picker_keys(picker, value, member_shape, member_key, lambda: context(member_key, member_shape))
                    plan.append((member_key, member_shape, plain_names(names), picker_transform(picker, f"{key_path}.{member_key}")))
                plans[(obj_cls, value.__class__, shape, key_path)] = plan
        if plan is None:
            plan = [(member_key, member_shape, None, None) for member_key, member_shape in shape.members.items()]
        has_items = hasattr(value, "__getitem__")
        transformers = picker.response_transformers
        for member_key, member_shape, names, transform in plan:
            member_shape.parent = shape
            if names is None:
                names = plain_names(picker_keys(picker, value, member_shape, member_key, lambda: context(member_key, member_shape)))
                transform = picker_transform(picker, f"{key_path}.{member_key}")
            for name, plain in names:
                # moto.core.utils.get_value, inlined for a plain name.
                if not plain:
                    member_value = get_value(value, name, MISSING)
                elif has_items:
                    try:
                        member_value = value[name]
                    except (KeyError, IndexError, TypeError, AttributeError):
                        member_value = MISSING
                else:
                    member_value = getattr(value, name, MISSING)
                if member_value is not MISSING:
                    break
            else:
                member_value = None
            if transform is not None:
                member_value = transformers[transform](member_value)
            if member_value is not None:
                self._serialize(wrapper, member_value, member_shape, member_key)
        if key:
            self._default_serialize(serialized, wrapper, shape, key)

    ResponseSerializer._serialize_type_structure = serialize_structure  # type: ignore[method-assign]


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


def fix_xml_writer() -> None:
    import importlib.metadata
    from xml.sax.saxutils import escape, quoteattr

    import xmltodict

    installed = importlib.metadata.version("xmltodict")
    if installed != XMLTODICT_CHECKED:
        print(f"launch_moto: fix 6 skipped: xmltodict {installed} is not {XMLTODICT_CHECKED}", file=sys.stderr)
        return
    unparse = xmltodict.unparse
    to_text = xmltodict._convert_value_to_string
    checked: set[tuple[str, str]] = set()
    element_names: set[str] = set()  # element names found valid (the common case, without a tuple)

    class Unusual(Exception):
        """Input this writer leaves to xmltodict (which then writes it, or raises its own error)."""

    def check_name(name: Any, kind: str) -> None:
        if type(name) is not str:
            raise Unusual
        if (name, kind) not in checked:
            try:
                xmltodict._validate_name(name, kind)
            except ValueError:
                raise Unusual from None
            if len(checked) < 10_000:  # bounded: names come from the API models
                checked.add((name, kind))
                if kind == "element" and type(name) is str:
                    element_names.add(name)

    def render(document: dict[Any, Any], full_document: bool, short_empty_elements: bool) -> str:
        out: list[str] = ['<?xml version="1.0" encoding="utf-8"?>\n'] if full_document else []
        write = out.append

        def element(key: Any, value: Any, depth: int) -> None:
            if key not in element_names:
                if key == "#comment":
                    raise Unusual
                check_name(key, "element")
            kind = type(value)
            if kind is str:  # the common leaf: one element with text
                if value:
                    write(f"<{key}>{escape(value)}</{key}>")
                else:
                    write(f"<{key}/>" if short_empty_elements else f"<{key}></{key}>")
                return
            if kind is not list and kind is not tuple:
                if hasattr(value, "__iter__") and not isinstance(value, (str, bytes, bytearray, memoryview, dict)):
                    raise Unusual  # another iterable: xmltodict would consume it
                value = (value,)
            for index, item in enumerate(value):
                if full_document and depth == 0 and index > 0:
                    raise Unusual
                if item is None:
                    item = {}
                elif not isinstance(item, (dict, str)):
                    item = to_text(item)
                if isinstance(item, str):
                    item = {"#text": item}
                text = None
                attributes = ""
                children = []
                for child_key, child_value in item.items():
                    if child_key == "#text":
                        text = None if child_value is None else to_text(child_value)
                        continue
                    if isinstance(child_key, str) and child_key.startswith("@"):
                        if child_key == "@xmlns" and isinstance(child_value, dict):
                            raise Unusual
                        if child_value is None:
                            child_value = ""
                        elif not isinstance(child_value, str):
                            child_value = to_text(child_value)
                        name = child_key[1:]
                        check_name(name, "attribute")
                        attributes += f" {name}={quoteattr(child_value)}"
                        continue
                    if isinstance(child_value, list) and not child_value:
                        continue
                    children.append((child_key, child_value))
                write(f"<{key}{attributes}")
                start = len(out)
                write(">")
                for child_key, child_value in children:
                    element(child_key, child_value, depth + 1)
                if text:
                    write(escape(text))
                if len(out) > start + 1 or not short_empty_elements:
                    write(f"</{key}>")
                else:
                    out[start] = "/>"

        seen_root = False
        for key, value in document.items():
            if key == "#comment" or (full_document and seen_root):
                raise Unusual
            element(key, value, 0)
            seen_root = True
        if full_document and not seen_root:
            raise Unusual
        return "".join(out)

    def write_xml(input_dict: Any, output: Any = None, encoding: str = "utf-8", full_document: bool = True,
                  short_empty_elements: bool = False, comment_key: str = "#comment", **kwargs: Any) -> Any:
        plain = output is None and encoding == "utf-8" and comment_key == "#comment" and type(input_dict) is dict
        if plain and not (kwargs.keys() - {"pretty"}) and not kwargs.get("pretty"):
            try:
                return render(input_dict, full_document, short_empty_elements)
            except Unusual:
                pass
        return unparse(input_dict, output, encoding, full_document, short_empty_elements, comment_key, **kwargs)

    xmltodict.unparse = write_xml


def apply_fixes(speed: bool = True) -> None:
    """Every gap fix; and the speed fixes unless `speed` is False (to compare answers without them)."""
    fix_fleet_security_groups()
    if speed:
        fix_tags_of_one_resource()
        fix_serializer_key_lookups()
        fix_xml_name_checks()
        fix_structure_member_reads()
        fix_xml_writer()


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
