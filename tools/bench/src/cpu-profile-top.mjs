// Top functions by self time of a V8 .cpuprofile (node --cpu-prof): node tools/bench/src/cpu-profile-top.mjs <file> [n]
import { readCpuProfile } from './cpu-profile.mjs';

const [file, n = '25'] = process.argv.slice(2);
const { profile: p, label } = readCpuProfile(file);
const self = new Map();
const dt = p.timeDeltas;
for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + (dt[i] ?? 0));
const agg = new Map();
for (const [id, us] of self) agg.set(label(id), (agg.get(label(id)) ?? 0) + us);
const total = [...agg.values()].reduce((a, b) => a + b, 0);
console.log(`total sampled ${(total / 1e6).toFixed(2)} s`);
for (const [k, us] of [...agg].sort((a, b) => b[1] - a[1]).slice(0, Number(n)))
  console.log(`${(us / 1000).toFixed(0).padStart(7)} ms  ${((us / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
