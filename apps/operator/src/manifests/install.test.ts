import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Names,
  checkEscalation,
  isSubset,
  coversRules,
  effectiveRules,
  renderOperand,
  type KubeObject,
  type PolicyRule,
} from '@karpenter-operator/core';
import { anOperandInput } from '@karpenter-operator/core/testing';
import { awsCredentialsRequests, awsOperandRbac } from '@karpenter-operator/provider-aws';
import { describe, expect, it } from 'vitest';
import { isMap, isSeq, parseAllDocuments } from 'yaml';
import { cvoAnnotations, payloadImages } from './cvo.js';
import { installFiles, renderInstallFile } from './install.js';
import { OperatorRbacNames } from './operator-rbac.js';

const installDir = fileURLToPath(new URL('../../../../install/', import.meta.url));
const committed = readdirSync(installDir).sort();
const parsed = committed.map((name) => {
  const docs = parseAllDocuments(readFileSync(join(installDir, name), 'utf8'));
  return { name, docs, objects: docs.map((d) => d.toJS() as KubeObject) };
});
const all: KubeObject[] = parsed.flatMap((f) => f.objects);
const operator = { kind: 'ServiceAccount' as const, name: Names.operatorServiceAccount, namespace: Names.operatorNamespace };

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const find = (kind: string, name: string, namespace?: string): Obj => {
  const o = all.find((x) => x.kind === kind && x.metadata.name === name && x.metadata.namespace === namespace);
  if (!o) throw new Error(`install/ has no ${kind} ${namespace ?? ''}/${name}`);
  return o as Obj;
};

/** The operand as the operator renders it standalone on AWS. */
const operandInput = anOperandInput({ providerRbac: awsOperandRbac(Names.operatorNamespace) });

const deploymentOf = (objects: KubeObject[]): Obj => (objects.find((o) => o.kind === 'Deployment') as Obj).spec.template;

describe('install/', () => {
  it('is what the generator writes (run `npx node apps/operator/scripts/generate-install.mjs`)', () => {
    const files = installFiles();
    expect(committed).toEqual(files.map((f) => f.name).sort());
    for (const file of files) expect(readFileSync(join(installDir, file.name), 'utf8'), file.name).toBe(renderInstallFile(file));
  });

  it('parses without errors or warnings', () => {
    for (const f of parsed) for (const d of f.docs) expect([...d.errors, ...d.warnings], f.name).toEqual([]);
  });

  it('annotates every document for the CVO and the feature gate', () => {
    for (const o of all) expect(o.metadata.annotations, `${o.kind} ${o.metadata.name}`).toMatchObject(cvoAnnotations);
  });

  it('orders files as the CVO must apply them', () => {
    // The CVO applies one component's manifests in file-name order.
    const kinds = committed.map(
      (name) =>
        `${name.replace(/^0000_50_karpenter-operator_/, '')}: ${parsed
          .find((f) => f.name === name)!
          .objects.map((o) => o.kind)
          .join(',')}`,
    );
    expect(kinds).toEqual([
      '00_crd-karpenter.yaml: CustomResourceDefinition',
      '00_credentialsrequest-aws-node-identity.yaml: CredentialsRequest',
      '00_credentialsrequest-aws.yaml: CredentialsRequest',
      '00_namespace.yaml: Namespace',
      '01_networkpolicy.yaml: NetworkPolicy,NetworkPolicy,NetworkPolicy',
      '01_trusted-ca-bundle.yaml: ConfigMap',
      '02_metrics-services.yaml: Service,Service',
      '02_rbac-metrics-auth.yaml: ClusterRole,ClusterRoleBinding',
      '02_rbac-namespaced.yaml: Role,RoleBinding,Role,RoleBinding,Role,RoleBinding,Role,RoleBinding',
      '02_rbac-operand-grants.yaml: ClusterRole,ClusterRoleBinding',
      '02_rbac.yaml: ServiceAccount,ClusterRole,ClusterRoleBinding',
      '03_deployment.yaml: Deployment',
      '04_clusteroperator.yaml: ClusterOperator',
      '05_karpenter-reader.yaml: ClusterRole',
      // Monitoring at run level 90, after the component.
      '0000_90_karpenter-operator_00_prometheus-rbac.yaml: Role,RoleBinding',
      '0000_90_karpenter-operator_01_servicemonitors.yaml: ServiceMonitor,ServiceMonitor',
      '0000_90_karpenter-operator_02_prometheusrule.yaml: PrometheusRule',
      '0000_90_karpenter-operator_03_dashboard.yaml: ConfigMap',
      'image-references: ImageStream',
    ]);
  });
});

describe('install/ order: the CVO waits on the ClusterOperator before applying later files', () => {
  const position = (o: Obj) => committed.indexOf(parsed.find((f) => f.objects.includes(o as KubeObject))!.name);
  const clusterOperatorAt = position(find('ClusterOperator', Names.clusterOperator));
  const key = (o: Obj) => `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;

  /** What the operator Deployment needs to run and report: derived from install/ itself, not listed by hand. */
  const neededForHealth = (): Obj[] => {
    const deployment = find('Deployment', Names.operatorDeployment, Names.operatorNamespace);
    const pod = deployment.spec.template.spec;
    const sa = find('ServiceAccount', pod.serviceAccountName, Names.operatorNamespace);
    const bindings = all.filter(
      (o) =>
        (o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding') &&
        ((o as Obj).subjects ?? []).some((s: Obj) => s.kind === 'ServiceAccount' && s.name === sa.metadata.name),
    );
    const roles = bindings.map((b) => {
      const ref = (b as Obj).roleRef;
      return find(ref.kind, ref.name, ref.kind === 'Role' ? b.metadata.namespace : undefined);
    });
    const configMaps = (pod.volumes as Obj[])
      .filter((v) => v.configMap)
      .map((v) => find('ConfigMap', v.configMap.name, Names.operatorNamespace));
    const policies = all.filter((o) => o.kind === 'NetworkPolicy');
    return [
      find('Namespace', Names.operatorNamespace),
      find('CustomResourceDefinition', Names.karpenterCrd),
      ...all.filter((o) => o.kind === 'CredentialsRequest'),
      sa,
      ...bindings,
      ...roles,
      ...configMaps,
      ...policies,
      deployment,
    ];
  };

  it('everything the operator needs to become healthy comes before the ClusterOperator manifest', () => {
    const needed = neededForHealth();
    // Derivation sanity: the bound roles, the CA bundle and the policies are in the list.
    expect(needed.map(key)).toEqual(
      expect.arrayContaining([
        `ConfigMap ${Names.operatorNamespace}/${Names.trustedCaBundle}`,
        `NetworkPolicy ${Names.operatorNamespace}/default-deny`,
      ]),
    );
    const late = needed.filter((o) => position(o) >= clusterOperatorAt).map((o) => `${key(o)} in ${committed[position(o)]}`);
    expect(late).toEqual([]);
  });

  it('a default-deny policy never comes before the policies that let the operator and operand through (same file)', () => {
    const files = new Set(all.filter((o) => o.kind === 'NetworkPolicy').map(position));
    expect(files.size).toBe(1);
  });
});

describe('install/ NetworkPolicies', () => {
  const policy = (name: string) => find('NetworkPolicy', name, Names.operatorNamespace);
  const ports = (rules: Obj[]) => rules.flatMap((r) => (r.ports as Obj[]).map((p) => `${p.protocol}/${p.port}`));
  const containerPorts = (pod: Obj) => (pod.containers as Obj[]).flatMap((c) => (c.ports as Obj[]).map((p) => p.name));

  it('deny all ingress and egress in the namespace by default', () => {
    expect(policy('default-deny').spec).toEqual({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
  });

  it.each([
    { name: Names.operatorDeployment, selects: () => find('Deployment', Names.operatorDeployment, Names.operatorNamespace).spec.template },
    { name: Names.operandDeployment, selects: () => deploymentOf(renderOperand(operandInput)) },
  ])('$name: selects its pods, egress DNS + API server + HTTPS, ingress to its named metrics and probe ports only', ({ name, selects }) => {
    const p = policy(name).spec;
    const template = selects();
    expect(isSubset(p.podSelector.matchLabels, template.metadata.labels), `${JSON.stringify(p.podSelector)} selects the pods`).toBe(true);
    expect(ports(p.egress)).toEqual(['UDP/53', 'TCP/53', 'UDP/5353', 'TCP/5353', 'TCP/6443', 'TCP/443']);
    expect(p.egress[0].to).toEqual([{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'openshift-dns' } } }]);
    // Named ports: each exists on the pod, so the policy follows a change of number.
    const named = ports(p.ingress).map((x: string) => x.split('/')[1]);
    expect(containerPorts(template.spec)).toEqual(expect.arrayContaining(named));
    expect(named).toHaveLength(2);
  });
});

describe('install/ RBAC', () => {
  const input = operandInput;
  const operandRoles = renderOperand(input).filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole');

  it('lets the operator create every operand role (core and provider) without escalation', () => {
    expect(operandRoles.map((r) => `${r.kind} ${r.metadata.name}`)).toEqual([
      'ClusterRole karpenter-core',
      'Role karpenter',
      'Role karpenter-dns',
      'ClusterRole karpenter',
    ]);
    expect(checkEscalation(all, operator, operandRoles)).toEqual([]);
  });

  it('would catch an operand rule the operator lacks', () => {
    const extra = { ...operandRoles[0]!, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }] };
    expect(checkEscalation(all, operator, [extra]).map((p) => p.role)).toEqual(['ClusterRole karpenter-core']);
  });

  const rule = (apiGroups: string[], resources: string[], verbs: string[], resourceNames?: string[]): PolicyRule =>
    resourceNames ? { apiGroups, resources, verbs, resourceNames } : { apiGroups, resources, verbs };
  it.each([
    {
      name: 'apply runtime CRDs',
      ns: undefined,
      want: rule(
        ['apiextensions.k8s.io'],
        ['customresourcedefinitions'],
        ['create', 'get', 'list', 'watch', 'patch'],
        ['nodepools.karpenter.sh', 'ec2nodeclasses.karpenter.k8s.aws'],
      ),
      ok: true,
    },
    {
      name: 'not patch foreign CRDs',
      ns: undefined,
      want: rule(['apiextensions.k8s.io'], ['customresourcedefinitions'], ['patch'], ['machines.machine.openshift.io']),
      ok: false,
    },
    {
      name: 'Karpenter CR, status and finalizers',
      ns: undefined,
      want: rule(['autoscaling.openshift.io'], ['karpenters', 'karpenters/status'], ['patch'], ['default']),
      ok: true,
    },
    {
      name: 'owner references to the CR',
      ns: undefined,
      want: rule(['autoscaling.openshift.io'], ['karpenters/finalizers'], ['update'], ['default']),
      ok: true,
    },
    {
      name: 'ClusterOperator create and status',
      ns: undefined,
      want: rule(['config.openshift.io'], ['clusteroperators'], ['create', 'get', 'list', 'watch']),
      ok: true,
    },
    {
      name: 'ClusterOperator status patch',
      ns: undefined,
      want: rule(['config.openshift.io'], ['clusteroperators/status'], ['patch'], ['karpenter']),
      ok: true,
    },
    {
      name: 'not another ClusterOperator status',
      ns: undefined,
      want: rule(['config.openshift.io'], ['clusteroperators/status'], ['patch'], ['kube-apiserver']),
      ok: false,
    },
    {
      name: 'Infrastructure cluster',
      ns: undefined,
      want: rule(['config.openshift.io'], ['infrastructures'], ['get', 'list', 'watch'], ['cluster']),
      ok: true,
    },
    {
      name: 'MachineSets in openshift-machine-api',
      ns: 'openshift-machine-api',
      want: rule(['machine.openshift.io'], ['machinesets'], ['list', 'watch']),
      ok: true,
    },
    {
      name: 'user-data Secrets in openshift-machine-api',
      ns: 'openshift-machine-api',
      want: rule([''], ['secrets'], ['list', 'watch']),
      ok: true,
    },
    { name: 'no Secrets elsewhere', ns: 'openshift-config', want: rule([''], ['secrets'], ['list']), ok: false },
    {
      name: 'boot images ConfigMap',
      ns: 'openshift-machine-config-operator',
      want: rule([''], ['configmaps'], ['get', 'list', 'watch'], ['coreos-bootimages']),
      ok: true,
    },
    {
      name: 'MachineConfigPools and KubeletConfigs',
      ns: undefined,
      want: rule(
        ['machineconfiguration.openshift.io'],
        ['machineconfigpools', 'kubeletconfigs'],
        ['create', 'get', 'list', 'watch', 'patch', 'delete'],
      ),
      ok: true,
    },
    {
      name: 'EC2NodeClasses',
      ns: undefined,
      want: rule(['karpenter.k8s.aws'], ['ec2nodeclasses'], ['create', 'get', 'list', 'watch', 'patch', 'delete']),
      ok: true,
    },
    {
      name: 'NodePools and NodeClaims teardown',
      ns: undefined,
      want: rule(['karpenter.sh'], ['nodepools', 'nodeclaims'], ['list', 'watch', 'patch', 'delete']),
      ok: true,
    },
    {
      name: 'CSR approval',
      ns: undefined,
      want: rule(['certificates.k8s.io'], ['certificatesigningrequests/approval'], ['update']),
      ok: true,
    },
    {
      name: 'kubelet signers',
      ns: undefined,
      want: rule(
        ['certificates.k8s.io'],
        ['signers'],
        ['approve'],
        ['kubernetes.io/kube-apiserver-client-kubelet', 'kubernetes.io/kubelet-serving'],
      ),
      ok: true,
    },
    {
      name: 'no other signer',
      ns: undefined,
      want: rule(['certificates.k8s.io'], ['signers'], ['approve'], ['kubernetes.io/kube-apiserver-client']),
      ok: false,
    },
    { name: 'events', ns: undefined, want: rule(['', 'events.k8s.io'], ['events'], ['create', 'patch']), ok: true },
    {
      name: 'leader Lease',
      ns: Names.operatorNamespace,
      want: rule(['coordination.k8s.io'], ['leases'], ['get', 'create', 'update'], [Names.leaderLease]),
      ok: true,
    },
    {
      name: 'credentials Secret',
      ns: Names.operatorNamespace,
      want: rule([''], ['secrets'], ['get', 'list', 'watch'], [Names.credentialsSecret]),
      ok: true,
    },
    { name: 'not every Secret of its namespace', ns: Names.operatorNamespace, want: rule([''], ['secrets'], ['list']), ok: false },
    {
      name: 'operand Deployment',
      ns: Names.operatorNamespace,
      want: rule(['apps'], ['deployments'], ['create', 'get', 'list', 'watch', 'patch', 'delete'], [Names.operandDeployment]),
      ok: true,
    },
    {
      name: 'not its own Deployment',
      ns: Names.operatorNamespace,
      want: rule(['apps'], ['deployments'], ['patch'], [Names.operatorDeployment]),
      ok: false,
    },
    {
      name: 'no escalate or bind',
      ns: undefined,
      want: rule(['rbac.authorization.k8s.io'], ['clusterroles'], ['escalate', 'bind']),
      ok: false,
    },
  ])('operator may $name', ({ ns, want, ok }) => {
    expect(coversRules(effectiveRules(all, operator, ns), [want]).ok).toBe(ok);
  });

  it('explains every rule of the operator’s own roles in a comment', () => {
    for (const f of parsed) {
      for (const d of f.docs) {
        const o = d.toJS() as KubeObject;
        const own = (o.kind === 'Role' || o.kind === 'ClusterRole') && o.metadata.name === OperatorRbacNames.clusterRole;
        if (!own) continue;
        const rules = d.get('rules');
        expect(isSeq(rules)).toBe(true);
        if (!isSeq(rules)) continue;
        for (const [i, item] of rules.items.entries()) {
          // The parser attaches the first item's comment to the list.
          const comment = i === 0 ? rules.commentBefore : isMap(item) ? item.commentBefore : undefined;
          expect(comment?.trim(), `${f.name} ${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name} rule ${i}`).toBeTruthy();
        }
      }
    }
  });
});

describe('install/ objects', () => {
  it('ships the provider CredentialsRequests unchanged but for the CVO annotations', () => {
    for (const cr of awsCredentialsRequests(Names.operatorNamespace)) {
      const shipped = find('CredentialsRequest', cr.metadata.name, Names.credentialsRequestNamespace);
      expect(shipped['spec']).toEqual(cr['spec']);
      expect(shipped['metadata'].annotations).toMatchObject(cr.metadata.annotations ?? {});
    }
  });

  it.each([
    {
      name: 'namespace node selector',
      get: () => find('Namespace', Names.operatorNamespace)['metadata'].annotations['openshift.io/node-selector'],
      want: '',
    },
    {
      name: 'namespace management workloads',
      get: () => find('Namespace', Names.operatorNamespace)['metadata'].annotations['workload.openshift.io/allowed'],
      want: 'management',
    },
    {
      name: 'namespace monitoring',
      get: () => find('Namespace', Names.operatorNamespace)['metadata'].labels['openshift.io/cluster-monitoring'],
      want: 'true',
    },
    {
      name: 'CRD is cluster-scoped',
      get: () => find('CustomResourceDefinition', 'karpenters.autoscaling.openshift.io')['spec'].scope,
      want: 'Cluster',
    },
    {
      name: 'CRD refuses names other than default',
      get: () =>
        find('CustomResourceDefinition', 'karpenters.autoscaling.openshift.io')['spec'].versions[0].schema.openAPIV3Schema[
          'x-kubernetes-validations'
        ][0].rule,
      want: "self.metadata.name == 'default'",
    },
    {
      name: 'CRD logLevel enum',
      get: () =>
        find('CustomResourceDefinition', 'karpenters.autoscaling.openshift.io')['spec'].versions[0].schema.openAPIV3Schema.properties.spec
          .properties.logLevel,
      want: expect.objectContaining({ enum: ['debug', 'info', 'error'], default: 'info' }),
    },
    {
      name: 'CRD status subresource',
      get: () => find('CustomResourceDefinition', 'karpenters.autoscaling.openshift.io')['spec'].versions[0].subresources,
      want: { status: {} },
    },
    {
      name: 'Deployment label',
      get: () => find('Deployment', Names.operatorDeployment, Names.operatorNamespace)['spec'].template.metadata.labels,
      want: { 'k8s-app': 'karpenter-operator' },
    },
    {
      name: 'Deployment namespace flag from the downward API',
      get: () => find('Deployment', Names.operatorDeployment, Names.operatorNamespace)['spec'].template.spec.containers[0].args[0],
      want: '--namespace=$(POD_NAMESPACE)',
    },
    {
      name: 'Deployment release version',
      get: () =>
        find('Deployment', Names.operatorDeployment, Names.operatorNamespace)['spec'].template.spec.containers[0].env.find(
          (e: Obj) => e['name'] === 'RELEASE_VERSION',
        ).value,
      want: '0.0.1-snapshot',
    },
    {
      name: 'Deployment operand image',
      get: () =>
        find('Deployment', Names.operatorDeployment, Names.operatorNamespace)['spec'].template.spec.containers[0].env.find(
          (e: Obj) => e['name'] === 'KARPENTER_IMAGE_AWS',
        ).value,
      want: payloadImages.awsOperand.pullSpec,
    },
    {
      name: 'Deployment requests only',
      get: () =>
        Object.keys(find('Deployment', Names.operatorDeployment, Names.operatorNamespace)['spec'].template.spec.containers[0].resources),
      want: ['requests'],
    },
    {
      name: 'Deployment SCC',
      get: () =>
        find('Deployment', Names.operatorDeployment, Names.operatorNamespace)['spec'].template.metadata.annotations[
          'openshift.io/required-scc'
        ],
      want: 'restricted-v2',
    },
    { name: 'ClusterOperator name', get: () => find('ClusterOperator', Names.clusterOperator)['metadata'].name, want: 'karpenter' },
    {
      name: 'reader role aggregates to cluster-reader, not admin',
      get: () => find('ClusterRole', 'karpenter-reader')['metadata'].labels,
      want: { 'rbac.authorization.k8s.io/aggregate-to-cluster-reader': 'true' },
    },
    {
      name: 'reader role is read-only',
      get: () =>
        [...new Set((find('ClusterRole', 'karpenter-reader')['rules'] as Array<{ verbs: string[] }>).flatMap((r) => r.verbs))].sort(),
      want: ['get', 'list', 'watch'],
    },
    {
      name: 'the ClusterOperator manifest lists what must-gather collects before the operator runs',
      get: () =>
        (find('ClusterOperator', Names.clusterOperator)['status'].relatedObjects as Array<{ resource: string; name: string }>).map(
          (r) => `${r.resource}/${r.name}`,
        ),
      want: [
        'namespaces/openshift-karpenter',
        'deployments/karpenter-operator',
        'deployments/karpenter',
        'clusterroles/karpenter-operator',
        'clusterrolebindings/karpenter-operator',
        'customresourcedefinitions/karpenters.autoscaling.openshift.io',
        'karpenters/',
        'nodepools/',
        'nodeclaims/',
        'nodeoverlays/',
        'certificatesigningrequests/',
        'machineconfigpools/',
        'kubeletconfigs/',
        'ec2nodeclasses/',
        'credentialsrequests/karpenter-cloud-credentials',
        'credentialsrequests/karpenter-node-identity-credentials',
      ],
    },
    {
      name: 'image-references names both payload images',
      get: () => find('ImageStream', 'karpenter-operator')['spec'].tags.map((t: Obj) => t['name']),
      want: ['karpenter-operator', 'aws-karpenter-provider-aws'],
    },
  ])('$name', ({ get, want }) => {
    expect(get()).toEqual(want);
  });

  it('names only images that image-references lists', () => {
    const refs = new Set((find('ImageStream', 'karpenter-operator')['spec'].tags as Obj[]).map((t) => t['from'].name));
    const text = parsed
      .filter((f) => f.name !== 'image-references')
      .map((f) => readFileSync(join(installDir, f.name), 'utf8'))
      .join('\n');
    const named = [...text.matchAll(/quay\.io\/[^\s"']+/g)].map((m) => m[0]);
    expect(named.length).toBeGreaterThan(0);
    for (const image of named) expect(refs.has(image), image).toBe(true);
  });
});
