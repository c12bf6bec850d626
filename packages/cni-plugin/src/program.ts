/** Which of the two plugins an executable is: the name it was run as decides. */
export type Program = 'calico' | 'calico-ipam';

/** `calico-ipam` when the executable's name says so (`calico-ipam`, `calico-ipam.exe`), else `calico`. */
export function programFromPath(argv1: string | undefined): Program {
  const base = (argv1 ?? '').split('/').pop() ?? '';
  return base.startsWith('calico-ipam') ? 'calico-ipam' : 'calico';
}
