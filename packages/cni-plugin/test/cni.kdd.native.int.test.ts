// The Kubernetes-datastore integration tests against the native executables, bin/native/calico and
// calico-ipam (see plugin-executable.ts). Each test file runs in its own process, so the setting
// stays here.
process.env.CALICO_TEST_EXECUTABLE = 'native';
await import('./cni.kdd.int.test.js');
