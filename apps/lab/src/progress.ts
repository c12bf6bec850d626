/** Progress lines with the time since the command started: `[  1.2s] message`. */
export class Progress {
  readonly #t0 = performance.now();
  readonly #write: (line: string) => void;

  constructor(write: (line: string) => void = (l) => process.stdout.write(`${l}\n`)) {
    this.#write = write;
  }

  get seconds(): number {
    return (performance.now() - this.#t0) / 1000;
  }

  step(message: string): void {
    this.#write(`[${this.seconds.toFixed(1).padStart(5)}s] ${message}`);
  }

  line(message: string): void {
    this.#write(message);
  }
}
