export * from './calicoctl-config.js';
export * from './client-config.js';
export * from './cni-config.js';
export * from './env-config.js';
export * from './load-client-config.js';
