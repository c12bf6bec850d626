/**
 * VERSION: the spec versions this plugin speaks. Answers in the version the request carries
 * (1.1 runtimes send `{"cniVersion": …}`) when we speak it, else in the latest.
 */
import { isSupportedVersion, LATEST_VERSION, SUPPORTED_VERSIONS } from '../spec/versions.js';

export function versionResult(requested: string | undefined): Record<string, unknown> {
  return {
    cniVersion: isSupportedVersion(requested) ? requested : LATEST_VERSION,
    supportedVersions: [...SUPPORTED_VERSIONS],
  };
}
