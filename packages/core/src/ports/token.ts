/**
 * A DI token that remembers the type it stands for. Structurally a `symbol`, so inversify accepts it as
 * a `ServiceIdentifier` without core importing inversify.
 */
export type ServiceIdentifier<T> = symbol & { readonly __service?: T };

export const token = <T>(name: string): ServiceIdentifier<T> => Symbol.for(`karpenter-operator/${name}`) as ServiceIdentifier<T>;
