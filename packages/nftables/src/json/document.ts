/**
 * The JSON document libnftables reads: `{ "nftables": [ commands… ] }`. Pure: no I/O.
 */
import type { NftCommand } from './types.js';

export function commandsDocument(commands: readonly NftCommand[]): string {
  return JSON.stringify({ nftables: commands });
}
