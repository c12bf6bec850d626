import { describe, expect, it } from 'vitest';
import { lengthLimitedID, makeUniqueID } from './hash.js';

describe('makeUniqueID', () => {
  // Vectors from upstream felix/calc/rule_scanner_test.go (service IP set IDs use the same hash).
  it('matches upstream service IP set IDs', () => {
    expect(makeUniqueID('svc', 'default/svc')).toBe('svc:Jhwii46PCMT5NlhWsUqZmv7al8TeHFbNQMhoVg');
    expect(makeUniqueID('svcnoport', 'default/svc')).toBe('svcnoport:T03S_6hogdrGKrNFBcbKTFsH_uKwDHEo8JddOg');
  });

  it('is the prefix, a colon and 38 base64url characters', () => {
    expect(makeUniqueID('s', 'all()')).toMatch(/^s:[A-Za-z0-9_-]{38}$/);
  });
});

describe('lengthLimitedID', () => {
  // Vectors from upstream libcalico-go/lib/hash/unique_id_test.go.
  it('keeps a suffix that fits', () => {
    expect(lengthLimitedID('felix', '1234', 10)).toBe('felix1234');
    expect(lengthLimitedID('felix', '123456', 11)).toBe('felix123456');
  });
  it('hashes an exact fit that starts with the shortening mark', () => {
    expect(lengthLimitedID('felix', '_2345', 10)).toBe('felix_kMQI');
  });
  it('hashes a suffix that is too long', () => {
    expect(lengthLimitedID('felix', '12345678910', 13)).toBe('felix_Y2QCZIS');
  });
});
