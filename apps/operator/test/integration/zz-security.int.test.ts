import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyObject,
  deleteObject,
  getObject,
  kubeRequest,
  listObjects,
  readManifests,
  waitFor,
  type AuditEvent,
  type KubeObj,
} from '@karpenter-operator/testkit';
import { seededWorld, testCluster } from '@karpenter-operator/testkit/vitest';
import { scrapeMetrics } from '../support/metrics-scrape.js';
import {
  credentialsFileText,
  installManifests,
  OPERATOR_NS,
  OPERATOR_SA,
  OPERATOR_USER,
  REPO,
  resetOperatorWorld,
  startOperator,
  type OperatorProcess,
} from '../support/operator-process.js';
import {
  applyKarpenterAndCredentials,
  crdEstablished,
  isConverged,
  KARPENTER,
  launchKarpenterInstance,
  submitClientCsr,
  waitCsrApproved,
} from '../support/scenario.js';

/**
 * Security: (1) no secret value reaches the operator's logs (debug) or any Event; (2) the RBAC of
 * `install/` is exactly what the operator uses: no 403 and no rule that no request exercised. The
 * audit part reads the whole audit log of the run (files run serially in one cluster) and also
 * drives a full life cycle itself (converge, CSR approval, user NodeClass, CRD re-creation,
 * teardown) so that it does not depend on which files ran before it.
 */
const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const LEASE = ['coordination.k8s.io/v1', 'Lease', 'karpenter-operator.openshift.io', OPERATOR_NS] as const;

let op: OperatorProcess;

describe('security: secrets and RBAC, as the operator ServiceAccount', () => {
  beforeAll(async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
    // From scratch, so the create paths run too (the Lease, the operand's objects).
    await deleteObject(kc(), ...LEASE).catch(() => false);
    // --metrics-secure as install/ runs it: scrapes are reviewed with the metrics-auth ClusterRole.
    op = await startOperator(cluster, { name: 'karpenter-operator-security', env: { LOG_LEVEL: 'debug' }, args: ['--metrics-secure'] });
  }, 180_000);

  afterAll(async () => {
    await op?.stop();
    await resetOperatorWorld(cluster);
  }, 120_000);

  it('drives a full life cycle: converge, CSR approval, user NodeClass, CRD re-creation, teardown', async () => {
    await applyKarpenterAndCredentials(cluster, { logLevel: 'debug' });
    await waitFor('convergence', () => isConverged(cluster), { timeoutMs: 90_000, intervalMs: 500 });

    // A scrape with the operator's own token: authenticated (TokenReview), not authorised for /metrics (SubjectAccessReview).
    const scraped = await scrapeMetrics(op.metricsPort, {
      token: await cluster.tokenFor(OPERATOR_NS, OPERATOR_SA),
      serverName: `karpenter-operator-metrics.${OPERATOR_NS}.svc`,
    });
    expect(scraped.status, scraped.body).toBe(403);

    const node = await launchKarpenterInstance(cluster, seededWorld(), 'security-e2e1');
    const csr = await submitClientCsr(cluster, node.dns);
    await waitCsrApproved(cluster, csr, 30_000);

    // A user NodeClass: its pool is created, and deleted with it.
    await applyObject(kc(), {
      apiVersion: 'karpenter.k8s.aws/v1',
      kind: 'EC2NodeClass',
      metadata: { name: 'sec' },
      spec: {
        amiFamily: 'Custom',
        amiSelectorTerms: [{ id: seededWorld().facts.amis.x86_64 }],
        role: 'demo-x7k2p-worker-role',
        subnetSelectorTerms: [{ tags: { Name: 'demo-x7k2p-subnet-private-us-east-1a' } }],
        securityGroupSelectorTerms: [{ tags: { Name: 'demo-x7k2p-node' } }],
      },
    });
    await waitFor(
      'pool karpenter-sec',
      () => getObject(kc(), 'machineconfiguration.openshift.io/v1', 'MachineConfigPool', 'karpenter-sec'),
      { timeoutMs: 20_000 },
    );
    await deleteObject(kc(), 'karpenter.k8s.aws/v1', 'EC2NodeClass', 'sec');
    await waitFor(
      'pool karpenter-sec removed',
      async () => !(await getObject(kc(), 'machineconfiguration.openshift.io/v1', 'MachineConfigPool', 'karpenter-sec')),
      { timeoutMs: 20_000 },
    );

    const crd = 'nodeoverlays.karpenter.sh';
    await deleteObject(kc(), 'apiextensions.k8s.io/v1', 'CustomResourceDefinition', crd);
    await waitFor('CRD re-created', () => crdEstablished(cluster, crd), { timeoutMs: 30_000 });

    await applyObject(kc(), {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: 'general' },
      spec: {
        template: {
          spec: {
            nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
            requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
          },
        },
      },
    });
    await deleteObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default');
    await waitFor('teardown to finish', async () => !(await getObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default')), {
      timeoutMs: 90_000,
    });
    expect(await listObjects(kc(), 'karpenter.sh/v1', 'NodePool')).toEqual([]);
    expect(await listObjects(kc(), 'karpenter.sh/v1', 'NodeClaim')).toEqual([]);
    await node.terminate();
    expect(op.exited()).toBe(false);
  }, 240_000);

  it('no secret value in the operator logs (debug) or in any Event', async () => {
    // The secret parts of the credentials the operator reads (its own file) and the operand's Secret.
    const kubeconfigPath = op.proc.spawnargs.find((a) => a.startsWith('--kubeconfig='))!.slice('--kubeconfig='.length);
    const token = /"?token"?\s*:\s*"?([A-Za-z0-9._-]{20,})/.exec(readFileSync(kubeconfigPath, 'utf8'))?.[1];
    expect(token?.length).toBeGreaterThan(100);
    const secretKeys = [credentialsFileText(), readFileSync(join(kubeconfigPath, '../credentials'), 'utf8')].map(
      (t) => /aws_secret_access_key = (\S+)/.exec(t)![1]!,
    );
    expect(secretKeys).toHaveLength(2);
    const needles = [
      ...secretKeys,
      Buffer.from(credentialsFileText()).toString('base64'),
      token!,
      // a JWT's signature alone, in case a log line cut the token
      token!.split('.')[2]!,
    ];

    const logs = op.logs();
    // LOG_LEVEL=debug (startOperator); the life cycle above logged every decision.
    expect(logs).toContain('approved CSR');
    expect(logs.length).toBeGreaterThan(2_000);
    const events = await kubeRequest<{ items: KubeObj[] }>(kc(), 'GET', '/api/v1/events');
    const eventsNew = await kubeRequest<{ items: KubeObj[] }>(kc(), 'GET', '/apis/events.k8s.io/v1/events');
    const eventText = JSON.stringify(events.body) + JSON.stringify(eventsNew.body);
    const fromOperator = events.body!.items.filter((e) => JSON.stringify(e).includes('karpenter-operator'));
    expect(fromOperator.length).toBeGreaterThan(0);
    for (const n of needles) {
      expect(logs.includes(n), `a secret (${n.slice(0, 6)}…) in the operator logs`).toBe(false);
      expect(eventText.includes(n), `a secret (${n.slice(0, 6)}…) in an Event`).toBe(false);
    }
    // Nor the access key id paired with them (not secret, but never needed in a log line).
    expect(logs).not.toContain('AKIDEXAMPLEOPERAND');
    console.log(
      `security: ${logs.length} bytes of debug logs and ${events.body!.items.length} Events searched for ${needles.length} secret values: 0 hits`,
    );
  });

  /** A rule of install/ granted to the operator ServiceAccount, one verb and resource. */
  interface Grant {
    source: string;
    namespace?: string;
    apiGroup: string;
    resource: string;
    verb: string;
    resourceNames?: string[];
  }

  /**
   * Rules no API request exercises, each with why the operator still needs it. Everything else must
   * show up in the audit log as a successful request of the operator.
   */
  const JUSTIFIED: Record<string, string> = {
    // To create a Role/ClusterRole, its creator must hold every rule in it (RBAC escalation check):
    // these are the operand's permissions, held only to grant them; the operator never calls them.
    'ClusterRole/karpenter-operator-operand:*': 'held to grant to the operand (escalation check)',
    'Role/kube-system/karpenter-operator:/services:get': 'held to grant Role karpenter-dns to the operand (escalation check)',
    'Role/openshift-karpenter/karpenter-operator:coordination.k8s.io/leases:patch':
      'held to grant the operand its Lease karpenter-leader-election (escalation check); the operator renews its own Lease with update',
    'Role/openshift-karpenter/karpenter-operator:policy/poddisruptionbudgets:delete':
      'removes the operand PodDisruptionBudget when the Karpenter CR goes down to one replica (exercised by settings.int.test)',
    // Checked by the authorizer on the approval update, never a request of its own.
    'ClusterRole/karpenter-operator:certificates.k8s.io/signers:approve':
      'authorization check of every CSR approval (certificatesigningrequests/approval update)',
    // OwnerReferencesPermissionEnforcement checks it when the operand objects get blockOwnerDeletion owner references.
    'ClusterRole/karpenter-operator:autoscaling.openshift.io/karpenters/finalizers:update':
      'admission check (OwnerReferencesPermissionEnforcement) of the operand owner references',
    // The ClusterOperator is created by the CVO (installManifests here); the operator creates it only when the CVO has not yet.
    'ClusterRole/karpenter-operator:config.openshift.io/clusteroperators:create':
      'fallback when the CVO has not created ClusterOperator karpenter yet',
  };
  // Justified rules another file exercises on this same cluster: they show in this run's audit when that file
  // ran first (vitest orders files by their cached durations, so a fresh clone and a warm checkout differ).
  const EXERCISED_BY_OTHER_FILES = new Set(['Role/openshift-karpenter/karpenter-operator:policy/poddisruptionbudgets:delete']);

  /**
   * Whole classes of rules no request exercised in the run, each with its reason. `get` next to
   * `list, watch`: the operator reads from informer caches only; the grant stays for the one-off reads
   * of the CLI subcommands and for parity with the operand's ClusterRole. NOT YET EXERCISED (teardown
   * paths this run does not reach; reported as open in issue 8): deletes of the operand's
   * ServiceAccount, Roles, ClusterRoles and bindings (garbage-collected through their owner
   * reference to the CR when the CR goes), of EC2NodeClasses and KubeletConfigs, and the patch of
   * NodePools/NodeClaims that forces stuck claims with the termination annotation.
   */
  const JUSTIFIED_CLASSES: Array<[RegExp, string]> = [
    [/:get$/, 'reads go through informer caches; get kept for one-off reads'],
    // Leader election gets and updates its Lease by name; list/watch are held to grant the operand's leader-election Role (escalation check).
    [
      /karpenter-operator:coordination\.k8s\.io\/leases:(list|watch)$/,
      'held to grant the operand its leader-election Role (escalation check)',
    ],
    // NOT exercised: no ClusterVersion informer ran in this run (the release comes from RELEASE_VERSION); candidate for removal.
    [
      /:config\.openshift\.io\/clusterversions:(list|watch)$/,
      'not exercised: no ClusterVersion informer ran (release from RELEASE_VERSION)',
    ],
    // An Event series is patched when the same event repeats; the run's events were all first occurrences.
    [/:events\.k8s\.io\/events:patch$/, 'event series updates (repeats of one event)'],
    [
      /:(\/serviceaccounts|rbac\.authorization\.k8s\.io\/(roles|rolebindings|clusterroles|clusterrolebindings)):delete$/,
      'teardown: operand RBAC/SA, normally garbage-collected via the CR owner reference',
    ],
    [
      /:(karpenter\.k8s\.aws\/ec2nodeclasses|machineconfiguration\.openshift\.io\/kubeletconfigs):delete$/,
      'teardown of NodeClasses and the taint KubeletConfig, not reached in this run',
    ],
    [
      /:karpenter\.sh\/(nodepools|nodeclaims):patch$/,
      'teardown: forcing stuck NodeClaims with the termination annotation, not reached in this run',
    ],
  ];

  const grantsOfInstall = (): Grant[] => {
    const objs = readdirSync(join(REPO, 'install'))
      .filter((f) => f.endsWith('.yaml'))
      .flatMap((f) => readManifests(join(REPO, 'install', f)));
    const boundToOperator = (o: KubeObj) =>
      ((o as { subjects?: Array<{ kind: string; name: string; namespace?: string }> }).subjects ?? []).some(
        (s) => s.kind === 'ServiceAccount' && s.name === OPERATOR_SA && s.namespace === OPERATOR_NS,
      );
    const bindings = objs.filter((o) => (o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding') && boundToOperator(o));
    const out: Grant[] = [];
    for (const b of bindings) {
      const ref = (b as unknown as { roleRef: { kind: string; name: string } }).roleRef;
      const role = objs.find(
        (o) =>
          o.kind === ref.kind &&
          o.metadata.name === ref.name &&
          (ref.kind === 'ClusterRole' || o.metadata.namespace === b.metadata.namespace),
      );
      expect(role, `${b.kind} ${b.metadata.name} refers to a role in install/`).toBeDefined();
      // A ClusterRole bound by a RoleBinding grants only in the binding's namespace.
      const namespace = b.kind === 'RoleBinding' ? b.metadata.namespace : undefined;
      const source =
        role!.kind === 'Role' ? `Role/${role!.metadata.namespace}/${role!.metadata.name}` : `ClusterRole/${role!.metadata.name}`;
      for (const rule of (
        role as unknown as { rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }> }
      ).rules) {
        for (const apiGroup of rule.apiGroups)
          for (const resource of rule.resources)
            for (const verb of rule.verbs) out.push({ source, namespace, apiGroup, resource, verb, resourceNames: rule.resourceNames });
      }
    }
    return out;
  };

  const exercises = (g: Grant, e: AuditEvent): boolean => {
    const code = e.responseStatus?.code ?? 0;
    if (code >= 400 && code !== 404 && code !== 409) return false; // 404/409 were authorized (a get of a missing object, a conflict)
    const ref = e.objectRef ?? {};
    if ((ref.apiGroup ?? '') !== g.apiGroup) return false;
    const full = ref.subresource ? `${ref.resource}/${ref.subresource}` : ref.resource;
    if (full !== g.resource) return false;
    if (g.namespace !== undefined && ref.namespace !== g.namespace) return false;
    if (g.resourceNames && !g.resourceNames.includes(ref.name ?? '')) return false;
    // Server-side apply of a missing object is authorized as create and answered 201.
    if (g.verb === 'create') return e.verb === 'create' || (e.verb === 'patch' && code === 201);
    return e.verb === g.verb;
  };

  it('audit vs RBAC: no 403 over the whole run, and every rule of install/ exercised or justified', () => {
    // Every stage: a watch still open has only its ResponseStarted event.
    const events = cluster.auditEvents({ user: OPERATOR_USER, stage: '*' });
    expect(events.length).toBeGreaterThan(50);
    const denied = events.filter((e) => e.responseStatus?.code === 403);
    expect(denied.map((e) => `${e.verb} ${e.requestURI}: ${e.responseStatus?.message ?? ''}`)).toEqual([]);

    const grants = grantsOfInstall();
    expect(grants.length).toBeGreaterThan(50);
    const key = (g: Grant) => `${g.source}:${g.apiGroup}/${g.resource}:${g.verb}`;
    const justified = (g: Grant) =>
      JUSTIFIED[key(g)] ?? JUSTIFIED[`${g.source}:*`] ?? JUSTIFIED_CLASSES.find(([re]) => re.test(key(g)))?.[1];
    const unexercised = grants.filter((g) => !events.some((e) => exercises(g, e)));
    const unjustified = unexercised.filter((g) => !justified(g));
    expect(unjustified.map(key)).toEqual([]);
    // Every justification is still needed: a rule that is now exercised leaves the allow-list.
    const stale = Object.keys(JUSTIFIED).filter(
      (k) => !k.endsWith(':*') && !EXERCISED_BY_OTHER_FILES.has(k) && !unexercised.some((g) => key(g) === k),
    );
    expect(stale).toEqual([]);
    console.log(
      `rbac-audit: ${events.length} operator requests, 0 denied; ${grants.length} granted (rule, resource, verb) triples, ` +
        `${grants.length - unexercised.length} exercised, ${unexercised.length} justified unexercised`,
    );
  });
});
