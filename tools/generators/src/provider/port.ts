import ts from 'typescript';

/** Where the generator reads the port from, relative to the workspace root. */
export const CLOUD_PROVIDER_PORT = 'packages/core/src/ports/cloud-provider.ts';

export interface PortParameter {
  name: string;
  type: string;
  optional: boolean;
}

/** One member of a port interface, as its declaration and TSDoc state it. */
export interface PortMember {
  name: string;
  kind: 'property' | 'method';
  readonly: boolean;
  params: PortParameter[];
  /** The declared type of a property, or the return type of a method. */
  type: string;
  /** The TSDoc, on one line. */
  doc: string;
  /** Type names the declaration references (to import), without globals such as `Promise`. */
  typeNames: string[];
}

const GLOBAL_TYPES = new Set([
  'Promise',
  'Array',
  'ReadonlyArray',
  'Record',
  'Partial',
  'Required',
  'Readonly',
  'Pick',
  'Omit',
  'Map',
  'Set',
  'Date',
  'Error',
]);

const oneLine = (s: string): string => s.replace(/\s+/g, ' ').trim();

function docOf(node: ts.Node): string {
  const parts = ts
    .getJSDocCommentsAndTags(node)
    .filter(ts.isJSDoc)
    .map((d) => ts.getTextOfJSDocComment(d.comment) ?? '');
  return oneLine(parts.join(' '));
}

function typeNamesOf(node: ts.Node, sf: ts.SourceFile, into: Set<string>): void {
  if (ts.isTypeReferenceNode(node) && ts.isIdentifier(node.typeName)) {
    const n = node.typeName.getText(sf);
    if (!GLOBAL_TYPES.has(n)) into.add(n);
  }
  ts.forEachChild(node, (c) => typeNamesOf(c, sf, into));
}

/**
 * Reads the members of `interfaceName` from a port file's source, with their TSDoc, so that what the
 * generator scaffolds follows the port as it is today (one source of truth, house rule 14). Throws when
 * the interface is absent.
 */
export function readPort(source: string, interfaceName = 'CloudProvider', fileName = CLOUD_PROVIDER_PORT): PortMember[] {
  const sf = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const decl = sf.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === interfaceName);
  if (!decl) throw new Error(`${fileName}: no interface ${interfaceName}`);
  const members: PortMember[] = [];
  for (const m of decl.members) {
    const names = new Set<string>();
    typeNamesOf(m, sf, names);
    const name = m.name?.getText(sf) ?? '';
    if (ts.isPropertySignature(m)) {
      members.push({
        name,
        kind: 'property',
        readonly: (m.modifiers ?? []).some((x) => x.kind === ts.SyntaxKind.ReadonlyKeyword),
        params: [],
        type: m.type ? oneLine(m.type.getText(sf)) : 'unknown',
        doc: docOf(m),
        typeNames: [...names],
      });
    } else if (ts.isMethodSignature(m)) {
      members.push({
        name,
        kind: 'method',
        readonly: false,
        params: m.parameters.map((p) => ({
          name: p.name.getText(sf),
          type: p.type ? oneLine(p.type.getText(sf)) : 'unknown',
          optional: !!p.questionToken,
        })),
        type: m.type ? oneLine(m.type.getText(sf)) : 'void',
        doc: docOf(m),
        typeNames: [...names],
      });
    }
  }
  return members;
}
