export declare const root: string;
export declare const deployDir: string;
export declare const chartDir: string;
export declare const crdsSource: string;
export declare const chartCrds: string;
export declare function helmVersion(): string;
export declare function findHelm(): string | undefined;
export interface Manifest {
  readonly file: string;
  readonly values: readonly string[];
  readonly title: string;
}
export declare const MANIFESTS: readonly Manifest[];
export declare function helmTemplate(
  helm: string,
  values?: readonly string[],
  extraArgs?: readonly string[],
): string;
export declare function renderManifest(helm: string, manifest: Manifest): string;
export declare const operatorChartDir: string;
export declare function operatorChartTemplate(
  helm: string,
  values?: readonly string[],
  extraArgs?: readonly string[],
): string;
