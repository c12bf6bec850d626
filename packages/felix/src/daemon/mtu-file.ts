/**
 * The pod MTU file (upstream writes /var/lib/calico/mtu for the CNI plugin to read): written only
 * when its content would change, through a temporary file and a rename so a reader never sees half
 * a number.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

export async function writeMtuFile(path: string, mtu: number): Promise<boolean> {
  const text = `${mtu}\n`;
  try {
    if ((await readFile(path, 'utf8')) === text) return false;
  } catch {
    // absent: write it
  }
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, path);
  return true;
}
