#!/usr/bin/env python3
"""A fake AWS on loopback for running the real Kubernetes AWS cloud providers.

Test fixture (the product stays C++). One process that:

* runs moto in server mode on 127.0.0.1 (EC2, ELB, ELBv2, autoscaling, KMS,
  ... all on one URL: moto dispatches on the request's signing service);
* seeds one VPC, a subnet per (zone, /24) and, per simulated node, one EC2
  instance tagged ``kubernetes.io/cluster/<cluster-id>=owned`` and
  ``Name=<node>``, whose private IP is the node's loopback address;
* serves an EC2 instance-metadata endpoint per node on THAT node's address
  (``IP:--imds-port``), so a manager started with
  ``AWS_EC2_METADATA_SERVICE_ENDPOINT=http://IP:PORT/`` sees its own instance
  the way a pod sees 169.254.169.254 on a real instance, including IMDSv2
  tokens and instance-profile credentials (no keys in any manifest); or, for
  a node that is a network namespace of its own (``--imds-netns``), inside
  that namespace on ``--imds-host`` (169.254.169.254, as on EC2), so that
  every process of the node finds its instance at the default address;
* optionally serves the same AWS API over HTTPS too (``--tls-host``,
  ``--tls-port``, ``--tls-cert``, ``--tls-key``), for clients that only
  speak to AWS's own https:// endpoints, such as ecr-credential-provider
  (``api.ecr.<region>.amazonaws.com``, mapped to that address in the
  client's /etc/hosts, the certificate trusted in its CA bundle); moto
  answers ECR's GetAuthorizationToken there;
* writes a JSON ready file, then serves until SIGTERM/SIGINT and exits 0.

The metadata paths served are those read by the in-tree AWS provider of
kube-controller-manager 1.26 (k8s.io/legacy-cloud-providers/aws v0.26.13),
by aws-cloud-controller-manager 1.27 (k8s.io/cloud-provider-aws v1.27.2) and
by aws-sdk-go v1 (ec2metadata client, EC2 role credentials provider).
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import ipaddress
import json
import os
import secrets
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

ACCOUNT_ID = "123456789012"  # moto's default account
TOKEN_HEADER = "x-aws-ec2-metadata-token"
TTL_HEADER = "x-aws-ec2-metadata-token-ttl-seconds"
MAX_TOKEN_TTL = 21600


class FixtureError(Exception):
    """A problem the operator of the fixture must fix; printed without a traceback."""


@dataclass
class Node:
    name: str
    ip: str
    zone: str
    # Filled in from EC2 after seeding.
    instance_id: str = ""
    private_dns_name: str = ""
    private_ip: str = ""
    mac: str = ""
    eni_id: str = ""
    vpc_id: str = ""
    vpc_cidr: str = ""
    subnet_id: str = ""
    subnet_cidr: str = ""
    security_group_ids: list[str] = field(default_factory=list)
    image_id: str = ""
    launch_time: str = ""

    @property
    def provider_id(self) -> str:
        return f"aws:///{self.zone}/{self.instance_id}"


def parse_node(spec: str, region: str) -> Node:
    """NAME=IP or NAME=IP@ZONE; the zone defaults to <region>a."""
    name, sep, rest = spec.partition("=")
    if not sep or not name or not rest:
        raise FixtureError(f"--node {spec!r}: expected NAME=IP or NAME=IP@ZONE")
    ip, _, zone = rest.partition("@")
    try:
        addr = ipaddress.IPv4Address(ip)
    except ValueError:
        raise FixtureError(f"--node {spec!r}: {ip!r} is not an IPv4 address") from None
    zone = zone or f"{region}a"
    if not zone.startswith(region):
        raise FixtureError(f"--node {spec!r}: zone {zone!r} is not in region {region!r}")
    return Node(name=name, ip=str(addr), zone=zone)


# --------------------------------------------------------------------------- EC2


def api_logger(app, log: Callable[[dict], None]):
    """WSGI middleware: one log entry per AWS API call (service, action, status)."""
    import io
    import re
    from urllib.parse import parse_qs

    scope = re.compile(r"Credential=[^/]+/[^/]+/([^/]+)/([^/]+)/")

    def wrapped(environ, start_response):
        m = scope.search(environ.get("HTTP_AUTHORIZATION", ""))
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        params = parse_qs(environ.get("QUERY_STRING", ""))
        if environ.get("CONTENT_TYPE", "").startswith("application/x-www-form-urlencoded"):
            params.update(parse_qs(body.decode("utf-8", "replace")))
        entry = {"api": m.group(2) if m else "?", "region": m.group(1) if m else "?",
                 "action": params.get("Action", [environ.get("HTTP_X_AMZ_TARGET", "?")])[0]}

        def start(status, headers, exc_info=None):
            entry["status"] = int(status.split()[0])
            log(entry)
            return start_response(status, headers, exc_info)

        return app(environ, start)

    return wrapped


def start_moto(host: str, port: int, log: Callable[[dict], None],
               tls: tuple[str, str] | None = None, flag: str = "--ec2-port"):
    """Serves moto on host:port (0: a free port), over HTTPS with tls = (cert file, key file);
    returns (server, url)."""
    # Imported here so that --help and argument errors are instant (moto takes
    # seconds to import).
    import logging

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # we log calls ourselves
    app = api_logger(DomainDispatcherApplication(create_backend_app), log)
    try:
        server = make_server(host, port, app, threaded=True, ssl_context=tls)
    except OSError as e:
        raise FixtureError(f"{flag} {port}: cannot listen on {host}: {e}") from None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, real_port = server.server_address[:2]
    return server, f"{'https' if tls else 'http'}://{host}:{real_port}"


def seed(ec2_url: str, region: str, cluster_id: str, instance_type: str, nodes: list[Node]) -> None:
    """Creates the VPC, subnets and one instance per node, then reads them back."""
    import boto3

    ec2 = boto3.client(
        "ec2", region_name=region, endpoint_url=ec2_url,
        aws_access_key_id="seed", aws_secret_access_key="seed")
    cluster_tag = {"Key": f"kubernetes.io/cluster/{cluster_id}", "Value": "owned"}

    # One subnet per zone: the smallest block (at most a /28, the AWS minimum)
    # holding that zone's nodes. Zones' subnets must not overlap.
    subnets: dict[str, ipaddress.IPv4Network] = {}  # zone -> subnet
    for zone in dict.fromkeys(n.zone for n in nodes):
        ips = [ipaddress.IPv4Address(n.ip) for n in nodes if n.zone == zone]
        net = ipaddress.IPv4Network(f"{ips[0]}/28", strict=False)
        while not all(ip in net for ip in ips):
            net = net.supernet()
        subnets[zone] = net
    for za, na in subnets.items():
        for zb, nb in subnets.items():
            if za < zb and na.overlaps(nb):
                raise FixtureError(
                    f"--node: the subnets of zones {za} ({na}) and {zb} ({nb}) overlap; give "
                    f"each zone's nodes addresses in their own /28 (e.g. 127.0.1.x, 127.0.2.x)")
    for n in nodes:
        n.subnet_cidr = str(subnets[n.zone])
    nets = list(subnets.values())
    vpc_net = nets[0]
    while not all(net.subnet_of(vpc_net) for net in nets):
        vpc_net = vpc_net.supernet()
    if vpc_net.prefixlen < 16:
        raise FixtureError(
            f"--node addresses span {vpc_net}; a VPC is at most a /16, keep the nodes' "
            f"addresses within one /16")
    vpc_net = vpc_net if vpc_net.prefixlen == 16 else vpc_net.supernet(new_prefix=16)

    vpc = ec2.create_vpc(
        CidrBlock=str(vpc_net),
        TagSpecifications=[{"ResourceType": "vpc", "Tags": [cluster_tag]}])["Vpc"]
    subnet_ids: dict[str, str] = {}  # zone -> id
    for zone, net in subnets.items():
        subnet_ids[zone] = ec2.create_subnet(
            VpcId=vpc["VpcId"], CidrBlock=str(net), AvailabilityZone=zone,
            TagSpecifications=[{"ResourceType": "subnet", "Tags": [
                cluster_tag, {"Key": "kubernetes.io/role/elb", "Value": "1"}]}],
        )["Subnet"]["SubnetId"]
    sg = ec2.create_security_group(
        GroupName=f"nodes.{cluster_id}", Description="cluster nodes", VpcId=vpc["VpcId"],
        TagSpecifications=[{"ResourceType": "security-group", "Tags": [cluster_tag]}])["GroupId"]
    images = ec2.describe_images(Owners=["amazon"])["Images"]
    if not images:
        raise FixtureError("moto offers no AMI to launch the node instances from")

    for n in nodes:
        inst = ec2.run_instances(
            ImageId=images[0]["ImageId"], MinCount=1, MaxCount=1, InstanceType=instance_type,
            SubnetId=subnet_ids[n.zone], PrivateIpAddress=n.ip, SecurityGroupIds=[sg],
            TagSpecifications=[{"ResourceType": "instance", "Tags": [
                cluster_tag, {"Key": "Name", "Value": n.name}]}],
        )["Instances"][0]
        n.instance_id = inst["InstanceId"]

    # Read back what EC2 says, as a provider would.
    by_id = {n.instance_id: n for n in nodes}
    resp = ec2.describe_instances(InstanceIds=list(by_id))
    for res in resp["Reservations"]:
        for inst in res["Instances"]:
            n = by_id[inst["InstanceId"]]
            eni = inst["NetworkInterfaces"][0]
            n.private_ip = inst["PrivateIpAddress"]
            n.private_dns_name = inst["PrivateDnsName"]
            n.mac = eni["MacAddress"]
            n.eni_id = eni["NetworkInterfaceId"]
            n.vpc_id = inst["VpcId"]
            n.vpc_cidr = str(vpc_net)
            n.subnet_id = inst["SubnetId"]
            n.security_group_ids = [g["GroupId"] for g in inst["SecurityGroups"]]
            n.image_id = inst["ImageId"]
            n.launch_time = inst["LaunchTime"].strftime("%Y-%m-%dT%H:%M:%SZ")
            if inst["Placement"]["AvailabilityZone"] != n.zone or n.private_ip != n.ip:
                raise FixtureError(
                    f"EC2 placed node {n.name} at {inst['Placement']['AvailabilityZone']}/"
                    f"{n.private_ip}, asked for {n.zone}/{n.ip}")


# -------------------------------------------------------------------------- IMDS


def utc(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Metadata:
    """The metadata tree of one node's instance."""

    def __init__(self, node: Node, region: str, instance_type: str, role: str):
        self.node, self.region, self.instance_type, self.role = node, region, instance_type, role

    def _tree(self) -> dict:
        n = self.node
        now = time.time()
        mac = {
            "device-number": "0",
            "interface-id": n.eni_id,
            "local-hostname": n.private_dns_name,
            "local-ipv4s": n.private_ip,
            "mac": n.mac,
            "owner-id": ACCOUNT_ID,
            "security-group-ids": "\n".join(n.security_group_ids),
            "subnet-id": n.subnet_id,
            "subnet-ipv4-cidr-block": n.subnet_cidr,
            "vpc-id": n.vpc_id,
            "vpc-ipv4-cidr-block": n.vpc_cidr,
            "vpc-ipv4-cidr-blocks": n.vpc_cidr,
        }
        # No public-ipv4 / public-hostname: a private node; the providers treat
        # a 404 there as "no external address".
        return {
            "ami-id": n.image_id,
            "hostname": n.private_dns_name,
            "iam": {
                "info": json.dumps({
                    "Code": "Success", "LastUpdated": utc(now),
                    "InstanceProfileArn": f"arn:aws:iam::{ACCOUNT_ID}:instance-profile/{self.role}",
                    "InstanceProfileId": "AIPAFAKEAWSFIXTURE0001"}),
                "security-credentials": {self.role: self._credentials(now)},
            },
            "instance-id": n.instance_id,
            "instance-type": self.instance_type,
            "local-hostname": n.private_dns_name,
            "local-ipv4": n.private_ip,
            "mac": n.mac,
            "network": {"interfaces": {"macs": {n.mac: mac}}},
            "placement": {"availability-zone": n.zone, "region": self.region},
            "services": {"domain": "amazonaws.com", "partition": "aws"},
        }

    def _credentials(self, now: float) -> str:
        # moto accepts any key; what matters is that the SDK's EC2 role
        # provider gets well-formed, unexpired credentials from here.
        return json.dumps({
            "Code": "Success", "LastUpdated": utc(now), "Type": "AWS-HMAC",
            "AccessKeyId": "ASIAFAKEAWS" + self.node.instance_id[-9:].upper().rjust(9, "0"),
            "SecretAccessKey": "fake-aws-secret-" + self.node.name,
            "Token": "fake-aws-session-token-" + self.node.name,
            "Expiration": utc(now + 6 * 3600)})

    def identity_document(self) -> str:
        n = self.node
        return json.dumps({
            "accountId": ACCOUNT_ID, "architecture": "x86_64",
            "availabilityZone": n.zone, "billingProducts": None,
            "devpayProductCodes": None, "marketplaceProductCodes": None,
            "imageId": n.image_id, "instanceId": n.instance_id,
            "instanceType": self.instance_type, "kernelId": None,
            "pendingTime": n.launch_time, "privateIp": n.private_ip,
            "ramdiskId": None, "region": self.region, "version": "2017-09-30"}, indent=2)

    def lookup(self, path: str) -> str | None:
        """The answer for a path under /latest/meta-data/, or None (404)."""
        node = self._tree()
        parts = [p for p in path.split("/") if p]
        for p in parts:
            if not isinstance(node, dict) or p not in node:
                return None
            node = node[p]
        if isinstance(node, dict):  # a directory: one entry a line, subdirs end in '/'
            return "\n".join(k + "/" if isinstance(v, dict) else k for k, v in node.items())
        return node


class Tokens:
    def __init__(self):
        self._lock = threading.Lock()
        self._expiry: dict[str, float] = {}

    def issue(self, ttl: int) -> str:
        tok = secrets.token_urlsafe(32)
        with self._lock:
            self._expiry[tok] = time.monotonic() + ttl
        return tok

    def valid(self, tok: str) -> bool:
        with self._lock:
            exp = self._expiry.get(tok)
        return exp is not None and exp > time.monotonic()


def imds_handler(meta: Metadata, tokens: Tokens, v2_only: bool,
                 log: Callable[[dict], None]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "EC2ws"
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # replaced by our own request log
            pass

        def _reply(self, status: int, body: str = "", headers: dict | None = None):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            log({"node": meta.node.name, "method": self.command, "path": self._path(),
                 "status": status, "token": TOKEN_HEADER in {k.lower() for k in self.headers}})

        def _path(self) -> str:
            p = self.path.split("?", 1)[0]
            while "//" in p:  # endpoints configured with a trailing slash
                p = p.replace("//", "/")
            return p

        def do_PUT(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            if self._path() != "/latest/api/token":
                return self._reply(404, "Not Found")
            if self.headers.get("X-Forwarded-For"):
                return self._reply(403, "Forbidden")
            try:
                ttl = int(self.headers.get(TTL_HEADER, ""))
            except ValueError:
                return self._reply(400, "Bad Request: missing or invalid " + TTL_HEADER)
            if not 1 <= ttl <= MAX_TOKEN_TTL:
                return self._reply(400, "Bad Request: " + TTL_HEADER + " out of range")
            self._reply(200, tokens.issue(ttl), {TTL_HEADER: str(ttl)})

        def do_GET(self):
            tok = self.headers.get(TOKEN_HEADER)
            if tok is not None and not tokens.valid(tok):
                return self._reply(401, "Unauthorized")
            if tok is None and v2_only:
                return self._reply(401, "Unauthorized")
            p = self._path()
            if p in ("/latest/dynamic/instance-identity/document",
                     "/latest/dynamic/instance-identity/document/"):
                return self._reply(200, meta.identity_document())
            if p == "/latest/meta-data" or p.startswith("/latest/meta-data/"):
                body = meta.lookup(p[len("/latest/meta-data"):])
                if body is not None:
                    return self._reply(200, body)
            self._reply(404, "Not Found")

    return Handler


# -------------------------------------------------------------------------- main


CLONE_NEWNET = 0x40000000


def in_network_namespace(path: str, make: Callable[[], ThreadingHTTPServer]) -> ThreadingHTTPServer:
    """Calls make() with this thread in the network namespace at path (a /proc/PID/ns/net or a
    bind of one), then returns to its own: the listening socket stays in that namespace."""
    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)
    try:
        try:
            target = os.open(path, os.O_RDONLY)
        except OSError as e:
            raise FixtureError(f"--imds-netns {path}: {e.strerror}") from None
        try:
            if libc.setns(target, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise FixtureError(f"--imds-netns {path}: setns: {os.strerror(err)} (needs root)")
            try:
                return make()
            finally:
                if libc.setns(own, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns back to the fixture's own network")
        finally:
            os.close(target)
    finally:
        os.close(own)


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="handoff-fake-aws",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__,
        epilog="""\
example:
  handoff-fake-aws --cluster-id test --imds-port 8169 \\
      --node cp-1=127.0.1.1@us-east-1a --node cp-2=127.0.1.2@us-east-1b \\
      --ready-file /tmp/fake-aws.json
then run a manager on cp-1 with
  AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.1.1:8169/
and a cloud config whose [ServiceOverride] sections point ec2 and
elasticloadbalancing (Region and SigningRegion = the region) at the "ec2_url"
of the ready file. The ready file (written atomically once everything serves,
removed on exit) holds: ec2_url, tls_url ("" without --tls-host), region, cluster_id, imds_port, role, and
"nodes": [{name, ip, instance_id, zone, private_dns_name, provider_id}].
""")
    ap.add_argument("--node", action="append", default=[], metavar="NAME=IP[@ZONE]",
                    help="a simulated node: its name (the instance's Name tag), its own "
                         "loopback address (the instance's private IP; the metadata endpoint "
                         "listens there) and zone (default <region>a). Repeat per node.")
    ap.add_argument("--cluster-id", required=True,
                    help="tags every resource kubernetes.io/cluster/<ID>=owned")
    ap.add_argument("--region", default="us-east-1", help="default %(default)s")
    ap.add_argument("--ec2-host", default="127.0.0.1",
                    help="address of the AWS API endpoint (default %(default)s)")
    ap.add_argument("--ec2-port", type=int, default=0,
                    help="port of the AWS API endpoint (default: a free one)")
    ap.add_argument("--imds-port", type=int, required=True,
                    help="port of every node's metadata endpoint, on that node's address")
    ap.add_argument("--imds-netns", action="append", default=[], metavar="NAME=PATH",
                    help="serve node NAME's metadata inside the network namespace at PATH "
                         "(/proc/PID/ns/net), on --imds-host; the address must be up there. "
                         "Repeat per node; needs root.")
    ap.add_argument("--imds-host", default="169.254.169.254",
                    help="the metadata address inside an --imds-netns namespace "
                         "(default %(default)s, as on EC2)")
    ap.add_argument("--instance-type", default="m5.large", help="default %(default)s")
    ap.add_argument("--role", default="handoff-control-plane",
                    help="instance profile role whose credentials the metadata serves")
    ap.add_argument("--imds-v2-only", action="store_true",
                    help="answer GETs without a session token with 401 (IMDSv1 disabled)")
    ap.add_argument("--tls-host", help="serve the AWS API over HTTPS on this address too")
    ap.add_argument("--tls-port", type=int, default=443,
                    help="its port (default %(default)s, as AWS's endpoints)")
    ap.add_argument("--tls-cert", help="the HTTPS endpoint's certificate chain (PEM)")
    ap.add_argument("--tls-key", help="its private key (PEM)")
    ap.add_argument("--ready-file", required=True, help="where to write the JSON description")
    ap.add_argument("--request-log", help="append one JSON line per request here: metadata "
                                          "requests {node, method, path, status, token} and "
                                          "AWS API calls {api, region, action, status} (they "
                                          "also go to stderr)")
    args = ap.parse_args(argv)
    if not args.node:
        ap.error("at least one --node NAME=IP is required")
    for flag, port in (("--imds-port", args.imds_port), ("--ec2-port", args.ec2_port)):
        if not 0 <= port <= 65535 or (flag == "--imds-port" and port == 0):
            ap.error(f"{flag} {port}: not a usable port")
    netns = {}
    for spec in args.imds_netns:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path.startswith("/"):
            ap.error(f"--imds-netns {spec!r}: expected NAME=/ABSOLUTE/PATH")
        if name in netns:
            ap.error(f"--imds-netns: node {name} given twice")
        netns[name] = path
    names = {s.partition("=")[0] for s in args.node}
    for name in netns:
        if name not in names:
            ap.error(f"--imds-netns {name}: no --node {name}")
    args.imds_netns = netns
    if args.tls_host and not (args.tls_cert and args.tls_key):
        ap.error("--tls-host needs --tls-cert and --tls-key")
    if (args.tls_cert or args.tls_key) and not args.tls_host:
        ap.error("--tls-cert and --tls-key need --tls-host")
    if not 0 <= args.tls_port <= 65535:
        ap.error(f"--tls-port {args.tls_port}: not a usable port")
    for flag, path in (("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key)):
        if path and not os.path.isfile(path):
            ap.error(f"{flag} {path}: no such file")
    return args


def write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        nodes = [parse_node(s, args.region) for s in args.node]
        for attr in ("name", "ip"):
            seen = [getattr(n, attr) for n in nodes]
            dup = {v for v in seen if seen.count(v) > 1}
            if dup:
                raise FixtureError(f"--node: {attr} {sorted(dup)[0]} given twice")

        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())

        log_lock = threading.Lock()
        log_file = open(args.request_log, "a", buffering=1) if args.request_log else None

        def log(entry: dict, kind: str = "imds") -> None:
            line = json.dumps(entry)
            with log_lock:
                print(f"fake-aws {kind} {line}", file=sys.stderr, flush=True)
                if log_file:
                    log_file.write(line + "\n")

        # Bind every metadata endpoint before the slow part, so that a missing
        # address fails at once.
        servers: list[ThreadingHTTPServer] = []
        tokens = Tokens()
        for n in nodes:
            meta = Metadata(n, args.region, args.instance_type, args.role)
            host = args.imds_host if n.name in args.imds_netns else n.ip

            def make(host=host, meta=meta):
                return ThreadingHTTPServer(
                    (host, args.imds_port), imds_handler(meta, tokens, args.imds_v2_only, log))

            try:
                netns = args.imds_netns.get(n.name)
                srv = in_network_namespace(netns, make) if netns else make()
            except OSError as e:
                where = f" in {args.imds_netns[n.name]}" if n.name in args.imds_netns else ""
                raise FixtureError(
                    f"--node {n.name}={n.ip}: cannot serve metadata on {host}:{args.imds_port}"
                    f"{where}: {e.strerror or e}") from None
            srv.daemon_threads = True
            servers.append(srv)

        moto, ec2_url = start_moto(args.ec2_host, args.ec2_port, lambda e: log(e, "api"))
        moto_tls, tls_url = None, ""
        if args.tls_host:
            moto_tls, tls_url = start_moto(args.tls_host, args.tls_port, lambda e: log(e, "api"),
                                           (args.tls_cert, args.tls_key), "--tls-port")
        seed(ec2_url, args.region, args.cluster_id, args.instance_type, nodes)
        threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
        for t in threads:
            t.start()

        ready = {
            "ec2_url": ec2_url, "tls_url": tls_url, "region": args.region,
            "cluster_id": args.cluster_id,
            "imds_port": args.imds_port, "role": args.role,
            "nodes": [{"name": n.name, "ip": n.ip, "instance_id": n.instance_id, "zone": n.zone,
                       "private_dns_name": n.private_dns_name, "provider_id": n.provider_id,
                       "imds": f"{args.imds_host if n.name in args.imds_netns else n.ip}"
                               f":{args.imds_port}"}
                      for n in nodes],
        }
        write_atomically(args.ready_file, json.dumps(ready, indent=2) + "\n")
        print(f"fake-aws ready: ec2 {ec2_url}, metadata on "
              + ", ".join(f"{n.name}={args.imds_host if n.name in args.imds_netns else n.ip}"
                          f":{args.imds_port}" for n in nodes),
              file=sys.stderr, flush=True)

        stop.wait()
        for s in servers:
            s.shutdown()
            s.server_close()
        moto.shutdown()
        if moto_tls:
            moto_tls.shutdown()
        try:
            os.remove(args.ready_file)
        except FileNotFoundError:
            pass
        if log_file:
            log_file.close()
        return 0
    except FixtureError as e:
        print(f"handoff-fake-aws: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
