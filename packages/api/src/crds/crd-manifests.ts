/**
 * The CustomResourceDefinitions of the Kubernetes datastore: group `crd.projectcalico.org`,
 * version `v1`, the same kinds, plurals and scopes as upstream's `libcalico-go/config/crd/`, so
 * objects upstream's components wrote are kept whole by ours and the reverse.
 *
 *   KINDS (kinds.ts) ─┐   zod spec/status ──toStructuralSchema──┐
 *   CRD_KINDS ────────┴─► one definition per kind ◄──────────────┴── go-type-schemas.ts (no zod)
 *                               │ crdManifests()
 *                               ▼
 *                renderCrdFiles() ──► deploy/crds/crd.projectcalico.org_<plural>.yaml,
 *                                     calico-crds.yaml (all of them), written by scripts/gen-crds.mjs
 *
 * Shape as upstream's: no status subresource (upstream's clients write `status` with the object, a
 * subresource would drop it), `metadata` an object the API server checks itself, `spec` and
 * `status` structural schemas. Pure calculation: the script does the writing.
 */
import { stringify } from 'yaml';
import * as z from 'zod';
import { KINDS } from '../kinds.js';
import { KIND_DEFINITIONS } from '../resources/registry.js';
import {
  blockAffinitySpecSchema,
  calicoNodeStatusSpecSchema,
  calicoNodeStatusStatusSchema,
  ipamBlockSpecSchema,
  ipamConfigSpecSchema,
  ipamHandleSpecSchema,
  ipPoolLegacySpecFields,
  ipPoolStatusSchema,
  stagedKubernetesNetworkPolicySpecSchema,
} from './go-type-schemas.js';
import { obj, type StructuralSchema, str, toStructuralSchema, withProperties } from './structural-schema.js';

export const CRD_GROUP = 'crd.projectcalico.org';
export const CRD_VERSION = 'v1';
export const CRD_API_VERSION = `${CRD_GROUP}/${CRD_VERSION}`;

/** One kind stored as a `crd.projectcalico.org/v1` custom resource. */
export interface CrdKind {
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

export interface CustomResourceDefinition {
  readonly apiVersion: 'apiextensions.k8s.io/v1';
  readonly kind: 'CustomResourceDefinition';
  readonly metadata: { readonly name: string };
  readonly spec: {
    readonly group: string;
    readonly names: {
      readonly kind: string;
      readonly listKind: string;
      readonly plural: string;
      readonly singular: string;
    };
    readonly preserveUnknownFields: false;
    readonly scope: 'Cluster' | 'Namespaced';
    readonly versions: readonly [
      {
        readonly name: string;
        readonly schema: { readonly openAPIV3Schema: StructuralSchema };
        readonly served: true;
        readonly storage: true;
      },
    ];
  };
}

interface CrdDefinition extends CrdKind {
  readonly spec: () => StructuralSchema;
  readonly status?: () => StructuralSchema;
}

/** A zod schema's CRD form; its JSON Schema is made with every reused schema inlined. */
function fromZod(schema: z.ZodType): StructuralSchema {
  const json = z.toJSONSchema(schema, { io: 'input', reused: 'inline', cycles: 'throw' });
  return toStructuralSchema(json as Record<string, unknown>);
}

const STAGED_ACTION = { stagedAction: str() };

/** A kind `@calico-ts/api` models: plural and scope from `KINDS`, schemas from the registry. */
function modelled(
  kind: keyof typeof KIND_DEFINITIONS & keyof typeof KINDS,
  override: Partial<Pick<CrdDefinition, 'spec' | 'status'>> = {},
): CrdDefinition {
  const info = KINDS[kind];
  const def = KIND_DEFINITIONS[kind];
  const status = def.status;
  return {
    kind,
    plural: info.plural,
    namespaced: info.namespaced,
    spec: override.spec ?? (() => fromZod(def.spec)),
    ...(override.status
      ? { status: override.status }
      : status
        ? { status: () => fromZod(status.schema) }
        : {}),
  };
}

/** A kind with no zod schema here: its schemas come from go-type-schemas.ts. */
function unmodelled(
  kind: string,
  plural: string,
  scope: 'Cluster' | 'Namespaced',
  spec: StructuralSchema,
  status?: StructuralSchema,
): CrdDefinition {
  return {
    kind,
    plural,
    namespaced: scope === 'Namespaced',
    spec: () => spec,
    ...(status ? { status: () => status } : {}),
  };
}

/** Every CRD, in the order of upstream's files (by plural). */
const CRD_DEFINITIONS: readonly CrdDefinition[] = [
  modelled('BGPConfiguration'),
  modelled('BGPFilter'),
  modelled('BGPPeer'),
  unmodelled('BlockAffinity', 'blockaffinities', 'Cluster', blockAffinitySpecSchema),
  unmodelled(
    'CalicoNodeStatus',
    'caliconodestatuses',
    'Cluster',
    calicoNodeStatusSpecSchema,
    calicoNodeStatusStatusSchema,
  ),
  modelled('ClusterInformation'),
  modelled('FelixConfiguration'),
  modelled('GlobalNetworkPolicy'),
  modelled('GlobalNetworkSet'),
  modelled('HostEndpoint'),
  unmodelled('IPAMBlock', 'ipamblocks', 'Cluster', ipamBlockSpecSchema),
  unmodelled('IPAMConfig', 'ipamconfigs', 'Cluster', ipamConfigSpecSchema),
  unmodelled('IPAMHandle', 'ipamhandles', 'Cluster', ipamHandleSpecSchema),
  modelled('IPPool', {
    spec: () => withProperties(fromZod(KIND_DEFINITIONS.IPPool.spec), ipPoolLegacySpecFields),
    status: () => ipPoolStatusSchema,
  }),
  modelled('IPReservation'),
  modelled('KubeControllersConfiguration'),
  modelled('NetworkPolicy'),
  modelled('NetworkSet'),
  {
    // The GlobalNetworkPolicy spec and the action to stage.
    kind: 'StagedGlobalNetworkPolicy',
    plural: 'stagedglobalnetworkpolicies',
    namespaced: false,
    spec: () => withProperties(fromZod(KIND_DEFINITIONS.GlobalNetworkPolicy.spec), STAGED_ACTION),
  },
  unmodelled(
    'StagedKubernetesNetworkPolicy',
    'stagedkubernetesnetworkpolicies',
    'Namespaced',
    stagedKubernetesNetworkPolicySpecSchema,
  ),
  {
    kind: 'StagedNetworkPolicy',
    plural: 'stagednetworkpolicies',
    namespaced: true,
    spec: () => withProperties(fromZod(KIND_DEFINITIONS.NetworkPolicy.spec), STAGED_ACTION),
  },
  modelled('Tier'),
];

/** The kinds stored as CRDs: kind, plural and scope of each, by plural. */
export const CRD_KINDS: readonly CrdKind[] = CRD_DEFINITIONS.map(({ kind, plural, namespaced }) => ({
  kind,
  plural,
  namespaced,
}));

function manifest(d: CrdDefinition): CustomResourceDefinition {
  const properties: Record<string, StructuralSchema> = {
    apiVersion: str(),
    kind: str(),
    metadata: { type: 'object' },
    spec: d.spec(),
  };
  if (d.status) properties.status = d.status();
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${d.plural}.${CRD_GROUP}` },
    spec: {
      group: CRD_GROUP,
      names: {
        kind: d.kind,
        listKind: `${d.kind}List`,
        plural: d.plural,
        singular: d.kind.toLowerCase(),
      },
      preserveUnknownFields: false,
      scope: d.namespaced ? 'Namespaced' : 'Cluster',
      versions: [
        {
          name: CRD_VERSION,
          schema: { openAPIV3Schema: obj(properties) },
          served: true,
          storage: true,
        },
      ],
    },
  };
}

/** Every CustomResourceDefinition of the Kubernetes datastore, by plural. */
export function crdManifests(): CustomResourceDefinition[] {
  return CRD_DEFINITIONS.map(manifest);
}

/** One generated file: a path relative to the CRD directory, and its text. */
export interface CrdFile {
  readonly path: string;
  readonly text: string;
}

export const CRD_FILE_HEADER =
  '# Generated from @calico-ts/api (packages/api/src/crds) by `pnpm crds`. Do not edit.\n';
/** Every CRD in one file, for `kubectl apply -f` of a single URL. */
export const CRD_BUNDLE_FILE = 'calico-crds.yaml';

/** The file name upstream uses for a CRD: `crd.projectcalico.org_ippools.yaml`. */
export function crdFileName(plural: string): string {
  return `${CRD_GROUP}_${plural}.yaml`;
}

function toYaml(value: unknown): string {
  // Keys sorted at every level, as controller-gen writes them; no folded lines, no YAML anchors.
  return stringify(value, { sortMapEntries: true, lineWidth: 0, aliasDuplicateObjects: false });
}

/**
 * The contents of `deploy/crds/`: one file per CRD, named as upstream names them, and the bundle
 * holding all of them. Byte for byte what is committed; a unit test regenerates and compares.
 */
export function renderCrdFiles(): CrdFile[] {
  const manifests = crdManifests();
  const files = manifests.map((m) => ({
    path: crdFileName(m.spec.names.plural),
    text: CRD_FILE_HEADER + toYaml(m),
  }));
  const bundle = CRD_FILE_HEADER + manifests.map((m) => `---\n${toYaml(m)}`).join('');
  return [...files, { path: CRD_BUNDLE_FILE, text: bundle }];
}
