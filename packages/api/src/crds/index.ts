/**
 * `@calico-ts/api/crds`: the CustomResourceDefinitions of the Kubernetes datastore
 * (`crd.projectcalico.org/v1`), generated from this package's schemas, and the structural-schema
 * tools behind them. `pnpm crds` writes them to deploy/crds/.
 */

export { CRD_EXAMPLE_NAMESPACE, type CrdObject, crdExamples, crdProbes } from './crd-examples.js';
export {
  CRD_API_VERSION,
  CRD_BUNDLE_FILE,
  CRD_FILE_HEADER,
  CRD_GROUP,
  CRD_KINDS,
  CRD_VERSION,
  type CrdFile,
  type CrdKind,
  type CustomResourceDefinition,
  crdFileName,
  crdManifests,
  renderCrdFiles,
} from './crd-manifests.js';
export {
  type Admission,
  admitObject,
  type SchemaProblem,
  type StructuralSchema,
  type StructuralType,
  toStructuralSchema,
} from './structural-schema.js';
