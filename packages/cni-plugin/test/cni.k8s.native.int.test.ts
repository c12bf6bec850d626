// The Kubernetes-mode integration tests against the native executables (bin/native), run
// directly. Each test file runs in its own process, so the setting stays here.
process.env.CALICO_TEST_EXECUTABLE = 'native';
await import('./cni.k8s.int.test.js');
