// The Kubernetes-mode integration tests with a plugin service on every node (`calico --serve`):
// the native executables hand each ADD and DEL to it, and it keeps its datastore and Kubernetes
// API clients open. Each test file runs in its own process, so the settings stay here.
process.env.CALICO_TEST_EXECUTABLE = 'native';
process.env.CALICO_TEST_SERVICE = '1';
await import('./cni.k8s.int.test.js');
