/**
 * Go's `fmt` number verbs that calicoctl's tables use, reproduced exactly: `%.5g` of a count and
 * `%.f` of a percentage (Go rounds the exact binary value, ties to even). Pure.
 */

/** `%.5g` of a non-negative integer (a number or bigint): `256`, `65536`, `1e+05`, `1.0486e+06`. */
export function goG5(n: number | bigint): string {
  const digits = (typeof n === 'bigint' ? n : BigInt(Math.round(n))).toString();
  if (digits.startsWith('-')) throw new RangeError('goG5 takes a non-negative integer');
  let exp = digits.length - 1;
  let sig = digits;
  if (digits.length > 5) {
    const head = BigInt(digits.slice(0, 5));
    const next = Number(digits[5]);
    const restZero = /^0*$/.test(digits.slice(6));
    const up = next > 5 || (next === 5 && (!restZero || head % 2n === 1n));
    sig = (up ? head + 1n : head).toString();
    if (sig.length > 5) {
      exp++;
      sig = sig.slice(0, 5);
    }
  }
  if (exp < 5) return digits;
  const mant = sig.replace(/0+$/, '');
  const frac = mant.slice(1);
  return `${mant[0]}${frac ? `.${frac}` : ''}e+${String(exp).padStart(2, '0')}`;
}

/** `%.f` of a non-negative float: nearest integer, exact halves to even. */
export function goRound0(x: number): string {
  const f = Math.floor(x);
  const d = x - f;
  const r = d > 0.5 ? f + 1 : d < 0.5 ? f : f % 2 === 0 ? f : f + 1;
  return String(r);
}
