/** Fakes for tests of code that embeds the plugin: an in-memory datastore, kernel and delegates. */

export { type DelegateHandler, delegateError, FakeDelegateRunner } from './io/delegate.js';
export { type BackendMethod, FakeBackend, type FakePool } from './io/fake-backend.js';
export { type FakeNamespace, FakeNetOps } from './io/fake-net-ops.js';
export { silentLogger } from './io/logger.js';
