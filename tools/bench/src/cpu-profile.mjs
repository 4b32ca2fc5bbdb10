// Reading a V8 .cpuprofile (node --cpu-prof), for the cpu-profile-* tools.
import { readFileSync } from 'node:fs';

/** The profile, its nodes by id, and a label per node id: `function dir/file:line` (no line for natives). */
export function readCpuProfile(file) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((x) => [x.id, x]));
  const label = (id) => {
    const cf = byId.get(id).callFrame;
    return `${cf.functionName || '(anonymous)'} ${cf.url.split('/').slice(-2).join('/')}${cf.url ? `:${cf.lineNumber + 1}` : ''}`;
  };
  return { profile, byId, label };
}
