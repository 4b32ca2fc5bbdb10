import type { KubeObject } from '../model/kube.js';
import { Names } from '../model/names.js';
import type { InstanceInfo } from '../ports/cloud-provider.js';
import type { CsrParseResult, ParsedCertificateRequest } from './csr-parse.js';

/**
 * Kubelet CSR policy: which certificates.k8s.io/v1 CSRs the operator may approve for Karpenter-launched
 * nodes. Pure functions over plain data; the node-identity use-case gathers the inputs and acts.
 *
 * The Machine Config Server is unauthenticated, so the bootstrap credential is effectively public:
 * approval is the only gate. Every rule below must hold to approve; nothing is ever denied (CSRs that are
 * not ours stay pending for cluster-machine-approver or an administrator).
 */

export const KubeletClientSigner = 'kubernetes.io/kube-apiserver-client-kubelet';
export const KubeletServingSigner = 'kubernetes.io/kubelet-serving';
export const NodeUserPrefix = 'system:node:';
export const NodesGroup = 'system:nodes';

export const NodeBootstrapperGroups = [
  'system:serviceaccounts:openshift-machine-config-operator',
  'system:serviceaccounts',
  'system:authenticated',
] as const;

/** Karpenter deletes a NodeClaim that has not registered this long after launch. */
export const LaunchDeadlineMs = 15 * 60 * 1000;
/** A client CSR is approvable only this long after its NodeClaim was created. */
export const DefaultApprovalWindowMs = 2 * 60 * 60 * 1000;

export const CsrDecisionReasons = {
  // approve
  ClientCsrVerified: 'ClientCsrVerified',
  ServingCsrVerified: 'ServingCsrVerified',
  // wait: may become approvable once the caches or the cloud catch up
  NodeClaimNotVisible: 'NodeClaimNotVisible',
  InstanceNotVisible: 'InstanceNotVisible',
  NodeNotVisible: 'NodeNotVisible',
  /** The instance answer at hand was read before the CSR was seen; a fresh one is needed. */
  InstanceAnswerStale: 'InstanceAnswerStale',
  /** Approvable, but held while too many approvable CSRs are pending. */
  ApprovalsPaused: 'ApprovalsPaused',
  // ignore: request shape
  WrongSigner: 'WrongSigner',
  UnexpectedRequester: 'UnexpectedRequester',
  NodeClientRenewal: 'NodeClientRenewal',
  MissingRequesterGroups: 'MissingRequesterGroups',
  MalformedRequest: 'MalformedRequest',
  MultiplePemBlocks: 'MultiplePemBlocks',
  NotCertificateRequest: 'NotCertificateRequest',
  BadSignature: 'BadSignature',
  InvalidCommonName: 'InvalidCommonName',
  NonCanonicalNodeName: 'NonCanonicalNodeName',
  InvalidOrganization: 'InvalidOrganization',
  UnexpectedSubjectField: 'UnexpectedSubjectField',
  UnexpectedSubjectAltNames: 'UnexpectedSubjectAltNames',
  MissingSubjectAltNames: 'MissingSubjectAltNames',
  UnexpectedUsages: 'UnexpectedUsages',
  UnsupportedKeyAlgorithm: 'UnsupportedKeyAlgorithm',
  // ignore: cluster state
  NodeAlreadyExists: 'NodeAlreadyExists',
  NodeClaimAlreadyRegistered: 'NodeClaimAlreadyRegistered',
  NoMatchingNodeClaim: 'NoMatchingNodeClaim',
  AmbiguousNodeClaim: 'AmbiguousNodeClaim',
  NodeClaimDeleting: 'NodeClaimDeleting',
  InstanceNotFound: 'InstanceNotFound',
  InstanceNotOwned: 'InstanceNotOwned',
  InstanceNotRunning: 'InstanceNotRunning',
  CsrPredatesNodeClaim: 'CsrPredatesNodeClaim',
  ApprovalWindowExpired: 'ApprovalWindowExpired',
  ClientCsrAlreadyApproved: 'ClientCsrAlreadyApproved',
  NodeNotFound: 'NodeNotFound',
  NodeNotManagedByKarpenter: 'NodeNotManagedByKarpenter',
  ProviderIdMismatch: 'ProviderIdMismatch',
  NodeNameMismatch: 'NodeNameMismatch',
  SanNotInstanceAddress: 'SanNotInstanceAddress',
} as const;

export type CsrDecisionReason = (typeof CsrDecisionReasons)[keyof typeof CsrDecisionReasons];

export interface CsrDecision {
  /** `ignore`: not ours or forged, leave it (never deny). `wait`: may become approvable, requeue. */
  decision: 'approve' | 'ignore' | 'wait';
  reason: CsrDecisionReason;
  message: string;
  /** What the decision was about, for events, logs and metrics. */
  nodeName?: string;
  nodeClaim?: string;
  instanceId?: string;
}

/** A NodeClaim as the policy sees it (built with `csrNodeClaimView`). */
export interface CsrNodeClaim {
  name: string;
  uid?: string;
  createdMs: number;
  providerID?: string;
  /** The cloud instance ID from `providerID`, when it is this cloud's. */
  instanceId?: string;
  /** `status.nodeName`: set once Karpenter matched the Node. */
  nodeName?: string;
  deleting: boolean;
}

/** A Node as the policy sees it. */
export interface CsrNode {
  name: string;
  providerID?: string;
}

export interface CsrDecisionInput {
  /** The CertificateSigningRequest object (certificates.k8s.io/v1). */
  csr: KubeObject;
  /** `parseCertificateRequestPem` of its `spec.request`. */
  request: CsrParseResult;
  nodeClaims: readonly CsrNodeClaim[];
  nodes: readonly CsrNode[];
  /**
   * Instances of the NodeClaims, by instance ID; an ID that was looked up and not found is absent.
   * `readAtMs`: when the request that returned the answer was sent (the clock of `csrSeenMs`).
   */
  instances: ReadonlyMap<string, InstanceInfo & { readAtMs?: number }>;
  now: number;
  /**
   * When this process first saw the CSR (its own clock): necessarily after the CSR was created. A client
   * CSR is approved only on an instance answer read at or after it. Without it, one second after
   * `creationTimestamp` (which has whole seconds) stands in.
   */
  csrSeenMs?: number;
  /** Client CSRs are approvable from NodeClaim creation until this much later. */
  windowMs?: number;
  /** `wait` turns into `ignore` once the CSR is older than this. */
  launchDeadlineMs?: number;
  /** Client CSRs already approved for each NodeClaim (by NodeClaim name). */
  approvedClientCsrs: ReadonlyMap<string, number>;
}

export interface CsrView {
  name: string;
  createdMs: number;
  signerName: string;
  username: string;
  groups: string[];
  usages: string[];
}

/** The fields of a CSR object the policy reads, defensively typed. Pure. */
export function csrView(csr: KubeObject): CsrView {
  const spec = (csr.spec ?? {}) as Record<string, unknown>;
  const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : []);
  return {
    name: csr.metadata.name,
    createdMs: timestampMs(csr.metadata.creationTimestamp),
    signerName: typeof spec.signerName === 'string' ? spec.signerName : '',
    username: typeof spec.username === 'string' ? spec.username : '',
    groups: strings(spec.groups),
    usages: strings(spec.usages),
  };
}

export type CsrState = 'pending' | 'approved' | 'denied' | 'failed' | 'issued';

/** Where a CSR is in its lifecycle; only `pending` ones are approvable. Pure. */
export function csrState(csr: KubeObject): CsrState {
  const status = (csr.status ?? {}) as { conditions?: Array<{ type?: string; status?: string }>; certificate?: unknown };
  const has = (t: string) => (status.conditions ?? []).some((c) => c.type === t && (c.status ?? 'True') === 'True');
  if (typeof status.certificate === 'string' && status.certificate !== '') return 'issued';
  if (has('Denied')) return 'denied';
  if (has('Failed')) return 'failed';
  if (has('Approved')) return 'approved';
  return 'pending';
}

/** The NodeClaim projection the policy works on. `instanceIdOf` is the cloud's providerID parser. Pure. */
export function csrNodeClaimView(obj: KubeObject, instanceIdOf: (providerID: string) => string | undefined): CsrNodeClaim {
  const status = (obj.status ?? {}) as { providerID?: unknown; nodeName?: unknown };
  const view: CsrNodeClaim = {
    name: obj.metadata.name,
    createdMs: timestampMs(obj.metadata.creationTimestamp),
    deleting: Boolean(obj.metadata.deletionTimestamp),
  };
  if (obj.metadata.uid) view.uid = obj.metadata.uid;
  if (typeof status.providerID === 'string' && status.providerID !== '') {
    view.providerID = status.providerID;
    const id = instanceIdOf(status.providerID);
    if (id) view.instanceId = id;
  }
  if (typeof status.nodeName === 'string' && status.nodeName !== '') view.nodeName = status.nodeName;
  return view;
}

export function csrNodeView(obj: KubeObject): CsrNode {
  const providerID = (obj.spec as { providerID?: unknown } | undefined)?.providerID;
  return typeof providerID === 'string' && providerID !== '' ? { name: obj.metadata.name, providerID } : { name: obj.metadata.name };
}

/**
 * EC2's spelling of a DNS name made canonical (lower case, no trailing dot). Only the cloud's side is
 * normalised: a requester's name must already be canonical (`isCanonicalNodeName`). Pure.
 */
export const normalizeDns = (name: string): string => name.trim().toLowerCase().replace(/\.$/, '');

const Dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * True when `name` is exactly how a kubelet names its Node: a lower-case DNS-1123 subdomain (labels of
 * at most 63 characters, at most 253 in all), without a trailing dot. Any other spelling of a valid
 * name (upper case, trailing dot) yields a certificate no kubelet can use. Pure.
 */
export function isCanonicalNodeName(name: string): boolean {
  return name.length > 0 && name.length <= 253 && name.split('.').every((l) => l.length <= 63 && Dns1123Label.test(l));
}

/** True when EC2's DNS name `ec2Name` (any spelling) is the canonical node name `nodeName`. Pure. */
export function instanceNamed(ec2Name: string | undefined, nodeName: string): boolean {
  return !!ec2Name && normalizeDns(ec2Name) === nodeName;
}

/** Canonical private DNS names of instance answers, by answer object, with the name they normalise. */
const privateNames = new WeakMap<object, { raw: string; name: string }>();

/**
 * True when `instance`'s private DNS name is the canonical node name `nodeName` (`instanceNamed`), its name
 * normalised once per answer: a decision matches its name against every NodeClaim's instance, and the
 * decisions of a burst share one set of answers. Pure.
 */
function instanceIsNamed(instance: InstanceInfo | undefined, nodeName: string): boolean {
  const raw = instance?.privateDnsName;
  if (!raw) return false;
  let memo = privateNames.get(instance);
  if (memo?.raw !== raw) {
    memo = { raw, name: normalizeDns(raw) };
    privateNames.set(instance, memo);
  }
  return memo.name === nodeName;
}

/** IPv4 as is; IPv6 in its canonical compressed lowercase form, so `::1` equals `0:0:0:0:0:0:0:1`. */
export function normalizeIp(ip: string): string {
  const s = ip.trim();
  if (!s.includes(':')) return s;
  try {
    return new URL(`http://[${s}]/`).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return s.toLowerCase();
  }
}

/** The node name in `system:node:<name>`, or undefined. */
export function nodeNameFromUser(user: string): string | undefined {
  if (!user.startsWith(NodeUserPrefix)) return undefined;
  const name = user.slice(NodeUserPrefix.length);
  return name === '' ? undefined : name;
}

const ignore = (reason: CsrDecisionReason, message: string, about: Partial<CsrDecision> = {}): CsrDecision => ({
  decision: 'ignore',
  reason,
  message,
  ...about,
});

const wait = (reason: CsrDecisionReason, message: string, about: Partial<CsrDecision> = {}): CsrDecision => ({
  decision: 'wait',
  reason,
  message,
  ...about,
});

/**
 * Decides a kubelet *client* CSR (the first certificate of a new node, requested with the bootstrap
 * credential). Approves only when every check holds, in this order (the first failing check decides):
 *
 *  1. `spec.signerName` is `kubernetes.io/kube-apiserver-client-kubelet`.
 *  2. `spec.username` is the MCO node-bootstrapper ServiceAccount. (A registered node renewing its own
 *     client certificate asks as `system:node:<name>`; kube-controller-manager approves those.)
 *  3. `spec.groups` include its ServiceAccount groups and `system:authenticated`.
 *  4. `spec.request` is exactly one PEM block of type CERTIFICATE REQUEST, a PKCS#10 request whose
 *     self-signature verifies.
 *  5. The subject has exactly one CN, `system:node:<name>`, with `<name>` canonical: a lower-case
 *     DNS-1123 name without a trailing dot, exactly the Node name the kubelet will register.
 *  6. The subject has exactly one O, `system:nodes`.
 *  7. The subject has no other attribute (OU, C, serialNumber, ...).
 *  8. The request carries no SAN of any kind (DNS, IP, email, URI, other).
 *  9. The key is ECDSA (P-256/P-384/P-521) or RSA of at least 2048 bits.
 * 10. `spec.usages` is exactly {digital signature, client auth}, plus key encipherment only for RSA keys.
 * 11. No Node named `<name>` exists (a registered node renews its certificate with its own identity).
 * 12. No NodeClaim has `status.nodeName` `<name>` (already registered).
 * 13. Exactly one NodeClaim's instance has `PrivateDnsName` `<name>` (EC2's spelling normalised, never
 *     the requester's). None yet while a NodeClaim still lacks a providerID or its instance is not
 *     visible → `wait`, until the CSR is older than the launch deadline; otherwise `ignore` (not Karpenter's).
 * 14. That NodeClaim is not being deleted.
 * 15. Its instance carries this cluster's ownership tag with the value `owned` (`shared` marks resources
 *     of several clusters, never a node of this one).
 * 16. Its instance is `pending` or `running`.
 * 17. The CSR was created no earlier than the NodeClaim and within the window after it (default 2 h).
 * 18. No client CSR was approved for that NodeClaim yet (one per NodeClaim until its Node exists).
 * 19. The instance answer was read after the CSR was seen (`csrSeenMs`): an instance terminated a second
 *     before its CSR is never approved from a cached `running` (`wait` for a fresh answer).
 */
export function decideClientCsr(input: CsrDecisionInput): CsrDecision {
  const csr = csrView(input.csr);
  const deadline = input.launchDeadlineMs ?? LaunchDeadlineMs;
  const windowMs = input.windowMs ?? DefaultApprovalWindowMs;

  // 1–10: who asks and what is asked for.
  const shape = checkClientRequest(csr, input.request);
  if ('decision' in shape) return shape;
  const { nodeName } = shape;
  const about: Partial<CsrDecision> = { nodeName };

  // 11–12: not registered yet.
  if (input.nodes.some((n) => n.name === nodeName)) {
    return ignore('NodeAlreadyExists', `Node ${nodeName} already exists`, about);
  }
  const registered = input.nodeClaims.find((nc) => nc.nodeName === nodeName);
  if (registered) {
    return ignore('NodeClaimAlreadyRegistered', `NodeClaim ${registered.name} already registered Node ${nodeName}`, {
      ...about,
      nodeClaim: registered.name,
    });
  }

  // 13: tie the name to exactly one NodeClaim through its instance.
  const matches = input.nodeClaims.filter((nc) => {
    const instance = nc.instanceId ? input.instances.get(nc.instanceId) : undefined;
    return instanceIsNamed(instance, nodeName);
  });
  if (matches.length > 1) {
    return ignore('AmbiguousNodeClaim', `NodeClaims ${matches.map((m) => m.name).join(', ')} all resolve to ${nodeName}`, about);
  }
  const nodeClaim = matches[0];
  if (!nodeClaim) {
    const young = input.now - csr.createdMs < deadline;
    const unregistered = input.nodeClaims.filter((nc) => !nc.deleting && !nc.nodeName);
    const unlaunched = unregistered.filter((nc) => !nc.providerID);
    const unseen = unregistered.filter((nc) => nc.instanceId && !input.instances.has(nc.instanceId));
    if (young && unlaunched.length) {
      return wait('NodeClaimNotVisible', `no instance named ${nodeName} yet; ${unlaunched.length} NodeClaim(s) not launched`, about);
    }
    if (young && unseen.length) {
      return wait('InstanceNotVisible', `no instance named ${nodeName} yet; ${unseen.length} instance(s) not visible`, about);
    }
    return ignore('NoMatchingNodeClaim', `no NodeClaim's instance has private DNS name ${nodeName}`, about);
  }
  const instance = input.instances.get(nodeClaim.instanceId!)!;
  const tied: Partial<CsrDecision> = { nodeName, nodeClaim: nodeClaim.name, instanceId: instance.instanceId };

  // 14–16: the NodeClaim and the machine are live and ours.
  if (nodeClaim.deleting) return ignore('NodeClaimDeleting', `NodeClaim ${nodeClaim.name} is being deleted`, tied);
  if (nodeClaim.nodeName) {
    return ignore('NodeClaimAlreadyRegistered', `NodeClaim ${nodeClaim.name} already registered Node ${nodeClaim.nodeName}`, tied);
  }
  const live = checkInstance(instance, tied);
  if (live) return live;

  // 17: time window.
  if (csr.createdMs < nodeClaim.createdMs) {
    return ignore('CsrPredatesNodeClaim', `CSR was created before NodeClaim ${nodeClaim.name}`, tied);
  }
  if (csr.createdMs > nodeClaim.createdMs + windowMs) {
    return ignore(
      'ApprovalWindowExpired',
      `CSR was created more than ${Math.round(windowMs / 60000)} min after NodeClaim ${nodeClaim.name}`,
      tied,
    );
  }

  // 18: one client certificate per NodeClaim.
  const approved = input.approvedClientCsrs.get(nodeClaim.name) ?? 0;
  if (approved > 0) {
    return ignore('ClientCsrAlreadyApproved', `NodeClaim ${nodeClaim.name} already has ${approved} approved client CSR(s)`, tied);
  }

  // 19: the answer that approves is younger than the CSR.
  const notBefore = input.csrSeenMs ?? csr.createdMs + 1000;
  if (instance.readAtMs === undefined || instance.readAtMs < notBefore) {
    return wait('InstanceAnswerStale', `instance ${instance.instanceId} was last read before the CSR was seen; reading it again`, tied);
  }

  return {
    decision: 'approve',
    reason: 'ClientCsrVerified',
    message: `node ${nodeName} is instance ${instance.instanceId} of NodeClaim ${nodeClaim.name}`,
    ...tied,
  };
}

/**
 * Decides a kubelet *serving* CSR (the certificate the kubelet serves exec/logs/metrics with, requested
 * with the node's own identity). Approves only when every check holds, in this order:
 *
 *  1. `spec.signerName` is `kubernetes.io/kubelet-serving`.
 *  2. `spec.username` is `system:node:<name>` with a non-empty name.
 *  3. `spec.groups` include `system:nodes`.
 *  4. `spec.request` is exactly one PEM block of type CERTIFICATE REQUEST, a PKCS#10 request whose
 *     self-signature verifies.
 *  5. The subject has exactly one CN, equal to `spec.username`, with a canonical node name.
 *  6. The subject has exactly one O, `system:nodes`.
 *  7. The subject has no other attribute.
 *  8. The request has at least one DNS or IP SAN, and no email, URI or other SAN.
 *  9. The key is ECDSA (P-256/P-384/P-521) or RSA of at least 2048 bits.
 * 10. `spec.usages` is exactly {digital signature, server auth}, plus key encipherment only for RSA keys.
 * 11. The Node `<name>` exists (`wait` while it may still appear in the cache, until the launch deadline).
 * 12. Exactly one NodeClaim owns it: `status.nodeName` is `<name>` or `status.providerID` is the
 *     Node's `spec.providerID`. None → `ignore` (a Machine-backed node, cluster-machine-approver's).
 * 13. When both are set, the NodeClaim's and the Node's providerIDs are equal.
 * 14. The NodeClaim's instance is visible (`wait` until the launch deadline, then `ignore`).
 * 15. The instance carries this cluster's ownership tag and is `pending` or `running`.
 * 16. The instance's `PrivateDnsName` is `<name>` (the node name is the instance's private DNS name).
 * 17. Every DNS SAN is one of the instance's DNS names and every IP SAN one of its IP addresses.
 */
export function decideServingCsr(input: CsrDecisionInput): CsrDecision {
  const csr = csrView(input.csr);
  const deadline = input.launchDeadlineMs ?? LaunchDeadlineMs;

  // 1–10: who asks and what is asked for.
  const shape = checkServingRequest(csr, input.request);
  if ('decision' in shape) return shape;
  const { nodeName, request } = shape;
  const about: Partial<CsrDecision> = { nodeName };

  // 11–13: the Node exists and is a Karpenter node.
  const young = input.now - csr.createdMs < deadline;
  const node = input.nodes.find((n) => n.name === nodeName);
  if (!node) {
    return young
      ? wait('NodeNotVisible', `Node ${nodeName} is not visible yet`, about)
      : ignore('NodeNotFound', `Node ${nodeName} does not exist`, about);
  }
  const owners = input.nodeClaims.filter(
    (nc) => nc.nodeName === nodeName || (node.providerID !== undefined && nc.providerID === node.providerID),
  );
  if (owners.length > 1) {
    return ignore('AmbiguousNodeClaim', `NodeClaims ${owners.map((o) => o.name).join(', ')} all claim Node ${nodeName}`, about);
  }
  const nodeClaim = owners[0];
  if (!nodeClaim) return ignore('NodeNotManagedByKarpenter', `no NodeClaim owns Node ${nodeName}`, about);
  const claimed: Partial<CsrDecision> = { nodeName, nodeClaim: nodeClaim.name };
  if (node.providerID !== undefined && nodeClaim.providerID !== undefined && node.providerID !== nodeClaim.providerID) {
    return ignore(
      'ProviderIdMismatch',
      `Node ${nodeName} has providerID ${node.providerID}, NodeClaim ${nodeClaim.name} has ${nodeClaim.providerID}`,
      claimed,
    );
  }

  // 14–16: the machine behind it.
  if (!nodeClaim.instanceId) {
    return ignore('InstanceNotFound', `NodeClaim ${nodeClaim.name} has no instance of this cloud`, claimed);
  }
  const instance = input.instances.get(nodeClaim.instanceId);
  const tied: Partial<CsrDecision> = { ...claimed, instanceId: nodeClaim.instanceId };
  if (!instance) {
    return young
      ? wait('InstanceNotVisible', `instance ${nodeClaim.instanceId} is not visible yet`, tied)
      : ignore('InstanceNotFound', `instance ${nodeClaim.instanceId} does not exist`, tied);
  }
  const live = checkInstance(instance, tied);
  if (live) return live;
  if (!instanceNamed(instance.privateDnsName, nodeName)) {
    return ignore(
      'NodeNameMismatch',
      `instance ${instance.instanceId} is ${instance.privateDnsName ?? '(no private DNS name)'}, not ${nodeName}`,
      tied,
    );
  }

  // 17: every name in the certificate is the machine's.
  const dns = new Set([instance.privateDnsName, instance.publicDnsName].filter((d): d is string => !!d).map(normalizeDns));
  const ips = new Set([...instance.privateIpAddresses, ...instance.publicIpAddresses].map(normalizeIp));
  const foreignDns = request.dnsNames.filter((d) => !dns.has(normalizeDns(d)));
  const foreignIps = request.ipAddresses.filter((ip) => !ips.has(normalizeIp(ip)));
  if (foreignDns.length || foreignIps.length) {
    return ignore(
      'SanNotInstanceAddress',
      `SANs ${[...foreignDns, ...foreignIps].join(', ')} are not addresses of instance ${instance.instanceId}`,
      tied,
    );
  }

  return {
    decision: 'approve',
    reason: 'ServingCsrVerified',
    message: `every SAN is an address of instance ${instance.instanceId} of NodeClaim ${nodeClaim.name}`,
    ...tied,
  };
}

/** Dispatches on the signer; `undefined` for CSRs of any other signer (not the kubelet's). Pure. */
export function decideKubeletCsr(input: CsrDecisionInput): CsrDecision | undefined {
  const signer = csrView(input.csr).signerName;
  if (signer === KubeletClientSigner) return decideClientCsr(input);
  if (signer === KubeletServingSigner) return decideServingCsr(input);
  return undefined;
}

export interface RequestShape {
  kind: 'client' | 'serving';
  /** The node the certificate would be for (`<name>` of `system:node:<name>`). */
  nodeName: string;
  request: ParsedCertificateRequest;
}

/**
 * Checks 1–10 of either kind: everything that depends on the CSR alone, so a use-case can ignore a
 * forged or malformed request before any cache or cloud lookup. `undefined` for other signers. Pure.
 */
export function precheckKubeletCsr(csrObject: KubeObject, parsed: CsrParseResult): CsrDecision | RequestShape | undefined {
  const csr = csrView(csrObject);
  if (csr.signerName === KubeletClientSigner) return checkClientRequest(csr, parsed);
  if (csr.signerName === KubeletServingSigner) return checkServingRequest(csr, parsed);
  return undefined;
}

function checkClientRequest(csr: CsrView, parsed: CsrParseResult): CsrDecision | RequestShape {
  if (csr.signerName !== KubeletClientSigner) {
    return ignore('WrongSigner', `signer ${csr.signerName || '(none)'} is not ${KubeletClientSigner}`);
  }
  if (csr.username !== Names.nodeBootstrapperUser && nodeNameFromUser(csr.username)) {
    return ignore('NodeClientRenewal', `requested by ${csr.username}: a renewal, approved by kube-controller-manager (selfnodeclient)`);
  }
  if (csr.username !== Names.nodeBootstrapperUser) {
    return ignore('UnexpectedRequester', `requested by ${csr.username || '(nobody)'}, not ${Names.nodeBootstrapperUser}`);
  }
  const missingGroups = NodeBootstrapperGroups.filter((g) => !csr.groups.includes(g));
  if (missingGroups.length) return ignore('MissingRequesterGroups', `requester lacks groups ${missingGroups.join(', ')}`);
  return checkRequestShape(parsed, csr, 'client');
}

function checkServingRequest(csr: CsrView, parsed: CsrParseResult): CsrDecision | RequestShape {
  if (csr.signerName !== KubeletServingSigner) {
    return ignore('WrongSigner', `signer ${csr.signerName || '(none)'} is not ${KubeletServingSigner}`);
  }
  if (!nodeNameFromUser(csr.username)) return ignore('UnexpectedRequester', `requested by ${csr.username || '(nobody)'}, not a node`);
  if (!csr.groups.includes(NodesGroup)) return ignore('MissingRequesterGroups', `requester lacks group ${NodesGroup}`);
  return checkRequestShape(parsed, csr, 'serving');
}

const ClientUsages = ['digital signature', 'client auth'];
const ServingUsages = ['digital signature', 'server auth'];
const KeyEncipherment = 'key encipherment';
const AllowedCurves = new Set(['P-256', 'P-384', 'P-521']);
const MinRsaBits = 2048;

/** Checks 4–10 of both kinds: the PKCS#10 request and the usages asked for. */
function checkRequestShape(parsed: CsrParseResult, csr: CsrView, kind: 'client' | 'serving'): CsrDecision | RequestShape {
  if (!parsed.ok) return ignore(parsed.reason, parsed.message);
  const request = parsed.request;

  const cns = request.subject.filter((a) => a.type === 'CN').map((a) => a.value);
  if (cns.length !== 1) return ignore('InvalidCommonName', `subject has ${cns.length} CNs, expected one`);
  const nodeName = nodeNameFromUser(cns[0]!);
  if (!nodeName) return ignore('InvalidCommonName', `subject CN ${cns[0]} is not system:node:<name>`);
  if (kind === 'serving' && cns[0] !== csr.username) {
    return ignore('InvalidCommonName', `subject CN ${cns[0]} is not the requester ${csr.username}`, { nodeName });
  }
  if (!isCanonicalNodeName(nodeName)) {
    return ignore(
      'NonCanonicalNodeName',
      `node name ${JSON.stringify(nodeName)} is not a lower-case DNS-1123 name without a trailing dot: no kubelet registers a Node of that name`,
      { nodeName },
    );
  }
  const about = { nodeName };

  const orgs = request.subject.filter((a) => a.type === 'O').map((a) => a.value);
  if (orgs.length !== 1 || orgs[0] !== NodesGroup) {
    return ignore('InvalidOrganization', `subject O is [${orgs.join(', ')}], expected [${NodesGroup}]`, about);
  }
  const others = request.subject.filter((a) => a.type !== 'CN' && a.type !== 'O');
  if (others.length) {
    return ignore('UnexpectedSubjectField', `subject has extra fields ${others.map((a) => `${a.type}=${a.value}`).join(', ')}`, about);
  }

  const unexpectedSans =
    kind === 'client'
      ? [...request.dnsNames, ...request.ipAddresses, ...request.emailAddresses, ...request.uris, ...request.otherNames]
      : [...request.emailAddresses, ...request.uris, ...request.otherNames];
  if (unexpectedSans.length) {
    return ignore('UnexpectedSubjectAltNames', `a ${kind} CSR must not carry SANs ${unexpectedSans.join(', ')}`, about);
  }
  if (kind === 'serving' && request.dnsNames.length + request.ipAddresses.length === 0) {
    return ignore('MissingSubjectAltNames', 'a serving CSR needs at least one DNS or IP SAN', about);
  }

  const key = request.keyAlgorithm;
  const keyOk = (key.kind === 'ECDSA' && AllowedCurves.has(key.namedCurve)) || (key.kind === 'RSA' && key.modulusLength >= MinRsaBits);
  if (!keyOk) return ignore('UnsupportedKeyAlgorithm', `key ${describeKey(key)} is not ECDSA P-256/384/521 or RSA >= ${MinRsaBits}`, about);

  const required = kind === 'client' ? ClientUsages : ServingUsages;
  const allowed = new Set(key.kind === 'RSA' ? [...required, KeyEncipherment] : required);
  const usages = csr.usages;
  const duplicate = new Set(usages).size !== usages.length;
  const missing = required.filter((u) => !usages.includes(u));
  const extra = usages.filter((u) => !allowed.has(u));
  if (duplicate || missing.length || extra.length) {
    return ignore('UnexpectedUsages', `usages [${usages.join(', ')}] are not [${[...allowed].join(', ')}]`, about);
  }
  return { kind, nodeName, request };
}

function checkInstance(instance: InstanceInfo, about: Partial<CsrDecision>): CsrDecision | undefined {
  if (!instance.ownedByCluster) {
    return ignore('InstanceNotOwned', `instance ${instance.instanceId} does not carry this cluster's tag with the value owned`, about);
  }
  if (!instance.live) {
    return ignore('InstanceNotRunning', `instance ${instance.instanceId} is neither starting nor running`, about);
  }
  return undefined;
}

function describeKey(key: ParsedCertificateRequest['keyAlgorithm']): string {
  if (key.kind === 'ECDSA') return `ECDSA ${key.namedCurve}`;
  if (key.kind === 'RSA') return `RSA ${key.modulusLength}`;
  return key.name;
}

function timestampMs(ts: string | undefined): number {
  const ms = ts ? Date.parse(ts) : NaN;
  return Number.isNaN(ms) ? 0 : ms;
}
