/**
 * Everything `policy explain` reads, in one pass over the datastore: endpoints, profiles, tiers,
 * and every policy kind, enforced and staged. The Kubernetes datastore serves Kubernetes
 * NetworkPolicies as `knp.default.*` NetworkPolicies and namespaces and service accounts as
 * `kns.`/`ksa.` profiles (its conversion); etcd holds what was written.
 */
import type { Kind, ResourceOf } from '@calico-ts/api';
import type { PolicyWorld } from '@calico-ts/api/policy-eval';
import { type Datastore, isDatastoreError } from '@calico-ts/datastore';
import { CtlError } from '../errors.js';

async function listAll<K extends Kind>(ds: Datastore, kind: K): Promise<ResourceOf<K>[]> {
  try {
    return (await ds.list(kind)).items;
  } catch (e) {
    throw new CtlError('failed', `cannot list ${kind} resources: ${(e as Error).message}`, { cause: e });
  }
}

export async function readPolicyWorld(ds: Datastore): Promise<PolicyWorld> {
  const [
    workloadEndpoints,
    hostEndpoints,
    profiles,
    tiers,
    networkPolicies,
    globalNetworkPolicies,
    stagedNetworkPolicies,
    stagedGlobalNetworkPolicies,
    stagedKubernetesNetworkPolicies,
  ] = await Promise.all([
    listAll(ds, 'WorkloadEndpoint'),
    listAll(ds, 'HostEndpoint'),
    listAll(ds, 'Profile'),
    listAll(ds, 'Tier'),
    listAll(ds, 'NetworkPolicy'),
    listAll(ds, 'GlobalNetworkPolicy'),
    listAll(ds, 'StagedNetworkPolicy'),
    listAll(ds, 'StagedGlobalNetworkPolicy'),
    listAll(ds, 'StagedKubernetesNetworkPolicy'),
  ]);
  // Profiles an endpoint names that a list does not return (the built-in
  // projectcalico-default-allow is only served by name).
  const known = new Set(profiles.map((p) => p.metadata.name));
  const named = new Set([...workloadEndpoints, ...hostEndpoints].flatMap((e) => e.spec.profiles ?? []));
  for (const name of named) {
    if (known.has(name)) continue;
    try {
      profiles.push(await ds.get('Profile', name));
    } catch (e) {
      if (!isDatastoreError(e, 'not-found')) {
        throw new CtlError('failed', `cannot get Profile ${name}: ${(e as Error).message}`, { cause: e });
      }
    }
  }
  return {
    workloadEndpoints,
    hostEndpoints,
    profiles,
    tiers,
    networkPolicies,
    globalNetworkPolicies,
    stagedNetworkPolicies,
    stagedGlobalNetworkPolicies,
    stagedKubernetesNetworkPolicies,
  };
}
