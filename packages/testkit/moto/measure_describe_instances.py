"""Measures moto's DescribeInstances as the operator sends it in a CSR burst: in one process and through a server.

Usage: <moto venv>/bin/python measure_describe_instances.py [--instances 1000,2000] [--ids 200] [--parallel 5]
         [--rounds 3] [--profile] [--no-speed-fixes] [--only process|server] [--launcher <launch_moto.py>]

For each world size it launches that many instances (RunInstances in batches of 250, tagged like
Karpenter's, as the csr-burst benchmark does) and times DescribeInstances with `--ids` instance ids in an
`instance-id` filter plus `instance-state-name` pending|running (the operator's request):
  - in one process (moto's backend and response rendering, no HTTP), serial;
  - through launch_moto.py's server on 127.0.0.1 (a raw HTTP POST, so the client's parsing is not counted),
    serial, then `--parallel` calls at once (the operator's first lookup of a burst).
`--profile` prints the top of a cProfile of one in-process call. Figures only: it asserts nothing, and the
same run with `--no-speed-fixes` gives the ratio. Every server it starts is stopped before it exits.
"""

import argparse
import cProfile
import io
import os
import pstats
import random
import runpy
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(HERE, "launch_moto.py")  # --launcher: another copy of it (an older version, to compare)
LIVE = ["pending", "running"]
AUTH = "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=0"


def launch_world(ec2: Any, count: int) -> list[str]:
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.64.0/18", AvailabilityZone="us-east-1a")["Subnet"]["SubnetId"]
    ids: list[str] = []
    for left in range(count, 0, -250):
        n = min(left, 250)
        out = ec2.run_instances(
            ImageId="ami-12c6146b",
            InstanceType="m5.large",
            MinCount=n,
            MaxCount=n,
            SubnetId=subnet,
            TagSpecifications=[
                {
                    "ResourceType": "instance",
                    "Tags": [
                        {"Key": "kubernetes.io/cluster/bench", "Value": "owned"},
                        {"Key": "karpenter.sh/nodepool", "Value": "default"},
                    ],
                }
            ],
        )
        ids += [i["InstanceId"] for i in out["Instances"]]
    return ids


def query_body(ids: list[str]) -> bytes:
    params = [("Action", "DescribeInstances"), ("Version", "2016-11-15"), ("Filter.1.Name", "instance-id")]
    params += [(f"Filter.1.Value.{n}", i) for n, i in enumerate(ids, 1)]
    params += [("Filter.2.Name", "instance-state-name")] + [(f"Filter.2.Value.{n}", s) for n, s in enumerate(LIVE, 1)]
    return urllib.parse.urlencode(params).encode()


def post(url: str, body: bytes) -> tuple[float, int]:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/x-www-form-urlencoded", "Authorization": AUTH})
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=120) as r:
        data = r.read()
    return time.perf_counter() - t, data.count(b"<instanceId>")


def chunks(ids: list[str], size: int, n: int) -> list[list[str]]:
    rng = random.Random(7)
    picked = rng.sample(ids, min(len(ids), size * n))
    return [picked[k * size : (k + 1) * size] for k in range(n)]


def fmt(xs: list[float]) -> str:
    return "[" + ", ".join(f"{x:.3f}" for x in xs) + "]"


def in_process(count: int, args: argparse.Namespace) -> None:
    import boto3
    from moto import mock_aws

    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        ids = launch_world(ec2, count)
        ec2.terminate_instances(InstanceIds=ids[:: max(1, count // 50)])  # a few not live, as after scale-downs
        batches = chunks(ids, args.ids, args.parallel)
        filters = lambda b: [{"Name": "instance-id", "Values": b}, {"Name": "instance-state-name", "Values": LIVE}]  # noqa: E731
        times = []
        for _ in range(args.rounds):
            for b in batches:
                t = time.perf_counter()
                ec2.describe_instances(Filters=filters(b))
                times.append(time.perf_counter() - t)
        print(f"  in-process (boto3 parse included), serial: median {sorted(times)[len(times) // 2]:.3f}s  all {fmt(times)}")
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            ec2.describe_instances(Filters=filters(batches[0]))
            prof.disable()
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(40)
            print(out.getvalue())
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
            print(out.getvalue())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def through_server(count: int, args: argparse.Namespace) -> None:
    import boto3

    port = free_port()
    env = dict(os.environ, LAUNCH_MOTO_SPEED_FIXES="0" if args.no_speed_fixes else "1")
    server = subprocess.Popen([sys.executable, args.launcher, "-H", "127.0.0.1", "-p", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "moto-api/", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("measure: the server did not start")
                time.sleep(0.2)
        ec2 = boto3.client("ec2", region_name="us-east-1", endpoint_url=url)
        ids = launch_world(ec2, count)
        ec2.terminate_instances(InstanceIds=ids[:: max(1, count // 50)])
        bodies = [query_body(b) for b in chunks(ids, args.ids, args.parallel)]
        serial: list[float] = []
        found: list[int] = []
        for _ in range(args.rounds):
            for b in bodies:
                dt, n = post(url, b)
                serial.append(dt)
                found.append(n)
        print(f"  server, serial: median {sorted(serial)[len(serial) // 2]:.3f}s  all {fmt(serial)}  (instances per answer {sorted(set(found))})")
        with ThreadPoolExecutor(len(bodies)) as pool:
            for _ in range(args.rounds):
                t = time.perf_counter()
                each = [dt for dt, _ in pool.map(lambda b: post(url, b), bodies)]
                wall = time.perf_counter() - t
                print(f"  server, {len(bodies)} at once: wall {wall:.3f}s  each {fmt(each)}")
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--instances", default="1000,2000")
    p.add_argument("--ids", type=int, default=200)
    p.add_argument("--parallel", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--no-speed-fixes", action="store_true")
    p.add_argument("--only", choices=["process", "server"])
    p.add_argument("--launcher", default=LAUNCHER)
    args = p.parse_args()
    launcher = runpy.run_path(args.launcher, run_name="launch_moto")
    launcher["apply_fixes"](speed=not args.no_speed_fixes)
    print(f"{args.launcher}: speed fixes {'off' if args.no_speed_fixes else 'on'}; {args.ids} ids a call, {args.parallel} calls", flush=True)
    for count in [int(c) for c in args.instances.split(",")]:
        print(f"{count} instances:", flush=True)
        if args.only != "server":
            in_process(count, args)
        if args.only != "process":
            through_server(count, args)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
