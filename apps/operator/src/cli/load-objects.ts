import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '@karpenter-operator/core';

export class InputError extends Error {}

/**
 * Reads every `.yaml`, `.yml` and `.json` file under `dir` (recursively, sorted): one or many documents a
 * file, and `List` kinds unpacked — the shape of a must-gather. Throws `InputError` naming the file and
 * document when one cannot be used.
 */
export function loadObjects(dir: string): KubeObject[] {
  let files: string[];
  try {
    files = walk(dir);
  } catch (e) {
    throw new InputError(`reading ${dir}: ${(e as Error).message}`);
  }
  const out: KubeObject[] = [];
  for (const file of files) {
    const rel = relative(dir, file) || file;
    const text = readFileSync(file, 'utf8');
    const docs: unknown[] = [];
    if (extname(file) === '.json') {
      try {
        docs.push(JSON.parse(text));
      } catch (e) {
        throw new InputError(`${rel}: not valid JSON: ${(e as Error).message}`);
      }
    } else {
      parseAllDocuments(text).forEach((d, i) => {
        if (d.errors.length) throw new InputError(`${rel}: document ${i + 1}: ${d.errors[0]!.message}`);
        const v: unknown = d.toJS();
        if (v !== null && v !== undefined) docs.push(v);
      });
    }
    docs.forEach((doc, i) => {
      for (const obj of unpack(doc)) {
        const o = obj as Partial<KubeObject>;
        if (
          typeof o !== 'object' ||
          o === null ||
          typeof o.apiVersion !== 'string' ||
          typeof o.kind !== 'string' ||
          typeof o.metadata?.name !== 'string'
        ) {
          throw new InputError(`${rel}: document ${i + 1}: needs apiVersion, kind and metadata.name`);
        }
        out.push(o as KubeObject);
      }
    });
  }
  return out;
}

function unpack(doc: unknown): unknown[] {
  const d = doc as { kind?: string; items?: unknown[] };
  if (typeof d === 'object' && d !== null && typeof d.kind === 'string' && d.kind.endsWith('List') && Array.isArray(d.items))
    return d.items;
  return [doc];
}

function walk(dir: string): string[] {
  const st = statSync(dir);
  if (st.isFile()) return [dir];
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) return walk(p);
      return ['.yaml', '.yml', '.json'].includes(extname(name)) ? [p] : [];
    });
}
