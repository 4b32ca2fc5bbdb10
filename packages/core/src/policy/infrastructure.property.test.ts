import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isInvalidInputError } from '../errors.js';
import { decodeInfrastructure } from './infrastructure.js';

const maybe = <T>(a: fc.Arbitrary<T>) => fc.oneof(a, fc.constant(undefined), fc.anything());

describe('decodeInfrastructure on random input', () => {
  it('either decodes to well-formed facts or rejects naming a field; nothing else escapes', () => {
    let decoded = 0;
    fc.assert(
      fc.property(
        fc.record({
          infrastructureName: maybe(fc.constantFrom('demo-x7k2p', '', 'a')),
          apiServerInternalURI: maybe(fc.constantFrom('https://api-int.x:6443', 'http://x', '', 'https://')),
          controlPlaneTopology: maybe(fc.constantFrom('HighlyAvailable', 'External')),
          platformStatus: maybe(
            fc.record({
              type: maybe(fc.constantFrom('AWS', 'Azure', 'GCP', '')),
              aws: maybe(
                fc.record({
                  region: maybe(fc.constantFrom('us-east-1', '')),
                  resourceTags: maybe(fc.array(fc.record({ key: maybe(fc.string()), value: maybe(fc.string()) }), { maxLength: 3 })),
                }),
              ),
            }),
          ),
        }),
        (status) => {
          try {
            const f = decodeInfrastructure({
              apiVersion: 'config.openshift.io/v1',
              kind: 'Infrastructure',
              metadata: { name: 'cluster' },
              status,
            });
            decoded++;
            expect(f.platform.length).toBeGreaterThan(0);
            expect(f.infrastructureName.length).toBeGreaterThan(0);
            expect(f.apiServerInternalURL).toMatch(/^https:\/\/[^\s/]+/);
            for (const t of f.resourceTags) expect([typeof t.key, typeof t.value]).toEqual(['string', 'string']);
          } catch (e) {
            expect(isInvalidInputError(e), String(e)).toBe(true);
            if (isInvalidInputError(e)) expect(e.field).toMatch(/^(metadata|status)\./);
          }
        },
      ),
      { numRuns: 10_000 },
    );
    expect(decoded).toBeGreaterThan(0);
  }, 180_000); // an explicit budget: 10,000 runs on a loaded two-core machine
});
