// The same integration tests against the native executable, bin/native/calicoctl (see
// testing-internal/executable.ts). Each test file runs in its own process, so the setting stays here.
process.env.CALICO_TEST_EXECUTABLE = 'native';
await import('./cluster-diags.int.test.js');
