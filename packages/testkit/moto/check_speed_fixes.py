"""Checks, in one process, that launch_moto.py's speed fixes leave moto's answers byte-for-byte the same.

Usage: <moto venv>/bin/python check_speed_fixes.py   (exit status 0 and "speed fixes: N bodies identical")

It builds a varied EC2 world (instances with several tags, several network interfaces and private IPs,
tags added, overwritten and removed after creation, stopped and terminated instances, a launch template,
an IAM instance profile, an SSM parameter) and, at every step, renders
the same calls twice over the same state: once with moto's own code, once with the speed fixes in place,
and compares the raw response bodies (only the random request id is masked). Each step changes the
world between the comparisons, so the fixed paths read moto's tag store after every kind of mutation.
packages/testkit/test/integration/moto-gaps.int.test.ts runs it.
"""

import os
import re
import runpy
import sys
from typing import Any

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

HERE = os.path.dirname(os.path.abspath(__file__))
REQUEST_ID = re.compile(rb"<(requestId|RequestID|RequestId)>[^<]*</\1>")
PATCHED = [
    ("moto.ec2.models.tags", "TagBackend", "describe_tags"),
    ("moto.core.serialize", "AttributePicker", "__call__"),
    ("xmltodict", None, "_validate_name"),
    ("moto.core.serialize", "ResponseSerializer", "_serialize_type_structure"),
    ("xmltodict", None, "unparse"),
]


def targets() -> list[tuple[Any, str]]:
    import importlib

    return [(getattr(importlib.import_module(mod), cls) if cls else importlib.import_module(mod), attr) for mod, cls, attr in PATCHED]


def xml_documents(rng: Any, count: int) -> list[tuple[Any, dict[str, Any]]]:
    """Varied xmltodict input (and unparse options), valid or not, for fix 6's writer."""
    texts = ["", "plain", "a & b < c > d", 'quote " and \' both', "tab\tnew\nline\rcr", "ünïcode ☃", "]]>"]
    names = ["item", "Key", "x-y", "ns:tag", "_u", "bad name", "<x>", "a/b", "?pi", "q'", "e=1", ""]
    scalars: list[Any] = [None, True, False, 0, 17, -3, 2.5, b"bytes \xff", bytearray(b"ba")] + texts

    def value(depth: int) -> Any:
        roll = rng.random()
        if depth > 3 or roll < 0.35:
            return rng.choice(scalars)
        if roll < 0.55:
            return [value(depth + 1) for _ in range(rng.randrange(0, 4))]
        if roll < 0.6:
            return tuple(value(depth + 1) for _ in range(rng.randrange(0, 3)))
        node: dict[Any, Any] = {}
        for _ in range(rng.randrange(0, 5)):
            kind = rng.random()
            if kind < 0.15:
                node["@" + rng.choice(names[:6] + ["xmlns"])] = rng.choice(scalars)
            elif kind < 0.2:
                node["#text"] = rng.choice(scalars)
            elif kind < 0.22:
                node["#comment"] = rng.choice(texts)
            elif kind < 0.24:
                node["@xmlns"] = {"": "urn:a", "p": "urn:b"}
            elif kind < 0.26:
                node[rng.choice([1, None])] = "odd key"
            else:
                node[rng.choice(names[:6] if rng.random() < 0.93 else names)] = value(depth + 1)
        return node

    docs = []
    for _ in range(count):
        root = {rng.choice(names[:5] if rng.random() < 0.95 else names): value(0)}
        if rng.random() < 0.03:
            root["second"] = "root"
        if rng.random() < 0.02:
            root = {}
        options = {"full_document": rng.random() < 0.5, "short_empty_elements": rng.random() < 0.8}
        if rng.random() < 0.05:
            options["pretty"] = True
        docs.append((root, options))
    return docs


def same_xml(plain: Any, fast: Any) -> int:
    """xmltodict.unparse with and without fix 6 on varied documents: the same text, or the same error."""
    import random

    def outcome(unparse: Any, doc: Any, options: dict[str, Any]) -> tuple[str, str]:
        try:
            return ("text", unparse(doc, **options))
        except Exception as e:  # noqa: BLE001  (the error itself is what must match)
            return (type(e).__name__, str(e))

    docs = xml_documents(random.Random(1804), 3000)
    kinds = set()
    for doc, options in docs:
        a, b = outcome(plain, doc, options), outcome(fast, doc, options)
        if a != b:
            raise SystemExit(f"check_speed_fixes: xmltodict.unparse({doc!r}, **{options}) differs with fix 6:\n--- xmltodict: {a}\n--- fixed: {b}")
        kinds.add(a[0])
    if kinds != {"text", "ValueError"}:
        raise SystemExit(f"check_speed_fixes: the XML documents gave only {sorted(kinds)}: not varied enough")
    return len(docs)


def main() -> None:
    import boto3
    from moto import mock_aws

    launcher = runpy.run_path(os.path.join(HERE, "launch_moto.py"), run_name="launch_moto")
    originals = [getattr(cls, attr) for cls, attr in targets()]
    launcher["apply_fixes"](speed=True)
    fixed = [getattr(cls, attr) for cls, attr in targets()]
    unchanged = [attr for (cls, attr), o, f in zip(targets(), originals, fixed) if o is f]
    if unchanged:
        raise SystemExit(f"check_speed_fixes: the speed fixes did not replace {unchanged}")

    def use(impls: list[Any]) -> None:
        for (cls, attr), impl in zip(targets(), impls):
            setattr(cls, attr, impl)

    unparse = dict(zip(PATCHED, zip(originals, fixed)))[("xmltodict", None, "unparse")]
    documents = same_xml(*unparse)

    from botocore.exceptions import ClientError

    with mock_aws():
        bodies: list[bytes] = []
        clients = {name: boto3.client(name, region_name="us-east-1") for name in ("ec2", "iam", "ssm")}
        for name, client in clients.items():
            client.meta.events.register(f"before-parse.{name}.*", lambda response_dict, **_: bodies.append(response_dict["body"]))
        ec2, iam, ssm = clients["ec2"], clients["iam"], clients["ssm"]
        compared = 0

        def same(step: str, calls: list[tuple[str, dict[str, Any]]]) -> None:
            nonlocal compared
            rendered = []
            for impls in (originals, fixed):
                use(impls)
                bodies.clear()
                for op, kwargs in calls:
                    service, _, method = op.rpartition(".")
                    try:
                        getattr(clients[service or "ec2"], method)(**kwargs)
                    except ClientError:
                        pass  # an error answer: its body is compared too
                rendered.append([REQUEST_ID.sub(b"", b) for b in bodies])
            use(fixed)
            plain, fast = rendered
            if len(plain) != len(calls) or len(fast) != len(calls):
                raise SystemExit(f"check_speed_fixes: {step}: captured {len(plain)}/{len(fast)} bodies for {len(calls)} calls")
            for (op, kwargs), a, b in zip(calls, plain, fast):
                if a != b:
                    raise SystemExit(
                        f"check_speed_fixes: {step}: {op}({kwargs}) differs with the speed fixes:\n"
                        f"--- moto:\n{a.decode()[:3000]}\n--- fixed:\n{b.decode()[:3000]}"
                    )
            compared += len(calls)

        vpc = ec2.create_vpc(CidrBlock="10.7.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.7.1.0/24", AvailabilityZone="us-east-1a")["Subnet"]["SubnetId"]
        sg = ec2.create_security_group(GroupName="nodes", Description="nodes", VpcId=vpc)["GroupId"]
        ids: list[str] = []
        for r in range(3):
            out = ec2.run_instances(
                ImageId="ami-12c6146b",
                MinCount=8,
                MaxCount=8,
                InstanceType="m5.large",
                TagSpecifications=[
                    {
                        "ResourceType": "instance",
                        "Tags": [
                            {"Key": "kubernetes.io/cluster/demo", "Value": "owned"},
                            {"Key": "karpenter.sh/nodepool", "Value": f"pool-{r}"},
                            {"Key": "Name", "Value": ""},
                        ],
                    },
                    {"ResourceType": "volume", "Tags": [{"Key": "karpenter.sh/nodepool", "Value": f"pool-{r}"}]},
                ],
            )
            ids += [i["InstanceId"] for i in out["Instances"]]
        # Several interfaces and private IPs: a primary with secondary IPs, and a second interface.
        multi = ec2.run_instances(
            ImageId="ami-12c6146b",
            MinCount=2,
            MaxCount=2,
            InstanceType="m5.xlarge",
            NetworkInterfaces=[
                {"DeviceIndex": 0, "SubnetId": subnet, "Groups": [sg], "SecondaryPrivateIpAddressCount": 2},
            ],
            TagSpecifications=[{"ResourceType": "network-interface", "Tags": [{"Key": "role", "Value": "primary"}]}],
        )["Instances"]
        ids += [i["InstanceId"] for i in multi]
        eni = ec2.create_network_interface(SubnetId=subnet, Groups=[sg], SecondaryPrivateIpAddressCount=1)
        eni_id = eni["NetworkInterface"]["NetworkInterfaceId"]
        ec2.create_tags(Resources=[eni_id], Tags=[{"Key": "role", "Value": "secondary"}])
        ec2.attach_network_interface(NetworkInterfaceId=eni_id, InstanceId=multi[0]["InstanceId"], DeviceIndex=1)
        untagged = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
        ids.append(untagged)
        ec2.stop_instances(InstanceIds=ids[20:23])
        template = ec2.create_launch_template(
            LaunchTemplateName="nodes",
            LaunchTemplateData={"ImageId": "ami-12c6146b", "SecurityGroupIds": [sg], "MetadataOptions": {"HttpTokens": "required"}},
            TagSpecifications=[{"ResourceType": "launch-template", "Tags": [{"Key": "karpenter.sh/nodepool", "Value": "pool-0"}]}],
        )["LaunchTemplate"]["LaunchTemplateId"]
        iam.create_role(RoleName="nodes", AssumeRolePolicyDocument='{"Version":"2012-10-17","Statement":[]}', Tags=[{"Key": "a", "Value": "b"}])
        iam.create_instance_profile(InstanceProfileName="nodes", Path="/karpenter/")
        iam.add_role_to_instance_profile(InstanceProfileName="nodes", RoleName="nodes")
        ssm.put_parameter(Name="/demo/ami", Value="ami-12c6146b", Type="String")

        live = ["pending", "running"]
        missing = ["i-0000000000000000f", "i-1234567890abcdef0"]
        queries = [
            # The operator's lookup: instance-id (known, stopped, terminated and unknown ids) + live states.
            ("describe_instances", {"Filters": [{"Name": "instance-id", "Values": ids + missing}, {"Name": "instance-state-name", "Values": live}]}),
            ("describe_instances", {"Filters": [{"Name": "instance-id", "Values": missing}, {"Name": "instance-state-name", "Values": live}]}),
            ("describe_instances", {"Filters": [{"Name": "instance-state-name", "Values": ["stopped", "stopping", "terminated", "shutting-down"]}]}),
            ("describe_instances", {"InstanceIds": ids[18:24], "Filters": [{"Name": "instance-state-name", "Values": live}]}),
            ("describe_instances", {"InstanceIds": missing}),  # an error answer
            ("describe_subnets", {}),
            ("describe_security_groups", {}),
            ("describe_vpcs", {}),
            ("describe_availability_zones", {}),
            ("describe_images", {"ImageIds": ["ami-12c6146b"]}),
            ("describe_instance_types", {"InstanceTypes": ["m5.large", "m5.xlarge"]}),
            ("describe_launch_templates", {"LaunchTemplateIds": [template]}),
            ("describe_launch_template_versions", {"LaunchTemplateId": template}),
            ("iam.get_instance_profile", {"InstanceProfileName": "nodes"}),
            ("iam.list_instance_profiles", {}),
            ("ssm.get_parameter", {"Name": "/demo/ami"}),
            ("ssm.get_parameters", {"Names": ["/demo/ami", "/demo/none"]}),
            ("describe_instances", {}),
            ("describe_instances", {"InstanceIds": ids[:5] + [untagged]}),
            ("describe_instances", {"Filters": [{"Name": "instance-id", "Values": ids[3:20]}, {"Name": "instance-state-name", "Values": live}]}),
            ("describe_instances", {"Filters": [{"Name": "tag:karpenter.sh/nodepool", "Values": ["pool-1", "pool-2"]}]}),
            ("describe_instances", {"Filters": [{"Name": "tag-key", "Values": ["Name"]}]}),
            ("describe_instances", {"Filters": [{"Name": "instance-id", "Values": [multi[0]["InstanceId"], multi[1]["InstanceId"]]}]}),
            ("describe_instances", {"MaxResults": 5}),
            ("describe_tags", {}),
            ("describe_tags", {"Filters": [{"Name": "resource-id", "Values": [ids[0]]}]}),
            ("describe_tags", {"Filters": [{"Name": "resource-id", "Values": [ids[0][:6] + "*"]}]}),
            ("describe_tags", {"Filters": [{"Name": "resource-id", "Values": [untagged]}]}),
            ("describe_tags", {"Filters": [{"Name": "resource-id", "Values": ["i-0000000000000000f"]}]}),
            ("describe_tags", {"Filters": [{"Name": "resource-type", "Values": ["network-interface"]}]}),
            ("describe_tags", {"Filters": [{"Name": "key", "Values": ["karpenter.sh/*"]}, {"Name": "resource-id", "Values": [ids[9]]}]}),
            ("describe_network_interfaces", {}),
            ("describe_volumes", {}),
        ]
        same("after creation", queries)

        ec2.create_tags(Resources=ids[:6], Tags=[{"Key": "karpenter.sh/nodeclaim", "Value": "claim-a"}, {"Key": "Name", "Value": "renamed"}])
        ec2.create_tags(Resources=[untagged], Tags=[{"Key": "late", "Value": "1"}])
        ec2.delete_tags(Resources=ids[2:4], Tags=[{"Key": "karpenter.sh/nodepool"}])
        ec2.delete_tags(Resources=ids[4:8], Tags=[{"Key": "Name", "Value": "renamed"}])  # only where the value matches
        ec2.delete_tags(Resources=[ids[8]], Tags=[{"Key": "kubernetes.io/cluster/demo", "Value": "shared"}])  # no match: kept
        same("after CreateTags and DeleteTags", queries)

        ec2.terminate_instances(InstanceIds=ids[10:14] + [multi[1]["InstanceId"]])
        ec2.create_tags(Resources=[ids[10]], Tags=[{"Key": "after", "Value": "termination"}])
        same("after TerminateInstances", queries)

        ec2.delete_tags(Resources=[untagged], Tags=[{"Key": "late"}])
        ec2.delete_tags(Resources=[eni_id], Tags=[{"Key": "role"}])
        same("after removing every tag of a resource", queries)

        # A response transformer that applies at one key path only: the same structure (GroupIdentifier)
        # appears in the same answer under an instance and under its network interfaces.
        from moto.ec2.responses._base_response import EC2BaseResponse

        grouped = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, SubnetId=subnet, SecurityGroupIds=[sg])
        one_path = "Instance.SecurityGroups.GroupIdentifier.GroupName"
        EC2BaseResponse.RESPONSE_KEY_PATH_TO_TRANSFORMER[one_path] = lambda name: f"renamed-{name}"
        try:
            same("with a transformer at one key path", [("describe_instances", {"InstanceIds": [grouped["Instances"][0]["InstanceId"]]})])
            if not re.search(rb"<groupName>renamed-", bodies[-1]) or not re.search(rb"<groupName>(?!renamed-)", bodies[-1]):
                raise SystemExit("check_speed_fixes: the one-path transformer did not apply to exactly one of the paths:\n" + bodies[-1].decode()[:4000])
        finally:
            del EC2BaseResponse.RESPONSE_KEY_PATH_TO_TRANSFORMER[one_path]

    print(f"speed fixes: {compared} bodies identical over 5 states; {documents} XML documents identical", flush=True)


if __name__ == "__main__":
    sys.exit(main())
