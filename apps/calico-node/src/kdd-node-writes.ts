/**
 * Node writes on the Kubernetes datastore, without the Node's derived `spec.addresses`.
 *
 * Why: in the Kubernetes datastore a Calico Node's `spec.addresses` are derived when it is read (a
 * `CalicoNodeIP` entry from the BGP address, `198.18.0.11/24` as upstream has it, and the Kubernetes
 * Node's InternalIP/ExternalIP) and a write ignores them: only the Calico annotations are merged into
 * the Node. But @calico-ts/api's Node schema refuses an address with host bits set, so writing back
 * a Node as it was read (calico-node's VXLAN tunnel address, a restart that updates the Node) fails
 * validation and calico-node cannot start. Leaving the derived field out of the write changes
 * nothing that is stored. A stopgap: remove it once the schema accepts host bits in Node addresses,
 * as upstream's `net` validator does.
 *
 * On etcd (and memory) the datastore is returned as it is.
 */
import type { Datastore } from '@calico-ts/datastore';

type Written<D extends Datastore> = Parameters<D['update']>[0];

function withoutAddresses<R extends Written<Datastore>>(resource: R): R {
  if (resource.kind !== 'Node') return resource;
  const spec = (resource as { spec?: Record<string, unknown> }).spec;
  if (!spec || !('addresses' in spec)) return resource;
  const { addresses: _derived, ...rest } = spec;
  return { ...resource, spec: rest } as R;
}

export function withKubeNodeWrites(ds: Datastore): Datastore {
  if (ds.backend !== 'kubernetes') return ds;
  return {
    backend: ds.backend,
    get: (kind, name, opts) => ds.get(kind, name, opts),
    list: (kind, opts) => ds.list(kind, opts),
    create: (resource) => ds.create(withoutAddresses(resource)),
    update: (resource) => ds.update(withoutAddresses(resource)),
    apply: (resource) => ds.apply(withoutAddresses(resource)),
    delete: (kind, name, opts) => ds.delete(kind, name, opts),
    watch: (kind, opts) => ds.watch(kind, opts),
    close: () => ds.close(),
  };
}
