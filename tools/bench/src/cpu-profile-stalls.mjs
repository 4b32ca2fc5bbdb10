// The longest busy stretches of a V8 .cpuprofile (node --cpu-prof): runs of samples with no `(idle)` sample
// between them, each with its start (seconds after the profile started), length and the functions with the
// most self time in it. What an event-loop lag monitor sees as a stall is at most such a stretch.
//   node tools/bench/src/cpu-profile-stalls.mjs <file> [stretches=8] [functions=8]
import { readCpuProfile } from './cpu-profile.mjs';

const [file, n = '8', fnCount = '8'] = process.argv.slice(2);
const { profile: p, byId, label } = readCpuProfile(file);
const stretches = [];
let t = 0;
let cur;
for (let i = 0; i < p.samples.length; i++) {
  const dt = p.timeDeltas[i] ?? 0;
  t += dt;
  const idle = byId.get(p.samples[i]).callFrame.functionName === '(idle)';
  if (idle) {
    if (cur) stretches.push(cur);
    cur = undefined;
    continue;
  }
  // A sample stands for the time since the previous one.
  cur ??= { startUs: t - dt, us: 0, self: new Map() };
  cur.us += dt;
  cur.self.set(p.samples[i], (cur.self.get(p.samples[i]) ?? 0) + dt);
}
if (cur) stretches.push(cur);
const busy = stretches.reduce((a, s) => a + s.us, 0);
console.log(`${stretches.length} busy stretches, ${(busy / 1e3).toFixed(0)} ms busy of ${(t / 1e6).toFixed(1)} s profiled`);
for (const s of [...stretches].sort((a, b) => b.us - a.us).slice(0, Number(n))) {
  console.log(`${(s.us / 1e3).toFixed(1).padStart(7)} ms at ${(s.startUs / 1e6).toFixed(3)} s`);
  const agg = new Map();
  for (const [id, us] of s.self) agg.set(label(id), (agg.get(label(id)) ?? 0) + us);
  for (const [k, us] of [...agg].sort((a, b) => b[1] - a[1]).slice(0, Number(fnCount)))
    console.log(`  ${(us / 1e3).toFixed(1).padStart(6)} ms  ${k}`);
}
