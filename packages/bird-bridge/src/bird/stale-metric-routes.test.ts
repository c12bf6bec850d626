import { describe, expect, test } from 'vitest';
import { deleteArgs, kernelSettingsOf, staleMetricRoutes } from './stale-metric-routes.js';

describe('routes left under an earlier route priority', () => {
  test('the kernel protocol’s metric and family come from the main configuration', () => {
    const v4 =
      'router id 1.2.3.4;\nprotocol kernel {\n  learn;\n  metric 1024;        # x\n  ipv4 {\n    import all;\n  };\n}\n';
    expect(kernelSettingsOf(v4)).toEqual({ metric: 1024, family: 4 });
    const v6 =
      'protocol kernel {\n  metric 512;\n  ipv6 {\n    import all;\n  };\n}\nprotocol device {\n  metric 9;\n}\n';
    expect(kernelSettingsOf(v6)).toEqual({ metric: 512, family: 6 });
    expect(kernelSettingsOf('protocol kernel {\n  learn;\n}\n')).toBeUndefined();
  });

  test('an old-metric route goes only once the destination is routed at the current metric', () => {
    const rows = [
      { dst: '198.19.0.64/26', metric: 1024 },
      { dst: '198.19.0.64/26', metric: 2048 },
      { dst: '198.19.0.128/26', metric: 1024 },
      { dst: '198.19.0.0/26', type: 'blackhole', metric: 1024 },
      { dst: '198.19.0.0/26', type: 'blackhole', metric: 2048 },
    ];
    expect(staleMetricRoutes(rows, 2048)).toEqual([
      { dst: '198.19.0.64/26', metric: 1024 },
      { dst: '198.19.0.0/26', type: 'blackhole', metric: 1024 },
    ]);
    expect(staleMetricRoutes(rows.slice(2, 3), 2048)).toEqual([]);
  });

  test('the delete names type, destination, protocol and metric', () => {
    expect(deleteArgs({ dst: '198.19.0.0/26', type: 'blackhole', metric: 1024 }, 4)).toEqual([
      '-4',
      'route',
      'del',
      'blackhole',
      '198.19.0.0/26',
      'proto',
      'bird',
      'metric',
      '1024',
    ]);
    expect(deleteArgs({ dst: 'fd00:1::/122' }, 6)).toEqual([
      '-6',
      'route',
      'del',
      'fd00:1::/122',
      'proto',
      'bird',
      'metric',
      '0',
    ]);
  });
});
