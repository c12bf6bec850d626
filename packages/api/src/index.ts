export * from './convert/index.js';
export * from './errors.js';
export * from './kinds.js';
export * from './meta.js';
export * from './resources/index.js';
export * from './selector/index.js';
