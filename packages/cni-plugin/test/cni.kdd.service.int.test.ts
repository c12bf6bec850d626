// The Kubernetes-datastore integration tests with a plugin service on every node (`calico
// --serve`): the native executables hand each ADD and DEL to it, and it keeps one Kubernetes
// datastore client open. Each test file runs in its own process, so the settings stay here.
process.env.CALICO_TEST_EXECUTABLE = 'native';
process.env.CALICO_TEST_SERVICE = '1';
await import('./cni.kdd.int.test.js');
