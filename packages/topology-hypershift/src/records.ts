/** A JSON object (not null, not a list): what a field of a decoded Kubernetes object must be before it is read. */
export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
