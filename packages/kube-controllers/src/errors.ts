/** kube-controllers' closed error vocabulary. */
export const KUBE_CONTROLLERS_ERROR_CODES = ['config', 'unsupported', 'datastore'] as const;
export type KubeControllersErrorCode = (typeof KUBE_CONTROLLERS_ERROR_CODES)[number];

export class KubeControllersError extends Error {
  readonly code: KubeControllersErrorCode;
  constructor(code: KubeControllersErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KubeControllersError';
    this.code = code;
  }
}
