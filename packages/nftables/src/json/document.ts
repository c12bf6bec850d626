/**
 * The JSON document libnftables reads: `{ "nftables": [ metainfo?, commands… ] }`. Pure: no I/O.
 */
import type { NftCommand, NftDocument } from './types.js';

/** The commands as the document's text, without metainfo. */
export function commandsDocument(commands: readonly NftCommand[]): string {
  return JSON.stringify({ nftables: commands });
}

/** The document for `commands`, led by the schema metainfo as `nft -j` prints it. */
export function nftDocument(commands: readonly NftCommand[]): NftDocument {
  return { nftables: [{ metainfo: { json_schema_version: 1 } }, ...commands] };
}
