/** The version every image is tagged with. */
export const VERSION: string;
export const REPOSITORY: string;
/** The repository root. */
export const ROOT: string;
export type ImageName = 'node' | 'cni' | 'kube-controllers' | 'typha' | 'operator' | 'apiserver' | 'ctl';
export const IMAGES: Readonly<
  Record<
    ImageName,
    {
      readonly description: string;
      readonly needs: readonly string[];
      readonly entrypoint: readonly string[];
    }
  >
>;
export type WorkloadImageName = 'pause' | 'httpd';
/** The lab cluster's workload images, from scratch with static busybox. */
export const WORKLOAD_IMAGES: Readonly<
  Record<
    WorkloadImageName,
    {
      readonly description: string;
      readonly applets: readonly string[];
      readonly cmd: readonly string[];
      readonly entry?: readonly string[];
      readonly programs?: readonly string[];
    }
  >
>;
/** `calico-ts/<name>:<version>`, as the images are tagged in local container storage. */
export function imageRef(name: ImageName | WorkloadImageName | 'base'): string;
/** Where `pnpm images` leaves the image as an OCI archive. */
export function archivePath(name: ImageName | WorkloadImageName): string;
