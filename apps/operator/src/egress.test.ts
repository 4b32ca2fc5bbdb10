import { describe, expect, it } from 'vitest';
import { createCertificateAuthority } from '@karpenter-operator/testkit';
import { caBundleProblem, readProxyEnv } from './egress.js';

describe('readProxyEnv', () => {
  it.each([
    { name: 'none set: no proxy', env: {}, want: { problems: [] } },
    {
      name: 'upper case, NO_PROXY kept as given',
      env: { HTTPS_PROXY: 'http://proxy.example.com:3128', NO_PROXY: '.cluster.local,10.0.0.0/16' },
      want: { proxyEnv: { HTTPS_PROXY: 'http://proxy.example.com:3128', NO_PROXY: '.cluster.local,10.0.0.0/16' }, problems: [] },
    },
    {
      name: 'lower case accepted',
      env: { https_proxy: 'https://user:pw@proxy:443' },
      want: { proxyEnv: { HTTPS_PROXY: 'https://user:pw@proxy:443' }, problems: [] },
    },
    { name: 'NO_PROXY alone is no proxy', env: { NO_PROXY: '.local' }, want: { problems: [] } },
  ])('$name', ({ env, want }) => {
    expect(readProxyEnv(env)).toEqual(want);
  });

  it.each([
    { name: 'not a URL', value: 'http://bad host:99' },
    { name: 'no scheme', value: 'proxy.example.com:3128' },
    { name: 'a scheme Node cannot proxy through', value: 'socks5://proxy:1080' },
  ])('malformed HTTPS_PROXY ($name): left out, named with its Proxy field', ({ value }) => {
    const r = readProxyEnv({ HTTPS_PROXY: value, HTTP_PROXY: 'http://ok:3128' });
    expect(r.proxyEnv).toEqual({ HTTP_PROXY: 'http://ok:3128' });
    expect(r.problems).toEqual([
      `HTTPS_PROXY (the cluster Proxy's status.httpsProxy) must be an http:// or https:// URL with a host, got ${JSON.stringify(value)}`,
    ]);
  });
});

describe('caBundleProblem', () => {
  const path = '/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem';
  it('a bundle of valid certificates, or an empty (not yet injected) one, is fine', async () => {
    const a = await createCertificateAuthority('a', 1);
    const b = await createCertificateAuthority('b', 1);
    expect(caBundleProblem(`# comment\n${a.certPem}${b.certPem}`, path)).toBeUndefined();
    expect(caBundleProblem('', path)).toBeUndefined();
  });

  it.each([
    { name: 'no PEM at all', text: 'not a certificate\n', want: /holds no PEM certificate$/ },
    {
      name: 'a broken certificate',
      text: '-----BEGIN CERTIFICATE-----\nMIIBroken\n-----END CERTIFICATE-----\n',
      want: /: certificate 1 of 1 does not parse/,
    },
  ])('$name: names the file and the ConfigMap', ({ text, want }) => {
    const p = caBundleProblem(text, path);
    expect(p).toMatch(want);
    expect(p).toContain(`trusted CA bundle ${path} (ConfigMap openshift-karpenter/karpenter-trusted-ca-bundle, key ca-bundle.crt)`);
  });
});
