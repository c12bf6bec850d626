import { packageTestConfig } from '../vitest.shared.ts';

// The benches' own tests live next to each bench (e.g. churn/churn.int.test.ts).
const config = packageTestConfig(import.meta.dirname);
if (config.test) config.test.include = ['*/**/*.test.ts'];
export default config;
