import { describe, expect, it } from 'vitest';
import { parseArgs } from './flags.js';

describe('parseArgs', () => {
  it('reads upstream calico-apiserver’s command line', () => {
    expect(
      parseArgs([
        '--secure-port=5443',
        '--tls-cert-file=/calico-apiserver-certs/tls.crt',
        '--tls-private-key-file',
        '/calico-apiserver-certs/tls.key',
        '-v=5',
      ]),
    ).toEqual({
      kind: 'run',
      flags: {
        securePort: 5443,
        bindAddress: '0.0.0.0',
        tlsCertFile: '/calico-apiserver-certs/tls.crt',
        tlsKeyFile: '/calico-apiserver-certs/tls.key',
      },
    });
    expect(
      parseArgs(['--tls-cert-file=a', '--tls-private-key-file=b', '--bind-address=::', '--kubeconfig=/k']),
    ).toMatchObject({
      flags: { securePort: 5443, bindAddress: '::', kubeconfig: '/k' },
    });
    expect(parseArgs(['--version'])).toEqual({ kind: 'version' });
  });

  it('refuses an unknown flag, a bad port, a missing certificate, naming each', () => {
    expect(() => parseArgs(['--tls-cert-file=a', '--tls-private-key-file=b', '--audit-log-path=x'])).toThrow(
      'unknown flag --audit-log-path',
    );
    expect(() => parseArgs(['--secure-port=99999', '--tls-cert-file=a', '--tls-private-key-file=b'])).toThrow(
      '--secure-port must be a port number (0-65535), got "99999"',
    );
    expect(() => parseArgs(['--tls-private-key-file=b'])).toThrow('--tls-cert-file is required');
    expect(() => parseArgs(['--kubeconfig'])).toThrow('--kubeconfig needs a value');
  });
});
