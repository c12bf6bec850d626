import type { AgentTyphaConfig } from '../agent-syncer.js';

/** An agent's Typha parameters with Felix's defaults: no Typha, unless `over` names one. */
export function agentConfig(over: Partial<AgentTyphaConfig> = {}): AgentTyphaConfig {
  return {
    FelixHostname: 'n1',
    TyphaAddr: '',
    TyphaK8sServiceName: '',
    TyphaK8sNamespace: 'kube-system',
    TyphaReadTimeout: 30,
    TyphaCAFile: '',
    TyphaCertFile: '',
    TyphaKeyFile: '',
    TyphaCN: '',
    TyphaURISAN: '',
    ...over,
  };
}
