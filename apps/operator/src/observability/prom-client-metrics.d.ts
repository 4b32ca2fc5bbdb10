// prom-client ships no types for its default metrics' modules (`lib/metrics/*.js`): each registers its
// metrics on a registry when called.
declare module 'prom-client/lib/metrics/*.js' {
  import type { Registry } from 'prom-client';
  const register: (registry: Registry, config: Record<string, unknown>) => void;
  export default register;
}
