export * from './allocation-block.js';
export * from './block-cidrs.js';
export * from './handle.js';
export * from './ip-math.js';
export * from './reservations.js';
export type * from './types.js';
