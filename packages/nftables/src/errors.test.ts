import { describe, expect, it } from 'vitest';
import {
  classifyErrno,
  classifyNftError,
  failedCommandIndex,
  firstErrorLine,
  isNftablesError,
  NftablesError,
  nftErrorFromText,
} from './errors.js';

// Error buffers as libnftables 1.0.6 fills them on Linux 6.x (JSON input unless noted).
const CASES: [string, string][] = [
  ['internal:0:0-0: Error: Could not process rule: No such file or directory\n', 'not-found'],
  ['internal:0:0-0: Error: No such file or directory\n', 'not-found'],
  [
    'internal:0:0-0: Error: No such file or directory; did you mean map ‘dispatch’ in table ip ‘calico’?\n',
    'not-found',
  ],
  ['internal:0:0-0: Error: element does not exist\n', 'not-found'],
  ['Error: No such file or directory\nlist table ip nope\n              ^^^^\n', 'not-found'],
  ['internal:0:0-0: Error: Could not process rule: File exists\n', 'exists'],
  ['internal:0:0-0: Error: Could not process rule: Device or resource busy\n', 'invalid'],
  ['internal:0:0-0: Error: Could not process rule: Too many links\n', 'invalid'],
  ['internal:0:0-0: Error: Could not process rule: Operation not supported\n', 'invalid'],
  [
    "internal:0:0-0: Error: Unknown statement object 'bogus'.\n\ninternal:0:0-0: Error: Parsing expr array at index 0 failed.\n\ninternal:0:0-0: Error: Parsing command array at index 0 failed.\n",
    'invalid',
  ],
  ['internal:0:0-0: Error: Could not resolve hostname: Name or service not known\n', 'invalid'],
  [
    'internal:0:0-0: Error: Could not resolve hostname: Address family for hostname not supported\n',
    'invalid',
  ],
  [
    "internal:0:0-0: Error: You must add 'flags interval' to your set declaration if you want to add prefix elements\n",
    'invalid',
  ],
  ['internal:0:0-0: Error: Basetype of type internet network service is not bitmask\n', 'invalid'],
  // nft syntax, as `nft -f` prints it.
  [
    "/tmp/bad.nft:2:24-24: Error: syntax error, unexpected '}'\nadd chain ip x y { bad }\n                       ^\n",
    'invalid',
  ],
  ['internal:0:0-0: Error: Could not process rule: Operation not permitted\n', 'permission'],
  ['Error: cache initialization failed: Operation not permitted\n', 'permission'],
  ['internal:0:0-0: Error: Could not process rule: Protocol not supported\n', 'unavailable'],
  ['internal:0:0-0: Error: Could not process rule: Cannot allocate memory\n', 'failed'],
  ['', 'failed'],
];

describe('classifyNftError', () => {
  it.each(CASES)('%j → %s', (text, code) => {
    expect(classifyNftError(text)).toBe(code);
  });

  it('classifies by the first error when nft reports several', () => {
    const text =
      'internal:0:0-0: Error: Could not process rule: File exists\n\n' +
      'internal:0:0-0: Error: Could not process rule: No such file or directory\n';
    expect(classifyNftError(text)).toBe('exists');
  });
});

describe('firstErrorLine / failedCommandIndex', () => {
  it('strips the location and keeps what went wrong', () => {
    expect(firstErrorLine('internal:0:0-0: Error: Could not process rule: File exists\n')).toBe(
      'Could not process rule: File exists',
    );
    expect(firstErrorLine('something odd\n')).toBe('something odd');
  });

  it('reads the index of the command nft could not parse', () => {
    expect(failedCommandIndex('Error: Parsing command array at index 6 failed.\n')).toBe(6);
    expect(failedCommandIndex('Error: Could not process rule: File exists\n')).toBeUndefined();
  });
});

describe('nftErrorFromText', () => {
  it('keeps the raw text, the namespace and the failing command', () => {
    const text =
      "internal:0:0-0: Error: Unknown statement object 'bogus'.\n\n" +
      'internal:0:0-0: Error: Parsing command array at index 3 failed.\n';
    const e = nftErrorFromText(text, 'node1');
    expect(e).toBeInstanceOf(NftablesError);
    expect(e.code).toBe('invalid');
    expect(e.detail).toBe(text);
    expect(e.commandIndex).toBe(3);
    expect(e.netns).toBe('node1');
    expect(e.message).toBe(
      "nftables rejected the batch at command 3 (netns node1): Unknown statement object 'bogus'.",
    );
    expect(isNftablesError(e, 'invalid')).toBe(true);
    expect(isNftablesError(e, 'exists')).toBe(false);
    expect(isNftablesError(new Error('x'))).toBe(false);
  });

  it('says so when nft failed without a message', () => {
    expect(nftErrorFromText('').message).toBe(
      'nftables rejected the batch: nft reported a failure without a message',
    );
  });
});

describe('classifyErrno', () => {
  it.each([
    ['ENOENT', 'not-found'],
    ['EPERM', 'permission'],
    ['EACCES', 'permission'],
    ['EINVAL', 'invalid'],
    ['EMFILE', 'failed'],
    [undefined, 'failed'],
  ] as const)('%s → %s', (errno, code) => {
    expect(classifyErrno(errno)).toBe(code);
  });
});
