/**
 * Schemas built on first use. Building every kind's zod schema when the package is imported costs
 * a short-lived program (calicoctl, the CNI plugin) more than its real work: tens of milliseconds,
 * for schemas that a read never touches. A schema constant declared as
 * `export const x = lazySchema(() => z.strictObject({...}))` is a stand-in that builds the real
 * schema the first time anything looks at it, then forwards every operation to it.
 *
 * The stand-in and the schema share Go encoding facts (`goField`): what is recorded for one is
 * recorded for the other once built. Everything else reaches the built schema through the stand-in.
 */
import { goFieldRegistry } from './go-encoding.js';

export function lazySchema<T extends object>(build: () => T): T {
  return lazyValue(build, {} as T, (built, standIn) => {
    const info = goFieldRegistry.get(built as never);
    if (info) goFieldRegistry.add(standIn as never, info);
  });
}

/** A plain object (a table of field schemas) computed on first use. */
export function lazyObject<T extends object>(build: () => T): T {
  return lazyValue(build, {} as T);
}

/** An array computed on first use (iteration, indexing, `length` and methods all work). */
export function lazyArray<T>(build: () => T[]): T[] {
  return lazyValue(build, [] as T[]);
}

function lazyValue<T extends object>(
  build: () => T,
  placeholder: T,
  onBuilt?: (built: T, standIn: T) => void,
): T {
  let built: T | undefined;
  const real = (): T => {
    if (built === undefined) {
      built = build();
      onBuilt?.(built, standIn);
    }
    return built;
  };
  const standIn: T = new Proxy(placeholder, {
    get: (_, p) => {
      const t = real();
      const v = Reflect.get(t, p, t);
      // Functions looked up on an array must act on the array (length, iteration, includes...).
      return typeof v === 'function' && Array.isArray(t) ? v.bind(t) : v;
    },
    set: (_, p, v) => Reflect.set(real(), p, v),
    has: (_, p) => Reflect.has(real(), p),
    ownKeys: () => Reflect.ownKeys(real()),
    getOwnPropertyDescriptor: (target, p) => {
      const d = Reflect.getOwnPropertyDescriptor(real(), p);
      // A proxy may report a property as non-configurable only if its own target has it so.
      if (d && !d.configurable && !Reflect.getOwnPropertyDescriptor(target, p)) d.configurable = true;
      return d;
    },
    defineProperty: (_, p, d) => Reflect.defineProperty(real(), p, d),
    deleteProperty: (_, p) => Reflect.deleteProperty(real(), p),
    getPrototypeOf: () => Reflect.getPrototypeOf(real()),
  });
  return standIn;
}
