/** Felix's parts take the one logger shape of every package (`@calico-ts/api/log`). */
export { type Logger, NOOP_LOGGER } from '@calico-ts/api/log';

/** The message of anything thrown. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
