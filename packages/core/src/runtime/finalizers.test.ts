import { describe, expect, it } from 'vitest';
import { NotFoundError } from '../errors.js';
import { Types } from '../model/kube.js';
import { finalizersAfter } from '../policy/finalizers.js';
import { MemoryClusterStore } from '../testing/index.js';

describe('finalizersAfter', () => {
  it.each([
    { name: 'add appends', current: ['a'], change: { add: ['b'] }, want: ['a', 'b'] },
    { name: 'add present is nothing', current: ['a', 'b'], change: { add: ['a'] }, want: undefined },
    { name: 'remove keeps order', current: ['a', 'b', 'c'], change: { remove: ['b'] }, want: ['a', 'c'] },
    { name: 'remove absent is nothing', current: ['a'], change: { remove: ['x'] }, want: undefined },
    { name: 'both', current: ['a', 'b'], change: { add: ['c'], remove: ['a'] }, want: ['b', 'c'] },
  ])('$name', ({ current, change, want }) => {
    expect(finalizersAfter(current, change)).toEqual(want);
  });
});

describe('ClusterStore.updateFinalizers', () => {
  const ref = { ...Types.Karpenter, name: 'default' };
  const seeded = (finalizers: string[]) => {
    const store = new MemoryClusterStore([{ ...Types.Karpenter, metadata: { name: 'default', finalizers } }]);
    store.clearWrites();
    return store;
  };

  it('writes the whole list with the resourceVersion it read, and keeps finalizers of others', async () => {
    const store = seeded(['other.example.com/keep']);
    const rv = (await store.get(ref))!.metadata.resourceVersion;
    await store.updateFinalizers(ref, { add: ['mine'] });
    expect(store.writes.map((w) => w.body)).toEqual([
      { metadata: { finalizers: ['other.example.com/keep', 'mine'], resourceVersion: rv } },
    ]);
    await store.updateFinalizers(ref, { remove: ['mine'] });
    expect((await store.get(ref))!.metadata.finalizers).toEqual(['other.example.com/keep']);
    expect((store.writes[1]!.body as { metadata: { resourceVersion?: string } }).metadata.resourceVersion).toBeDefined();
  });

  it('sends nothing when the list already is so, and names a missing object', async () => {
    const store = seeded(['mine']);
    expect((await store.updateFinalizers(ref, { add: ['mine'], remove: ['absent'] })).changed).toBe(false);
    expect(store.writes).toEqual([]);
    await expect(store.updateFinalizers({ ...ref, name: 'gone' }, { add: ['x'] })).rejects.toThrow(NotFoundError);
  });
});
