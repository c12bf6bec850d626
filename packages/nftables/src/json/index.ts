export * from './builders.js';
export * from './document.js';
export * from './ruleset.js';
export * from './types.js';
