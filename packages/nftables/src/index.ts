export * from './errors.js';
export * from './json/index.js';
export type * from './nft-client.js';
export * from './nft-context.js';
