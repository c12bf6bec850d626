import { describe, expect, it } from 'vitest';
import { goldmaneConfigFromEnv } from './config.js';

const TLS = { SERVER_CERT_PATH: '/c/tls.crt', SERVER_KEY_PATH: '/c/tls.key', CA_CERT_PATH: '/c/ca.crt' };

describe('goldmaneConfigFromEnv', () => {
  it("takes upstream's names and defaults", () => {
    expect(goldmaneConfigFromEnv(TLS)).toMatchObject({
      port: 443,
      host: '0.0.0.0',
      aggregationWindowSeconds: 15,
      retentionSeconds: 3600,
      maxFlows: 100_000,
      healthEnabled: true,
      healthPort: 8080,
      prometheusPort: 0,
      plaintext: false,
      caCertPath: '/c/ca.crt',
    });
    expect(
      goldmaneConfigFromEnv({
        ...TLS,
        PORT: '7443',
        AGGREGATION_WINDOW: '30s',
        RETENTION: '2h',
        MAX_FLOWS: '500',
      }),
    ).toMatchObject({ port: 7443, aggregationWindowSeconds: 30, retentionSeconds: 7200, maxFlows: 500 });
  });

  it('refuses to serve without mTLS unless plaintext is asked for on loopback', () => {
    expect(() => goldmaneConfigFromEnv({})).toThrow(
      /^SERVER_CERT_PATH, SERVER_KEY_PATH, CA_CERT_PATH: required/,
    );
    expect(() => goldmaneConfigFromEnv({ ...TLS, CA_CERT_PATH: '' })).toThrow(/^CA_CERT_PATH: required/);
    expect(() => goldmaneConfigFromEnv({ INSECURE_PLAINTEXT: 'true' })).toThrow(/only on a loopback HOST/);
    expect(() => goldmaneConfigFromEnv({ ...TLS, INSECURE_PLAINTEXT: 'true', HOST: '127.0.0.1' })).toThrow(
      /cannot be used with SERVER_CERT_PATH/,
    );
    expect(goldmaneConfigFromEnv({ INSECURE_PLAINTEXT: 'true', HOST: '::1' }).plaintext).toBe(true);
  });

  it('names the variable with a bad value', () => {
    expect(() => goldmaneConfigFromEnv({ ...TLS, PORT: '70000' })).toThrow(/^PORT: "70000"/);
    expect(() => goldmaneConfigFromEnv({ ...TLS, AGGREGATION_WINDOW: '15' })).toThrow(
      /^AGGREGATION_WINDOW: /,
    );
    expect(() => goldmaneConfigFromEnv({ ...TLS, RETENTION: '100s' })).toThrow(
      /^RETENTION: 100s is not a multiple/,
    );
    expect(() => goldmaneConfigFromEnv({ ...TLS, MAX_FLOWS: '0' })).toThrow(/^MAX_FLOWS: /);
    expect(() => goldmaneConfigFromEnv({ ...TLS, HEALTH_ENABLED: 'maybe' })).toThrow(/^HEALTH_ENABLED: /);
  });
});
