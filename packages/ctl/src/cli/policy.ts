/**
 * `calicoctl policy explain`: its usage and run (the work: commands/policy-explain.ts). A read,
 * so it runs beside the cluster version check.
 */
import { type GroupCommand, leaf } from './command.js';
import type { ConnectionFlags } from './session.js';
import { connectionOptions } from './shared.js';

type Flags = ConnectionFlags & {
  from?: string;
  to?: string;
  fromIp?: string;
  toIp?: string;
  fromHep?: string;
  toHep?: string;
  port?: string;
  sourcePort?: string;
  protocol: string;
  output: string;
};

const explain = leaf<[], Flags>({
  name: 'explain',
  usage: {
    description:
      'Explain whether a connection would be allowed, and by which tier, policy, rule or profile, from the datastore alone.',
    options: [
      { flags: '--from <NAMESPACE/POD>', description: 'the source pod' },
      { flags: '--from-ip <IP>', description: 'the source address (an endpoint owning it is found)' },
      { flags: '--from-hep <HOSTENDPOINT>', description: 'the source host endpoint (its first expected IP)' },
      { flags: '--to <NAMESPACE/POD>', description: 'the destination pod' },
      { flags: '--to-ip <IP>', description: 'the destination address' },
      { flags: '--to-hep <HOSTENDPOINT>', description: 'the destination host endpoint' },
      { flags: '--port <PORT>', description: 'the destination port', required: true },
      { flags: '--protocol <PROTOCOL>', description: 'tcp or udp', default: 'tcp' },
      { flags: '--source-port <PORT>', description: 'the source port (default 32768)' },
      { flags: '-o, --output <OUTPUT>', description: 'text, yaml or json', default: 'text' },
      ...connectionOptions(),
    ],
    after:
      '\nThe verdict, then for the egress of the source and the ingress of the destination: the tiers,\npolicies and rules evaluated, the selectors tested, the end-of-tier or profile decision, and what\nthe staged policies would change. Connection tracking, failsafe ports and preDNAT/doNotTrack\npolicies are not taken into account.\n',
  },
  run: ({ opts }, session) =>
    session.withDatastore(
      opts,
      async (ds) => {
        const { policyExplainCommand } = await import('../commands/policy-explain.js');
        return policyExplainCommand(opts, ds, session.ctx());
      },
      { readOnly: true },
    ),
});

export const policy: GroupCommand = {
  name: 'policy',
  usage: { description: 'Inspect network policy.' },
  subcommands: [explain],
};
