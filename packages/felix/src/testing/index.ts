export { FAKE_LINKS, fakeIp, fakeProcSys, seedWebWorkload, type WebWorkloadOptions } from './fake-host.js';
